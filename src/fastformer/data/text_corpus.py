"""Unlabelled text: the documents of a corpus (language modelling, pretraining, distillation: `read_texts`) and the
texts of a file to predict for, each with its line (`numbered_texts`). Formats: JSON Lines (a text field, optional
filters), CSV / TSV (a column by the name its header row gives it, or by position in a file without a header row),
or plain text (one document a line); gzip of any of these; or a folder of text files, one document a file (aclImdb's
`train/unsup/`). Bad rows are reported with file, line and field, as for labelled data.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

from fastformer.data.files import (
    DataError,
    csv_reader,
    format_suffix,
    joined_text,
    open_text,
    records,
    refuse_filter,
    rows_with_lines,
    split_fields,
    visible_entries,
)

CORPUS_FORMATS = ("jsonl", "csv", "tsv", "txt")


def _corpus_format(path: Path, format: str | None) -> str:
    """`format`, else the name's (a .gz looked through), else JSON Lines where the first line is a JSON object (Cohan
    et al.'s PubMed and arXiv ship JSON Lines as train.txt / val.txt / test.txt), else one text a line."""
    if format:
        if format not in CORPUS_FORMATS:
            raise DataError(path, None, None, f"format must be one of {CORPUS_FORMATS}, got {format!r}")
        return format
    last = format_suffix(path)
    kinds = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".parquet": "jsonl", ".csv": "csv", ".tsv": "tsv"}
    kind = kinds.get(last, "txt")  # (Parquet: its rows read as JSON Lines records are)
    return "jsonl" if kind == "txt" and _first_line_is_a_json_object(path) else kind


def read_texts(
    path: str | Path,
    text_field: str | int | None = None,
    format: str | None = None,
    where: dict[str, str] | None = None,
) -> Iterator[str]:
    """The documents of a file, in order. text_field: JSON key or CSV/TSV column (a header's name, or a position in a
    file without a header row; default "text", else a header's one usual text column); not read from a plain text
    file, whose lines are the documents (so several files of a corpus share one field), nor from a folder, whose files
    are (by name). where: JSON Lines filters, e.g. {"split": "train"}. Empty documents are skipped."""
    path = Path(path)
    if path.is_dir():
        yield from _folder_documents(path, where)
        return
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    kind = _corpus_format(path, format)
    refuse_filter(path, where, kind)
    field = "text" if text_field is None else str(text_field)
    count = 0
    for _, text in _records(path, kind, field, text_field is not None, where):
        text = text.strip() if kind == "txt" else text
        if text.strip():
            count += 1
            yield text
    if count == 0:
        raise DataError(path, None, None, "no documents (empty file, or no record matches the filters)")


def _folder_documents(path: Path, where: dict[str, str] | None) -> Iterator[str]:
    """Each file of a folder, by name, as one document (aclImdb's train/unsup/: <id>_0.txt, one review each)."""
    refuse_filter(path, where, "a folder of text files")
    count = 0
    for _, text in named_documents(path):
        if text.strip():
            count += 1
            yield text.strip()
    if count == 0:
        raise DataError(path, None, None, "no documents (no file with text in it)")


def named_documents(path: Path) -> Iterator[tuple[str, str]]:
    """(file name, text) of each file of a folder, by name, empty ones too (hidden files such as .DS_Store are not
    read); a folder that holds folders is refused naming them."""
    entries = visible_entries(path)
    folders = [p.name for p in entries if p.is_dir()]
    if folders:  # aclImdb/train: pos/, neg/ and unsup/ beside the release's word counts and URL lists
        raise DataError(
            path,
            None,
            None,
            f"holds folders ({', '.join(folders[:4])}): a folder of documents holds one text file a document (as "
            "aclImdb's train/unsup/)",
        )
    for file in entries:
        yield file.name, file.read_text(encoding="utf-8", errors="replace")


