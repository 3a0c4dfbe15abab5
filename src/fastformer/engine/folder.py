"""The folder a run owns, handled so that no file is ever lost and no folder mixes two runs.

- Ownership: a run makes its folder and marks it (`.fastformer-run`). It refuses a non-empty folder it did not make
  unless `overwrite` (then it takes the folder over, touching only the files runs write), and never deletes a file
  it did not write: the previous run's files are known from its manifest (`run_complete.json`), checkpoints from the
  fingerprint file each one carries.
- A lock (`.lock`, an OS file lock held for the whole run) keeps a second run out of a folder in use.
- Fingerprint: each checkpoint carries the settings that shape the weights (`fingerprint.json`); `resume` refuses a
  checkpoint trained with other settings and names them.
- The final save is atomic as a whole: when the run begins (after every check that can refuse) the previous run's
  final files and its completion marker are removed (so no old model sits beside a new run_config.json); at the end
  every file is written to a staging folder, moved into place with the model weights last, and `run_complete.json`
  (the manifest: files, task, fingerprint) is written after all of them. A folder without `run_complete.json` is
  incomplete, and says so in `RUN_INCOMPLETE`.
Imports the stdlib only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from fastformer.engine.settings import changed_settings, settings_hash

MARKER = ".fastformer-run"
LOCK = ".lock"
COMPLETE = "run_complete.json"
INCOMPLETE = "RUN_INCOMPLETE"
STAGING = ".fastformer-staging"
CHECKPOINTS = "checkpoints"
FINGERPRINT = "fingerprint.json"  # inside each checkpoint-N folder
TOKENIZER_STAMP = ".fastformer-tokenizer"  # marks OUTPUT/tokenizer as written by a run
WEIGHTS_SUFFIXES = (".safetensors", ".safetensors.index.json", ".bin")  # a model's (or a baseline's) weights
FINISHING = ".fastformer-finishing.json"  # the files `finish` is moving into place; gone once the manifest is written
OWN = {MARKER, LOCK, COMPLETE, INCOMPLETE, STAGING, FINISHING}
# what the Trainer writes into a checkpoint folder: removed from a checkpoint killed before its file list was recorded
TRAINER_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "optimizer.pt",
    "scheduler.pt",
    "scaler.pt",
    "trainer_state.json",
    "training_args.bin",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "added_tokens.json",
    FINGERPRINT,
)


# What a model or run folder carries for people to read, not for a run to load: editing one (a model card's prose, a
# plot, a report) must not stop `--resume` of a run that reads the folder (--init-from, --teacher, a data folder).
FOR_PEOPLE = {
    "LICENSE",
    "NOTICE",
    "metrics.json",
    "log_history.json",
    COMPLETE,
    INCOMPLETE,
    "conversion.json",
    "distillation_metrics.json",
}
FOR_PEOPLE_SUFFIXES = (".md", ".png", ".svg", ".pdf")


def folder_inputs(folder: Path) -> list[Path]:
    """The files under `folder` that a run reading it may load, sorted: all but hidden files (a run's lock and
    marker), the reports and documents of FOR_PEOPLE and a run folder's checkpoints (its model is its top-level
    files)."""
    found = []
    for path in folder.rglob("*"):
        parts = path.relative_to(folder).parts
        if (
            path.is_file()
            and not any(part.startswith(".") for part in parts)
            and parts[0] != CHECKPOINTS
            and path.name not in FOR_PEOPLE
            and not path.name.endswith(FOR_PEOPLE_SUFFIXES)
            and not (path.name.startswith("predictions_") and path.name.endswith(".jsonl"))
        ):
            found.append(path)
    return sorted(found)


def data_digests(cfg) -> dict[str, str]:
    """{path: sha256 of its bytes} for every data file a run's settings name (a folder: each file in it that a run
    may load, `folder_inputs`): what a checkpoint records, so that `--resume` notices data changed under the same
    path."""
    digests: dict[str, str] = {}
    for f in dataclasses.fields(cfg):
        value, kind = getattr(cfg, f.name), f.metadata.get("paths")
        if not kind or not f.metadata.get("shapes_weights", True) or value is None:
            continue
        for part in value if isinstance(value, list) else str(value).split(","):
            path = Path(str(part).strip())
            files = folder_inputs(path) if path.is_dir() else [path]
            for file in files:
                if file.is_file():
                    with open(file, "rb") as handle:
                        digests[str(file)] = hashlib.file_digest(handle, "sha256").hexdigest()
    return digests


def is_weights(name: str) -> bool:
    """Whether a file of a run folder holds weights (moved last, so a folder with weights is a finished one)."""
    return name.endswith(WEIGHTS_SUFFIXES)


def remove_written(folder: Path, written: list[str] | None) -> bool:
    """Remove the files a run wrote in `folder` (`written`, names relative to it; None: the Trainer's checkpoint
    files), then the folder if nothing else is left. A file no run wrote (the user's) is kept with its folder, and
    named on standard error. True when the folder is gone."""
    if not folder.is_dir():
        return True
    if written is None:
        written = [p.name for p in folder.iterdir() if p.name in TRAINER_FILES or p.name.startswith("rng_state")]
    for name in written:
        target = folder / name
        if target.is_file() or target.is_symlink():
            target.unlink()
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(sub.iterdir()):
            sub.rmdir()  # empty folders the run's files lived in
    left = files_in(folder)
    if left:
        print(
            f"{folder}: kept, it holds files no run wrote ({', '.join(left[:5])}{' ...' if len(left) > 5 else ''})",
            file=sys.stderr,
        )
        return False
    folder.rmdir()
    return True


def write_atomically(path: Path, text: str) -> None:
    """`path` holds `text` whole or is as it was: written beside it, then renamed onto it."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text)
    os.replace(partial, path)


def files_in(folder: Path) -> list[str]:
    """Every file under `folder`, relative to it (what a run records as having written there)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


class RunFolderError(RuntimeError):
    """The folder cannot be used as asked (not ours, in use, or a checkpoint of other settings)."""


def json_problem(path: Path) -> str | None:
    """Why a JSON file cannot be read, or None."""
    try:
        json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return f"not valid JSON ({error})"
    return None


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file's header cannot be read (truncated, garbage), or None."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            f.keys()
    except Exception as error:  # SafetensorError and OSError: a damaged file, whatever the damage
        return str(error).splitlines()[0]
    return None


def weight_files(folder: Path) -> list[Path]:
    """The .safetensors files of a model folder: model.safetensors, or the shards its index names (a checkpoint
    over `save_pretrained`'s max_shard_size); [] when it has neither (or an index that cannot be read)."""
    weights = folder / "model.safetensors"
    if weights.is_file():
        return [weights]
    index = folder / "model.safetensors.index.json"
    try:
        shards = json.loads(index.read_text())["weight_map"].values()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return [folder / name for name in sorted(set(shards))]


def model_files_problem(folder: Path) -> str | None:
    """What is wrong with a model folder's files, in one line naming the file, or None: config.json that is not JSON,
    config.json without weights, a weights file whose header cannot be read (truncated, garbage); in a sharded
    folder, an index that is not JSON or has no weight_map, and a shard it names that is missing or damaged."""
    config = folder / "config.json"
    if config.is_file() and (why := json_problem(config)):
        return f"{config}: damaged, {why}"
    index = folder / "model.safetensors.index.json"
    sharded = not (folder / "model.safetensors").is_file() and index.is_file()
    if sharded and (why := json_problem(index)):
        return f"{index}: damaged, {why}"
    files = weight_files(folder)
    if sharded and not files:
        return f"{index}: damaged, no weight_map naming the shards"
    for weights in files:
        if not weights.is_file():
            return f"{weights}: missing (named by {index.name})"
        if why := safetensors_problem(weights):
            return f"{weights}: damaged ({why})"
    if config.is_file() and not files:
        return f"{folder}: config.json but no model.safetensors (the weights are missing)"
    return None


def refuse_links(folder: Path) -> None:
    """A run writes nothing through a symbolic link: the folder itself, an entry in it, or one in its checkpoints /
    tokenizer folders being a link is RunFolderError naming it, before anything is opened (a `.lock` link's target
    was overwritten with "pid N" even when the run was then refused)."""
    if folder.is_symlink():
        raise RunFolderError(
            f"{folder}: is a symbolic link; give the folder itself as --output-dir (a run writes nothing through links)"
        )
    if not folder.is_dir():
        return
    for parent in (folder, folder / CHECKPOINTS, folder / "tokenizer"):
        if parent.is_dir() and not parent.is_symlink():
            for entry in parent.iterdir():
                if entry.is_symlink():
                    raise RunFolderError(
                        f"{entry}: is a symbolic link inside the run folder; a run writes nothing through a link "
                        "(remove it, or choose another --output-dir); nothing was changed"
                    )
        elif parent.is_symlink():
            raise RunFolderError(f"{parent}: is a symbolic link inside the run folder; remove it; nothing was changed")


def check_checkpoint_files(checkpoint: Path) -> None:
    """Every file the Trainer reads back on a resume is whole, else RunFolderError naming it, raised before the run
    folder changes (the Trainer reads them only after `begin`, and a damaged one then left a complete run
    incomplete). torch's .pt / .pth files are zip archives: each member's CRC is checked, nothing is unpickled."""
    for path in sorted(checkpoint.iterdir()):
        why = None
        if path.suffix in (".pt", ".pth", ".bin"):
            try:
                with zipfile.ZipFile(path) as archive:
                    bad = archive.testzip()
                why = f"member {bad} fails its checksum" if bad else None
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                why = str(error) or type(error).__name__
        elif path.suffix == ".json":
            why = json_problem(path)
        elif path.suffix == ".safetensors":
            why = safetensors_problem(path)
        if why:
            raise RunFolderError(
                f"{path}: damaged ({why}); --resume cannot continue from {checkpoint.name} (remove that checkpoint "
                "to resume from an earlier one, or start anew with --overwrite); nothing was changed"
            )


class RunFolder:
    """`with RunFolder(path, task, settings, ...) as run:` holds the folder for one run (main process)."""

    def __init__(
        self,
        path: str | Path,
        task: str,
        settings: dict[str, Any],
        *,
        overwrite: bool = False,
        resume: bool = False,
        main_process: bool = True,
        data: dict[str, str] | None = None,
    ):
        self.path = Path(path)
        self.task, self.settings = task, settings
        self.data = data or {}  # {path: sha256} of the data files: a checkpoint records them, --resume compares
        self.fingerprint = settings_hash(settings)
        self.overwrite, self.resume, self.main = overwrite, resume, main_process
        self._lock = None
        self._begun = False
        self._staging_fresh = False
        self._made: list[Path] = []  # what opening the folder created: removed again when the run ends before begin()

    # ---- opening ----------------------------------------------------------------------------------------------------

    def __enter__(self) -> RunFolder:
        if not self.main:
            self.path.mkdir(parents=True, exist_ok=True)
            return self
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(f"{self.path}: exists and is not a folder; choose another --output-dir")
        refuse_links(self.path)
        had_lock, had_marker = (self.path / LOCK).exists(), (self.path / MARKER).exists()
        # the folders mkdir(parents=True) makes, deepest first (none when the folder exists): a refused
        # `--output-dir runs/x` leaves no empty runs/
        absent = [p for p in (self.path, *self.path.parents) if not p.exists()]
        if self.path.is_dir():  # a run in progress is named as such, before any other objection
            self._acquire_lock()
        try:
            self._check_ownership()
            self.path.mkdir(parents=True, exist_ok=True)
            if self._lock is None:
                self._acquire_lock()
            self._made = [
                p for p, there in ((self.path / MARKER, had_marker), (self.path / LOCK, had_lock)) if not there
            ]
            self._made.extend(absent)
            if not had_marker:
                (self.path / MARKER).write_text(json.dumps(dict(task=self.task, made=time.time()), indent=1))
        except BaseException:
            self._release_lock()
            if not (self.path / MARKER).is_file():  # refused a folder that is not ours: leave no lock file in it
                (self.path / LOCK).unlink(missing_ok=True)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.main:
            shutil.rmtree(self.path / STAGING, ignore_errors=True)
            self._release_lock()
            if not self._begun:  # refused or failed before the run began (its data, its settings): leave no trace
                for made in self._made:
                    if made.is_dir():
                        with contextlib.suppress(OSError):  # a parent another run (a sweep's next) wrote into since
                            made.rmdir()
                    else:
                        made.unlink(missing_ok=True)

    def _check_ownership(self) -> None:
        if not self.path.exists():  # with resume too: a sweep restarted with --resume begins the runs not yet begun
            return
        if not self.path.is_dir():
            raise RunFolderError(f"{self.path}: exists and is not a folder")
        contents = [p.name for p in self.path.iterdir() if p.name not in (LOCK,)]
        ours = (self.path / MARKER).is_file()
        if not contents:
            return
        # (an empty one holds nothing to lose: a folder made by an earlier version killed at that instant)
        foreign = [
            p.name
            for p in self.checkpoints(complete_only=False)
            if not (p / FINGERPRINT).is_file() and any(p.iterdir())
        ]
        if foreign:  # the Trainer's checkpoint rotation would delete them: refuse instead
            raise RunFolderError(
                f"{self.path / CHECKPOINTS}: holds checkpoint folders no run of this version wrote "
                f"({', '.join(foreign)}); move them away or choose another --output-dir"
            )
        tokenizer = self.path / "tokenizer"
        if tokenizer.exists() and not (tokenizer / TOKENIZER_STAMP).is_file():
            raise RunFolderError(
                f"{tokenizer}: a folder no run wrote (the run keeps its tokenizer there); move it away"
            )
        if not ours:
            if self.resume:
                raise RunFolderError(f"{self.path}: not a run folder (no {MARKER}); nothing to resume")
            if not self.overwrite:
                raise RunFolderError(
                    f"{self.path}: not empty and not made by a fastformer run ({len(contents)} entries); choose "
                    "another --output-dir, or pass --overwrite to use it (only files runs write are replaced)"
                )
            return
        previous = self.manifest()
        if previous and previous.get("task") not in (None, self.task):
            if not self.overwrite:
                raise RunFolderError(
                    f"{self.path}: holds a {previous['task']} run; --overwrite replaces it with a {self.task} run"
                )
        if not previous and not self.checkpoints():
            return  # a run that failed before its first checkpoint: nothing in it to protect, begin() clears it
        if not (self.resume or self.overwrite):
            state = "a complete run" if previous else "an incomplete run"
            raise RunFolderError(
                f"{self.path}: holds {state}; pass --resume to continue it or --overwrite to replace it"
            )

    def _acquire_lock(self) -> None:
        handle = open(self.path / LOCK, "a+")  # noqa: SIM115  (held until the run ends)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunFolderError(
                f"{self.path}: in use by another run ({holder}); wait for it or choose another --output-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self._lock = handle

    def _release_lock(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def begin(self) -> None:
        """Called once everything that can refuse has run (the data read, the tokenizer made, the model built and its
        data prepared: engine/skeleton.py), so a refused start leaves the previous run whole:
        mark the folder incomplete and remove the previous run's final files (the weights first), so that from
        here until `finish` nothing in it loads as a model. A fresh run also removes its own earlier checkpoints."""
        self._begun = True
        previous = self.manifest()
        if previous is None:  # a run killed while its final files were moved in: those files, listed before moving
            try:
                previous = json.loads((self.path / FINISHING).read_text())
            except (OSError, json.JSONDecodeError):
                previous = None
        (self.path / COMPLETE).unlink(missing_ok=True)
        (self.path / INCOMPLETE).write_text(
            f"A {self.task} run started here at {time.strftime('%Y-%m-%d %H:%M:%S')} and has not finished; "
            "run_complete.json appears when it has.\n"
        )
        if previous:
            files = sorted(previous.get("files", []), key=lambda name: not is_weights(name))
            for name in files:
                target = self.path / name
                if target.is_file() and name not in OWN:
                    target.unlink()
            for name in previous.get("folders", []):
                shutil.rmtree(self.path / name, ignore_errors=True)
        if not self.resume:
            for checkpoint in self.checkpoints(complete_only=False):
                if (checkpoint / FINGERPRINT).is_file():  # written by a run, so ours to remove (not a user's file)
                    remove_written(checkpoint, self.checkpoint_files(checkpoint))

    # ---- during the run ---------------------------------------------------------------------------------------------

    @property
    def staging(self) -> Path:
        """A fresh folder for the final files (moved into place by `finish`); may be asked for before `begin`."""
        folder = self.path / STAGING
        if not self._staging_fresh:  # a killed run's leftovers are not this run's files
            shutil.rmtree(folder, ignore_errors=True)
            self._staging_fresh = True
        folder.mkdir(exist_ok=True)
        return folder

    def manifest(self) -> dict[str, Any] | None:
        path = self.path / COMPLETE
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            return None

    def checkpoints(self, complete_only: bool = True) -> list[Path]:
        """checkpoint-N folders by step; complete ones have trainer_state.json (the Trainer writes it last)."""
        folder = self.path / CHECKPOINTS
        if not folder.is_dir():
            return []
        found = []
        for path in folder.glob("checkpoint-*"):
            step = checkpoint_step(path)
            if step is not None and (not complete_only or (path / "trainer_state.json").is_file()):
                found.append((step, path))
        return [p for _, p in sorted(found)]

    def write_fingerprint(self, checkpoint: Path) -> None:
        """Stamp a checkpoint folder as this run's (before the Trainer writes into it, so a checkpoint killed while
        being written is still known as ours)."""
        text = json.dumps(
            dict(fingerprint=self.fingerprint, settings=self.settings, data=self.data), indent=1, default=str
        )
        if checkpoint.is_dir():
            write_atomically(checkpoint / FINGERPRINT, text)
            return
        # the folder appears with its fingerprint already inside: a kill at any instant never leaves a checkpoint
        # folder that no run seems to have written (which would block --resume)
        staged = checkpoint.parent / f".{checkpoint.name}.partial"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir(parents=True)
        (staged / FINGERPRINT).write_text(text)
        os.replace(staged, checkpoint)

    def record_checkpoint_files(self, checkpoint: Path, seconds: float | None = None) -> None:
        """Once the Trainer has saved a checkpoint: its files go into its fingerprint, so that removing it later
        removes exactly those, with the run's training seconds so far (every process's: a resumed run reports its
        whole time, `checkpoint_seconds`)."""
        stamp = checkpoint / FINGERPRINT
        if stamp.is_file():
            saved = json.loads(stamp.read_text())
            saved["files"] = files_in(checkpoint)
            if seconds is not None:
                saved["seconds"] = round(seconds, 2)
            write_atomically(stamp, json.dumps(saved, indent=1, default=str))

    @staticmethod
    def checkpoint_seconds(checkpoint: Path) -> float | None:
        """The run's training seconds up to this checkpoint, over every process (None when it was written without
        them, by an older version or killed before it recorded its files)."""
        try:
            return json.loads((checkpoint / FINGERPRINT).read_text()).get("seconds")
        except (OSError, json.JSONDecodeError):
            return None

    @staticmethod
    def checkpoint_files(checkpoint: Path) -> list[str] | None:
        """The files a run recorded writing into a checkpoint (None when it was killed before recording them)."""
        try:
            return json.loads((checkpoint / FINGERPRINT).read_text()).get("files")
        except (OSError, json.JSONDecodeError):
            return None

    def resume_checkpoint(self) -> Path | None:
        """The last complete checkpoint, if its fingerprint matches these settings; else an error naming what
        changed. Incomplete checkpoints (killed while written) are skipped, never deleted. A complete run whose
        checkpoints are gone is compared by its manifest's fingerprint. Called before `begin`, so a refused resume
        leaves the folder as it was."""
        complete = self.checkpoints()
        previous = self.manifest()
        if previous and previous.get("fingerprint") not in (None, self.fingerprint) and not complete:
            raise RunFolderError(
                f"{self.path}: holds a complete run trained with other settings (fingerprint "
                f"{previous.get('fingerprint')}); resume with the same settings, or start anew with --overwrite"
            )
        if not complete:
            print(f"{self.path}: no complete checkpoint; training from the start", file=sys.stderr)
            return None
        last = complete[-1]
        stamp = last / FINGERPRINT
        if not stamp.is_file():
            print(f"{last}: written before checkpoints carried fingerprints; resuming unchecked", file=sys.stderr)
            return last
        saved = json.loads(stamp.read_text())
        if saved.get("fingerprint") != self.fingerprint:
            changes = changed_settings(saved.get("settings", {}), json.loads(json.dumps(self.settings, default=str)))
            raise RunFolderError(
                f"{last}: trained with other settings ({'; '.join(changes) or 'fingerprint differs'}); resume with "
                "the same settings, or start anew with --overwrite"
            )
        trained_on = saved.get("data") or {}  # absent in checkpoints written before data was recorded
        changed = [path for path, digest in trained_on.items() if self.data.get(path, digest) != digest]
        if changed:
            raise RunFolderError(
                f"{last}: its data changed since it was trained ({', '.join(changed)}: other contents under the same "
                "path); resume with the data it was trained on, or start anew with --overwrite"
            )
        check_checkpoint_files(last)
        return last

    # ---- the end ----------------------------------------------------------------------------------------------------

    def finish(self, extra: dict[str, Any] | None = None) -> None:
        """Move every file of the staging folder into place (the weights last), then write the manifest."""
        staging = self.path / STAGING
        entries = sorted(staging.iterdir(), key=lambda p: (is_weights(p.name), p.name)) if staging.is_dir() else []
        # listed before the first move: a run killed mid-move has its files removed by the next run's begin()
        moving = dict(
            files=[e.name for e in entries if not e.is_dir()], folders=[e.name for e in entries if e.is_dir()]
        )
        write_atomically(self.path / FINISHING, json.dumps(moving))
        files, folders = [], []
        for entry in entries:
            target = self.path / entry.name
            if entry.is_dir():
                if target.is_dir():
                    shutil.rmtree(target)  # a folder of this run's own staging (never one it did not write)
                folders.append(entry.name)
            else:
                files.append(entry.name)
            os.replace(entry, target)
        manifest = dict(
            task=self.task,
            fingerprint=self.fingerprint,
            finished=time.strftime("%Y-%m-%d %H:%M:%S"),
            files=files,
            folders=folders,
            **(extra or {}),
        )
        write_atomically(self.path / COMPLETE, json.dumps(manifest, indent=1))
        (self.path / FINISHING).unlink(missing_ok=True)
        (self.path / INCOMPLETE).unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)


def checkpoint_step(path: str | Path) -> int | None:
    """The step of a `checkpoint-N` folder (None for a name that is not one)."""
    step = Path(path).name.rsplit("-", 1)[-1]
    return int(step) if step.isdigit() else None


def folder_task(path: str | Path) -> str | None:
    """The task a run folder says it holds: its manifest, its marker, else None. A folder whose run has not finished
    is an error: it holds no model, or parts of one."""
    if (Path(path) / MARKER).is_file() and not (Path(path) / COMPLETE).is_file():
        raise RunFolderError(f"{path}: its run has not finished (no {COMPLETE}); --resume it or train anew")
    for name in (COMPLETE, MARKER):
        file = Path(path) / name
        if file.is_file():
            try:
                task = json.loads(file.read_text()).get("task")
            except json.JSONDecodeError:
                continue
            if task:
                return task
    return None


def run_settings(path: str | Path) -> dict[str, Any]:
    """The settings a finished run was trained with (its run_config.json; for a run's `checkpoints/checkpoint-N`, the
    run's), or {} for a folder without them (a folder of an earlier version, a checkpoint saved by hand)."""
    config = Path(path) / "run_config.json"
    if not config.is_file() and Path(path).parent.name == CHECKPOINTS and checkpoint_step(path) is not None:
        config = Path(path).parent.parent / "run_config.json"  # a checkpoint reads its texts as its run did
    try:
        return json.loads(config.read_text()) if config.is_file() else {}
    except json.JSONDecodeError:
        return {}
