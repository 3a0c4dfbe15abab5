"""The one check of every path a command writes (predict, generate, evaluate, convert): never one of its inputs, never
inside a run folder or a data folder it reads, never an existing file unless `--overwrite` says so. Run before
anything is read or written, so a refused command changes nothing; files are written whole or not at all
(`atomic_output`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


class OutputRefused(ValueError):
    """An output path a command may not write; the message names the flag, the path and why."""


def _is_run_folder(folder: Path) -> bool:
    from fastformer.engine.folder import COMPLETE, MARKER

    return (folder / MARKER).is_file() or (folder / COMPLETE).is_file()


def check_output(
    path: str | Path,
    *,
    flag: str = "--output",
    inputs: tuple[str | Path | None, ...] = (),
    folders: tuple[str | Path | None, ...] = (),
    overwrite: bool = False,
    allowed_inside: tuple[str | Path, ...] = (),
) -> Path:
    """`path` if a command may write it, else OutputRefused naming why: it is one of `inputs` (files read), lies inside
    one of `folders` (a model or data folder read) or inside any run folder (unless it is one of `allowed_inside`,
    a file the command itself owns there), its folder does not exist, it is a symbolic link, or it exists and
    `overwrite` is False."""
    target = Path(path)
    if target.is_symlink():  # (its target would be written, wherever it points)
        raise OutputRefused(
            f"{flag} {target}: is a symbolic link; name a real file (nothing is written through a link)"
        )
    resolved = target.resolve()
    for given in inputs:
        if given and resolved == Path(given).resolve():
            raise OutputRefused(f"{flag} {target}: is an input of this command ({given}); choose another file")
    if resolved not in {Path(p).resolve() for p in allowed_inside}:
        _refuse_inside(target, flag, folders)
    if target.is_dir():
        raise OutputRefused(f"{flag} {target}: is a folder")
    if not target.parent.is_dir():
        raise OutputRefused(f"{flag} {target}: its folder {target.parent} does not exist")
    if target.exists() and not overwrite:
        raise OutputRefused(f"{flag} {target}: exists; pass --overwrite to replace it")
    return target


def _refuse_inside(target: Path, flag: str, folders: tuple[str | Path | None, ...]) -> None:
    """OutputRefused when `target` is, or lies inside, one of `folders` or any run folder."""
    resolved = target.resolve()
    read = {Path(f).resolve() for f in folders if f}
    for folder in [*read, *resolved.parents]:
        if folder.is_dir() and (resolved == folder or folder in resolved.parents):
            if folder in read or _is_run_folder(folder):
                raise OutputRefused(
                    f"{flag} {target}: inside {folder}, which this command reads or a run wrote; write elsewhere"
                )


def check_output_folder(path: str | Path, *, flag: str, folders: tuple[str | Path | None, ...] = ()) -> Path:
    """A folder a command writes its files into (made if missing): never one it reads or inside a run folder, never
    a file, never a folder that holds something."""
    target = Path(path)
    if target.is_symlink():
        raise OutputRefused(
            f"{flag} {target}: is a symbolic link; name a real folder (nothing is written through a link)"
        )
    _refuse_inside(target, flag, folders)
    if target.exists() and not target.is_dir():
        raise OutputRefused(f"{flag} {target}: is a file")
    if target.is_dir() and any(target.iterdir()):
        raise OutputRefused(f"{flag} {target}: not empty; write into a new folder")
    return target


@contextlib.contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A staging folder beside `target` (an empty or missing folder, as `check_output_folder` lets through), renamed
    onto it when the block ends without an error and removed when it does not: a failed command (a full disk, an
    error half-way) leaves no `target` at all, never a half-written one that looks complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would make the folder private
        yield staging
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator:
    """A text file opened for writing beside `path`, moved onto it only when the block ends without an error: a
    failed or killed command leaves the previous file (or none) in place."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        with partial.open("w", encoding="utf-8") as f:
            yield f
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
