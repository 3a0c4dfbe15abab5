"""What the commands that take texts share: texts from the command line and/or a file, JSON lines out."""

from __future__ import annotations

from pathlib import Path


def not_a_file(path: str | Path) -> str:
    """Why `path` cannot be read as a file of texts, in a few words."""
    path = Path(path)
    return f"{path}: is a folder, not a file of texts (one per line)" if path.is_dir() else f"{path}: no such file"


def file_inputs(verb: str, args, runner):
    """`fastformer.cli.streaming.inputs` of a verb on a run folder (`args`: its texts, --file, --text-field, --where):
    a JSON Lines / CSV / TSV file's texts from --text-field, else from the field the run read its own from."""
    from fastformer.cli.streaming import inputs
    from fastformer.engine.folder import run_settings

    if not args.file and (args.text_field is not None or args.where):
        flag = "--text-field" if args.text_field is not None else "--where"
        raise SystemExit(f"fastformer {verb}: {flag} reads the records of --file: give --file")
    setting, default = runner.text_field_default
    if args.file and args.text_field is None:
        default = run_settings(args.model_dir).get(setting) or default
    return inputs(args.texts, args.file, args.text_field, args.where, str(default))


def texts_from(
    given: list[str], file: str | None, command: str, what: str = "texts", text_field: str | None = None
) -> list[str]:
    """The texts given on the command line, then the non-blank texts of `file` (one a line, or a JSON Lines / CSV /
    TSV file's `text_field`, default `text`: `fastformer.data.text_corpus.numbered_texts`; a folder's files, one text
    each, by name, as `predict --file` reads a folder); an error if there are none, or one line naming the file and
    line of a record that cannot be read."""
    from fastformer.cli.streaming import inputs
    from fastformer.data.files import DataError

    if text_field is not None and not file:
        raise SystemExit(f"fastformer {command}: --text-field reads the records of --file: give --file")
    texts = list(given)
    if file:
        path = Path(file)
        if not path.exists():
            raise SystemExit(f"fastformer {command}: {not_a_file(path)}")
        try:  # read as predict reads --file (a folder's files too); an editor's final newline is not a file's text
            for kind, _, text in inputs([], file, text_field):
                if text.strip():
                    texts.append(text.strip() if kind == "file" else text)
        except DataError as error:
            raise SystemExit(f"fastformer {command}: {error}") from None
    if not texts:
        raise SystemExit(f"fastformer {command}: give {what} or --file")
    return texts


def write_lines(lines: list[str], output: str | None) -> None:
    """To `output` if given, else to standard output."""
    if output:
        from fastformer.cli.outputs import atomic_output

        with atomic_output(output) as f:
            f.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))
