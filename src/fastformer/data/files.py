"""What every reader of the official formats shares: opening a text file (gzip too), the error that names file,
line and field, the lines of a file, JSON Lines records, CSV rows with their starting line, columns by name or
position. Imports the stdlib only."""

from __future__ import annotations

import csv
import gzip
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path


class DataError(ValueError):
    """A problem in an input file, with the file, line and field it was found at."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, message: str):
        where = f"{path}" + (f":{line}" if line is not None else "") + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.field = str(path), line, field


class TextLines:
    """The lines of a UTF-8 text file (gzip-compressed when its name ends in .gz), line endings kept (csv needs them),
    a leading byte-order mark dropped. Each line is decoded on its own, so a file that is not UTF-8, not really gzip
    or cut short fails as a DataError naming the file and the line, never as a decoder's traceback."""

    def __init__(self, path: Path):
        self.path, self.line = Path(path), 0
        raw = gzip.open(self.path, "rb") if self.path.suffix.lower() == ".gz" else self.path.open("rb")
        self._raw = raw

    def __enter__(self) -> TextLines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()

    def __iter__(self) -> TextLines:
        return self

    def __next__(self) -> str:
        try:
            data = self._raw.readline()
        except gzip.BadGzipFile:
            raise DataError(self.path, None, None, "named .gz but not gzip-compressed") from None
        except (EOFError, zlib.error) as error:
            raise DataError(
                self.path, None, None, f"the gzip stream is damaged or cut short after line {self.line} ({error})"
            ) from None
        if not data:
            raise StopIteration
        self.line += 1
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(
                self.path,
                self.line,
                None,
                f"not UTF-8 text (byte {data[error.start]:#04x} at column {error.start + 1}); save the file as UTF-8",
            ) from None
        return text.removeprefix("\ufeff") if self.line == 1 else text

    def readline(self) -> str:
        return next(self, "")

    def read(self, size: int = -1) -> str:
        parts, length = [], 0  # joined once: adding line to a growing string copied it per line (quadratic)
        for line in self:
            parts.append(line)
            length += len(line)
            if 0 <= size <= length:
                return "".join(parts)[:size]
        return "".join(parts)


def format_suffix(path: Path) -> str:
    """The suffix that names a file's format, a .gz looked through ("" for none)."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    return suffixes[-1] if suffixes else ""


def visible_entries(folder: Path) -> list[Path]:
    """A folder's entries by name, hidden ones left out: what a copy made on macOS or in Jupyter leaves beside the data
    (.DS_Store, ._<name> resource forks, .ipynb_checkpoints/) is not data, and a hidden folder is not a label."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def open_text(path: Path) -> TextLines:
    """A UTF-8 text file (gzip too) read line by line, with errors that name the line (`TextLines`)."""
    return TextLines(path)


def column(header: list[str] | None, field: str | int | None, default: int, path: Path, what: str) -> int:
    """Resolve a column given by name or position to its index."""
    if field is None:
        return default
    if isinstance(field, int) or (isinstance(field, str) and field.lstrip("-").isdigit()):
        return int(field)
    if header is None:
        raise DataError(path, 1, str(field), f"{what} column given by name, but the file has no header row")
    if field not in header:
        raise DataError(path, 1, str(field), f"no such {what} column; the header has {header}")
    return header.index(field)


def split_fields(field: str | int | None, names=()) -> list[str] | None:
    """A text field as the names (or positions) it joins: "title,abstract" is two, whose texts are joined by a space
    (DBPedia's title and content, a CSV's columns 1,2); a name that holds a comma itself (in `names`) is one."""
    if field is None:
        return None
    field = str(field)
    if field in names or "," not in field:
        return [field]
    return [part.strip() for part in field.split(",")]


def joined_text(parts: Iterable[str]) -> str:
    """The texts of several fields as one: each stripped, the empty left out, joined by a space."""
    return " ".join(part.strip() for part in parts if part and part.strip())


# a cell may hold a whole document: csv's default limit (131,072 characters, ~20,000 words) refused a long article
CSV_FIELD_LIMIT = 2**31 - 1


def csv_reader(lines: Iterable[str], delimiter: str = ","):
    """csv.reader over `lines` whose cells may be as long as a document (the module's limit raised, once)."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    return csv.reader(lines, delimiter=delimiter)


def rows_with_lines(first: Iterable[tuple[int, list[str]]], reader, start: int) -> Iterator[tuple[int, list[str]]]:
    """`first` (already read rows), then csv `reader`'s rows, each with the line it starts at."""
    yield from first
    # csv.reader counts physical lines (quoted fields may span several); report the line a row starts at
    previous = reader.line_num
    for row in reader:
        yield previous + 1, row
        previous = reader.line_num


def refuse_filter(path: Path, where: dict[str, str] | None, kind: str) -> None:
    """A `where` filter given for a file that is not JSON Lines (or Parquet, read as its records): an error (ignoring it
    would read every record)."""
    if where and kind not in ("jsonl", "cohan"):
        raise DataError(path, None, None, f"--where filters JSON Lines records ({where}); this file is read as {kind}")


def json_records(path: Path, where: dict[str, str] | None) -> Iterator[tuple[int, dict]]:
    """(line number, record) of every non-blank line of a JSON Lines file that passes the `where` filters."""
    empty = True
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            empty = False
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(path, number, None, f"not valid JSON: {error.msg}") from None
            if not isinstance(record, dict):
                raise DataError(path, number, None, "each line must be a JSON object")
            if where and any(str(record.get(k)) != str(v) for k, v in where.items()):
                continue
            yield number, record
    if empty:
        raise DataError(path, None, None, "the file is empty")


def records(path: Path, where: dict[str, str] | None) -> Iterator[tuple[int, dict]]:
    """(number, record) of a file of records that pass the `where` filters: a JSON Lines file's lines, or by its name
    a Parquet file's rows (numbered from 1; Hugging Face's datasets ship as Parquet)."""
    if format_suffix(path) == ".parquet":
        yield from parquet_records(path, where)
    else:
        yield from json_records(path, where)


def parquet_records(path: Path, where: dict[str, str] | None) -> Iterator[tuple[int, dict]]:
    """(row number from 1, record) of a Parquet file's rows that pass the `where` filters, read a batch at a time."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise DataError(
            path, None, None, "reading Parquet needs pyarrow (pip install pyarrow, or fastformer's [parquet] extra)"
        ) from None
    try:
        table = parquet.ParquetFile(path)
    except Exception as error:  # pyarrow's ArrowInvalid and OSError: not a Parquet file, or a damaged one
        raise DataError(path, None, None, f"not a readable Parquet file: {str(error).splitlines()[0]}") from None
    if table.metadata.num_rows == 0:
        raise DataError(path, None, None, "the file is empty")
    number = 0
    for batch in table.iter_batches(batch_size=1024):
        for record in batch.to_pylist():
            number += 1
            if where and any(str(record.get(k)) != str(v) for k, v in where.items()):
                continue
            yield number, record


def lines(path: Path):
    """(line number, line without its line ending) of a text file, .gz too; blank lines skipped."""
    with open_text(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line