def numbered_texts(
    path: str | Path,
    text_field: str | None = None,
    where: dict[str, str] | None = None,
    default_field: str = "text",
) -> Iterator[tuple[int, str]]:
    """(line, text) of every record of a file of texts to predict for, in order, the line being where the record
    starts. JSON Lines (by the name, .jsonl / .json / .ndjson, .gz looked through; or a first line that is a JSON
    object): each record's `text_field` (default `default_field`; a list of strings is its items a line each, null an
    empty text), `where` keeping the records whose fields equal its values. CSV / TSV: the column `text_field` names
    in the header row (not given, and no column of the default's name: the header's one usual text column, `review`
    say), or, given as a position, that column of every row of a file without a header row. Any other file: one text
    a line, blank lines included (their records say so). A record without the field is an error naming its file and
    line: a JSON line is never read as a text."""
    path = Path(path)
    kind = _corpus_format(path, None)
    refuse_filter(path, where, "one text a line" if kind == "txt" else kind)
    if kind == "txt" and text_field is not None:
        raise DataError(
            path,
            None,
            None,
            "--text-field reads JSON Lines / CSV / TSV files (.jsonl, .csv, .tsv); this one is read one text a line",
        )
    field = default_field if text_field is None else text_field
    if kind == "jsonl" and text_field is None and default_field.lstrip("-").isdigit():
        field = "text"  # (a run trained on a CSV's column 1 read at a JSON record: its text)
    yield from _records(path, kind, field, text_field is not None, where)


def _records(path: Path, kind: str, field: str, given: bool, where) -> Iterator[tuple[int, str]]:
    """(line, text) of each record of a `kind` file: a line; a JSON record's `field`; a CSV / TSV row's column."""
    if kind == "txt":
        with open_text(path) as lines:
            for number, line in enumerate(lines, start=1):
                yield number, line.rstrip("\r\n")
    elif kind == "jsonl":
        for number, record in records(path, where):
            fields = split_fields(field, record)  # "title,abstract": both keys' texts, joined
            for name in fields:
                if name not in record:
                    raise DataError(path, number, name, f"missing; the record has {sorted(record)}")
            texts = [_record_text(record[name], path, number, name) for name in fields]
            yield number, texts[0] if len(texts) == 1 else joined_text(texts)
    else:
        yield from _numbered_cells(path, "," if kind == "csv" else "\t", field, given)


def _first_line_is_a_json_object(path: Path) -> bool:
    with open_text(path) as lines:
        first = next((line for line in lines if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _record_text(value, path: Path, number: int, field: str) -> str:
    """A JSON record's text: a string, a list of strings (sentences: a line each) or null (empty)."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    raise DataError(path, number, field, f"expected a string or a list of strings, got {type(value).__name__}")


def _shown(row: list[str], cells: int = 6, width: int = 30) -> list[str]:
    """A row as an error shows it: its first cells, each cut (a header-less file's first row holds whole texts)."""
    return [cell if len(cell) <= width else cell[:width] + "..." for cell in row[:cells]]


def _text_columns(header: list[str], field: str, given: bool, path: Path) -> list[int]:
    """The header's columns of the texts: `field` (or the names it joins, "title,body"); where no field was given and
    the header has none of that name, its one usual text column (as training finds it: `TEXT_COLUMN_NAMES`)."""
    from fastformer.data.text_classification import TEXT_COLUMN_NAMES, TEXT_COLUMN_PREFERENCE, usual_column

    names = split_fields(field, header)
    if all(name in header for name in names):
        return [header.index(name) for name in names]
    usual = None if given else usual_column(header, TEXT_COLUMN_NAMES, TEXT_COLUMN_PREFERENCE)
    if usual is not None:
        return [usual]
    joined = (
        "; 1,2: the second and third joined, as training reads a label, title, body file" if len(header) > 2 else ""
    )
    raise DataError(
        path,
        1,
        field,
        f"no such column in the header row {_shown(header)}; give the text column's name, or for a file without a "
        f"header row its position (--text-field 1: the second column{joined})",
    )


def _numbered_cells(path: Path, delimiter: str, field: str, given: bool) -> Iterator[tuple[int, str]]:
    """(line, cell) of the column `field` names (a header row) or places (a position, or positions joined by commas
    whose cells are joined by a space: no header row); `given`: the field was asked for (else a header without it
    may name its text column otherwise)."""
    positional = all(part.strip().lstrip("-").isdigit() for part in field.split(","))
    with open_text(path) as f:
        reader = csv_reader(f, delimiter)
        line = 0
        try:
            header = None if positional else next(reader, None)
            if not positional and header is None:
                raise DataError(path, None, None, "the file is empty")
            indices = _text_columns(header, field, given, path) if header else [int(i) for i in field.split(",")]
            for line, row in rows_with_lines((), reader, start=2 if header else 1):
                if not row:
                    continue  # a blank line: no record
                if not all(-len(row) <= index < len(row) for index in indices):
                    raise DataError(path, line, field, f"the row has {len(row)} columns")
                yield line, row[indices[0]] if len(indices) == 1 else joined_text(row[i] for i in indices)
        except csv.Error as error:
            raise DataError(path, line + 1, None, f"malformed row: {error}") from None
