"""Unlabelled text for language modelling: JSON Lines (a text field, optional filters), CSV / TSV (a column by name
or position, header row), or plain text (one document per line); gzip of any of these. Bad rows are reported with
file, line and field, as for labelled data.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from fastformer.data.files import DataError, column, json_records, open_text

CORPUS_FORMATS = ("jsonl", "csv", "tsv", "txt")


def _corpus_format(path: Path, format: str | None) -> str:
    if format:
        if format not in CORPUS_FORMATS:
            raise DataError(path, None, None, f"format must be one of {CORPUS_FORMATS}, got {format!r}")
        return format
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    last = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv"}.get(last, "txt")


def read_texts(
    path: str | Path,
    text_field: str | int | None = None,
    format: str | None = None,
    where: dict[str, str] | None = None,
) -> Iterator[str]:
    """The documents of a file, in order. text_field: JSON key (default "text") or CSV/TSV column (name or position,
    default "text"); where: JSON Lines filters, e.g. {"split": "train"}. Empty documents are skipped."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    kind = _corpus_format(path, format)
    count = 0
    for text in _documents(path, kind, text_field, where):
        if text and text.strip():
            count += 1
            yield text
    if count == 0:
        raise DataError(path, None, None, "no documents (empty file, or no record matches the filters)")


def _documents(path: Path, kind: str, text_field, where) -> Iterator[str | None]:
    if kind == "jsonl":
        key = text_field or "text"
        for number, record in json_records(path, where):
            if key not in record:
                raise DataError(path, number, key, f"missing; the record has {sorted(record)}")
            text = record[key]
            if text is not None and not isinstance(text, str):
                raise DataError(path, number, key, f"expected a string, got {type(text).__name__}")
            yield text
        return
    with open_text(path) as f:
        if kind == "txt":
            yield from (line.strip() for line in f)
            return
        reader = csv.reader(f, delimiter="," if kind == "csv" else "\t")
        header = next(reader, None)
        if header is None:
            raise DataError(path, None, None, "the file is empty")
        field = text_field if text_field is not None else "text"
        text_column = column(header, field, 0, path, "text")
        for number, row in enumerate(reader, start=2):
            if text_column >= len(row):
                raise DataError(path, number, str(field), f"the row has {len(row)} columns")
            yield row[text_column]
