"""Readers for labelled text: CSV / TSV (with or without a header), JSON Lines, fastText `__label__` lines, the Stanford
Sentiment Treebank's labelled trees as released (`trees/train.txt`: a sentence's label is its root's, 0-4; its words
the leaves, -LRB- / -RRB- read as brackets), gzip of any of these, and a folder of text files with one sub-folder per
label (the aclImdb layout: `aclImdb/train` or `aclImdb/test`, whose pos/ and neg/ are the labels, or with
`label_field="rating"` the rating each review's file name ends with, `<id>_<rating>.txt`; aclImdb's `train/unsup/`,
its 50,000 unlabelled reviews, is no label and is not read).

Every example remembers where it came from (file and line), and every problem is reported there: a malformed row,
a missing column, an empty file, or a label the model does not know. Nothing is dropped or guessed silently.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from fastformer.data.files import (
    DataError,
    column,
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

FORMATS = ("csv", "tsv", "jsonl", "fasttext", "trees", "folder", "mind-topics")
FASTTEXT_PREFIX = "__label__"
_TREE_ROOT = re.compile(r"\((\d+) ")  # a labelled tree's first node: "(3 (2 The) ..."
_TREE_LEAF = re.compile(r"\(\d+ ([^()\s]+)\)")  # a leaf: "(2 Rock)"
PTB_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


@dataclass(frozen=True)
class Example:
    text: str
    label: str
    source: str  # "path:line", for error messages and prediction files


def detect_format(path: Path) -> str:
    """csv / tsv / jsonl / fasttext / trees / folder from the path (a .gz suffix is looked through), else from the
    first line (`__label__`: fastText; a labelled tree "(3 (2 ...": SST's trees)."""
    if path.is_dir():
        return "folder"
    last = format_suffix(path)
    if last in (".jsonl", ".json", ".ndjson", ".parquet"):  # (Parquet: its rows read as JSON Lines records are)
        return "jsonl"
    if last in (".tsv", ".tab"):
        return "tsv"
    if last == ".csv":
        return "csv"
    with open_text(path) as f:
        first = f.readline()
    if first.startswith(FASTTEXT_PREFIX):
        return "fasttext"
    if _TREE_ROOT.match(first):
        return "trees"
    raise DataError(path, None, None, "cannot tell the format from the name; pass format= one of " + ", ".join(FORMATS))


HEADER_SAMPLE_ROWS = 1000
# what a header calls its label column (a first row whose label cell is one of these, and never a label again, is a
# header even when the labels are words)
LABEL_COLUMN_NAMES = {
    "label",
    "labels",
    "class",
    "category",
    "sentiment",
    "rating",
    "stars",
    "score",
    "target",
    "y",
    "polarity",
    "topic",
    "tag",
    "stance",
    "emotion",
    "intent",
    "overall",
    "gold_label",
    "label_id",
    "class_label",
}
# what a header calls its text column (pandas' `text`, GLUE's `sentence`, Kaggle IMDB's `review`, Amazon's `reviewText`)
TEXT_COLUMN_NAMES = {
    "text",
    "sentence",
    "review",
    "content",
    "body",
    "document",
    "comment",
    "tweet",
    "reviewtext",
    "review_text",
    "input",
    "utterance",
    "message",
    "description",
    "abstract",
    "article",
    "text_a",
    "sentence1",
    "question",
    "post",
    "headline",
    "title",
}
# the names that win when several columns of a header are usual text names (title + text: the text); two of these
# together are ambiguous
TEXT_COLUMN_PREFERENCE = ("text", "sentence", "review", "reviewtext", "review_text", "content", "body", "document")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def canonical_label(text: str) -> str:
    """One spelling per label: surrounding space dropped and numbers written one way ("1", "1.0", "01" -> "1";
    "0.50" -> "0.5"), so that the same value is never split into several classes."""
    label = text.strip()
    if _NUMBER.fullmatch(label):
        # exact decimal arithmetic: an integer keeps every digit (through float, labels above 2**53 merged)
        value = Decimal(label)
        if value == value.to_integral_value():
            return str(int(value))
        return format(value.normalize(), "f")
    return label


def _looks_like_header(first: list[str], sample: list[list[str]], label_index: int) -> bool:
    """Whether the first row is a header: its label cell is not a number, and it is never a label of the rows after
    it (of the first HEADER_SAMPLE_ROWS); and either those labels are numbers or the cell is a usual name of a label
    column. A header-less file whose labels are words keeps its first row."""
    cell = canonical_label(first[label_index])
    if _NUMBER.fullmatch(cell):
        return False
    labels = {canonical_label(row[label_index]) for row in sample if len(row) > abs(label_index)}
    if cell in labels:
        return False
    numeric = bool(labels) and all(_NUMBER.fullmatch(label) for label in labels)
    return numeric or cell.lower() in LABEL_COLUMN_NAMES


def _names_over_texts(first: list[str], sample: list[list[str]]) -> bool:
    """Whether a first row is a header by its shape: one-word names (no number) over a column whose cells below are
    texts (a median of 4 words or more), or over a label-like column (8 rows or more, at most a quarter of them
    distinct) that the name itself is not a value of. Catches headers of
    names the lists above lack (`txt,lable`, `review_polarity,review`), which were read as data: positionally, the
    texts becoming labels."""
    cells = [cell.strip() for cell in first]
    if not sample or any(not c or _NUMBER.fullmatch(c) or len(c) > 40 or len(c.split()) > 1 for c in cells):
        return False  # (a name is one word: a header-less first row's text of one word is rare, of more words common)
    for j in range(len(first)):
        words = sorted(len(row[j].split()) for row in sample if len(row) > j)
        if words and words[len(words) // 2] >= 4:
            return True
        # or over a label-like column (a few values, each repeated) that its own cell is not one of: short texts
        values = [row[j].strip() for row in sample if len(row) > j]
        distinct = set(values)
        if len(values) >= 8 and len(distinct) <= len(values) // 4 and cells[j] not in distinct:
            return True
    return False


def _names_columns(row: list[str]) -> bool:
    """Whether a first row is a header by its names: a usual text column name and a usual label column name."""
    cells = {cell.strip().lower() for cell in row}
    return bool(cells & TEXT_COLUMN_NAMES) and bool(cells & LABEL_COLUMN_NAMES)


def usual_column(header: list[str], usual: set[str], preference: tuple[str, ...]) -> int | None:
    """The header's one column whose name (case-insensitive) is a usual one, or the one preferred among several
    (title + text: the text); None where there is none or no telling."""
    names = [cell.strip().lower() for cell in header]
    matches = [i for i, name in enumerate(names) if name in usual]
    preferred = [i for i in matches if names[i] in preference]
    if len(matches) == 1:
        return matches[0]
    return preferred[0] if len(preferred) == 1 else None


def _positions(field: str | int) -> bool:
    """Whether a field is given as a column position (or positions joined by commas), not by name."""
    return all(part.strip().lstrip("-").isdigit() for part in str(field).split(","))


def columns_by_name(header: list[str], label_field, text_field, path: Path) -> tuple:
    """(label field, text field) of a file with a header: the given ones, else the one column of the header whose name
    is a usual label / text name (case-insensitive). No match, or several, is an error listing the header: a header
    never falls back to positions silently."""
    names = [cell.strip().lower() for cell in header]

    def find(given, usual: set[str], preference: tuple[str, ...], what: str, flag: str):
        if given is not None:
            return given
        index = usual_column(header, usual, preference)
        if index is not None:
            return index
        found = "several usual " + what + " names" if set(names) & usual else "no usual " + what + " name"
        raise DataError(path, 1, None, f"the header {header} has {found}: pass {flag} NAME")

    label = find(label_field, LABEL_COLUMN_NAMES, (), "label", "--label-field")
    text = find(text_field, TEXT_COLUMN_NAMES, TEXT_COLUMN_PREFERENCE, "text", "--text-field")
    return label, text


def _read_delimited(path: Path, delimiter: str, text_field, label_field, has_header: bool | None) -> Iterator[Example]:
    with open_text(path) as f:
        reader = csv_reader(f, delimiter)
        try:
            first = next(reader)
        except StopIteration:
            raise DataError(path, None, None, "the file is empty") from None
        except csv.Error as error:
            raise DataError(path, 1, None, f"malformed row: {error}") from None
        sample: list[tuple[int, list[str]]] = []
        if has_header is None:
            # named columns imply a header, and so does a first row that names a usual text or label column;
            # otherwise guess from the first row's label cell (default position 0)
            named = any(not _positions(f) for f in (text_field, label_field) if f)
            named = named or _names_columns(first)
            guess_label = int(label_field) if label_field is not None and not named else 0
            if not named:
                previous = reader.line_num
                try:
                    for row in reader:
                        sample.append((previous + 1, row))
                        previous = reader.line_num
                        if len(sample) >= HEADER_SAMPLE_ROWS:
                            break
                except csv.Error as error:
                    raise DataError(path, previous + 1, None, f"malformed row: {error}") from None
            rows_after = [row for _, row in sample]
            has_header = (
                named
                or (len(first) > abs(guess_label) and _looks_like_header(first, rows_after, guess_label))
                or _names_over_texts(first, rows_after)
            )
        header = first if has_header else None
        width = len(first)
        if header is not None:  # a header: columns by name, never by position unless given
            label_field, text_field = columns_by_name(header, label_field, text_field, path)
        label_i = column(header, label_field, 0, path, "label")
        default_text = 1 if label_i in (0, -width) else 0
        text_fields = split_fields(text_field, header or ())  # "title,content": both columns, joined
        text_columns = [column(header, f, default_text, path, "text") for f in text_fields or [None]]
        # Zhang et al.'s header-less CSVs (Amazon, AG News, DBPedia, Yahoo) split a text into title, body (, answer)
        # after the label: with no text column named, the text is all of them, as they trained on (not the title)
        if header is None and text_field is None and label_i in (0, -width) and width > 2:
            text_columns = list(range(1, width))
        for index, what in ((label_i, "label"), *((i, "text") for i in text_columns)):
            if not -width <= index < width:
                hint = (
                    " (the row holds a tab: a tab-separated file? pass format tsv)"
                    if "\t" in delimiter.join(first) and delimiter != "\t"
                    else ""
                )
                raise DataError(
                    path, 1, f"column {index}", f"the {what} column is beyond the row's {width} field(s){hint}"
                )
        rows: Iterable[tuple[int, list[str]]] = ([(1, first)] if not has_header else []) + sample
        line = record = 0
        try:
            for number, row in rows_with_lines(rows, reader, start=2):
                line = number
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                record += 1
                # texts spanning several lines (pandas writes them): the record a spreadsheet or pandas shows too
                where = "" if number == record + (1 if header else 0) else f"CSV record {record}: "
                if len(row) != width:
                    raise DataError(
                        path, number, None, f"{where}expected {width} fields, found {len(row)}: {row[:3]}..."
                    )
                label = canonical_label(row[label_i])
                if not label:
                    field = header[label_i] if header else f"column {label_i}"
                    raise DataError(path, number, field, f"{where}empty label")
                text = row[text_columns[0]] if len(text_columns) == 1 else joined_text(row[i] for i in text_columns)
                yield Example(text, label, f"{path}:{number}")
        except csv.Error as error:
            raise DataError(path, line + 1, None, f"malformed row: {error}") from None


def _read_jsonl(path: Path, text_field, label_field, where: dict[str, str] | None) -> Iterator[Example]:
    text_field, label_field = text_field or "text", label_field or "label"
    for number, record in records(path, where):
        text_fields = split_fields(text_field, record)  # "title,content": both keys, joined
        for field in (*text_fields, label_field):
            if field not in record:
                raise DataError(path, number, field, f"missing; the record has {sorted(record)}")
        for field in text_fields:
            if record[field] is not None and not isinstance(record[field], str):
                raise DataError(path, number, field, f"expected a string, got {type(record[field]).__name__}")
        texts = [record[field] or "" for field in text_fields]
        text, label = texts[0] if len(texts) == 1 else joined_text(texts), record[label_field]
        if label is None or isinstance(label, (dict, list)) or str(label).strip() == "":
            raise DataError(path, number, label_field, f"not a usable label: {label!r}")
        label = ("true" if label else "false") if isinstance(label, bool) else str(label)  # JSON's spelling
        yield Example(text, canonical_label(label), f"{path}:{number}")


def _read_fasttext(path: Path) -> Iterator[Example]:
    empty = True
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            empty = False
            if not line.startswith(FASTTEXT_PREFIX):
                raise DataError(path, number, "label", f"line does not start with {FASTTEXT_PREFIX!r}: {line[:40]!r}")
            label, _, text = line[len(FASTTEXT_PREFIX) :].partition("\t" if "\t" in line else " ")
            if not label:
                raise DataError(path, number, "label", "empty label")
            yield Example(text, canonical_label(label), f"{path}:{number}")
    if empty:
        raise DataError(path, None, None, "the file is empty")


def _read_trees(path: Path) -> Iterator[Example]:
    """SST's labelled trees (Socher et al. 2013, `trainDevTestTrees_PTB/trees/*.txt`): one sentence a line, its
    label the root node's, its text the leaves (tokenised, as SST's other copies print it)."""
    empty = True
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            empty = False
            root = _TREE_ROOT.match(line)
            if not root or line.count("(") != line.count(")") or not line.endswith(")"):
                raise DataError(path, number, "label", f"not a labelled tree '(LABEL (LABEL word) ...)': {line[:40]!r}")
            words = [PTB_BRACKETS.get(word, word) for word in _TREE_LEAF.findall(line)]
            if not words:
                raise DataError(path, number, "text", f"a tree with no leaves: {line[:40]!r}")
            yield Example(" ".join(words), root.group(1), f"{path}:{number}")
    if empty:
        raise DataError(path, None, None, "the file is empty")


FOLDER_LABELS = ("folder", "rating")  # a folder dataset's label: its sub-folder's name, or its file name's rating
UNLABELLED_FOLDERS = ("unsup",)  # aclImdb's train/unsup/: reviews without a label (their file names end in _0)
DATA_SUFFIXES = (".csv", ".tsv", ".tab", ".jsonl", ".json", ".ndjson", ".parquet", ".txt")


def _rating_in_name(file: Path) -> str:
    """aclImdb names each review <id>_<rating>.txt: the rating, as the label."""
    match = re.fullmatch(r".*_(\d+)", file.name.split(".", 1)[0])
    if not match:
        raise DataError(
            file, None, "label", "no rating in the file's name (aclImdb names each review <id>_<rating>.txt)"
        )
    return str(int(match.group(1)))


def _read_folder(path: Path, label_field: str | int | None = None) -> Iterator[Example]:
    by = "folder" if label_field is None else str(label_field)
    if by not in FOLDER_LABELS:
        raise DataError(
            path,
            None,
            "label",
            f"{by!r}: a folder dataset's label is its sub-folder's name (folder) or the rating that "
            "ends each file's name, as aclImdb's <id>_<rating>.txt (rating)",
        )
    entries = visible_entries(path)
    labels = [p for p in entries if p.is_dir() and p.name not in UNLABELLED_FOLDERS]
    if not labels:
        files = [p.name for p in entries if p.is_file() and format_suffix(p) in DATA_SUFFIXES]
        hint = (
            f"; it holds {', '.join(files[:4])}{', ...' if len(files) > 4 else ''}: give one of them" if files else ""
        )
        raise DataError(path, None, None, "a folder dataset needs one sub-folder per label, holding text files" + hint)
    for label_dir in labels:
        # a split's folder given one level too high (aclImdb/ itself: train/ and test/ would be read as labels, with
        # the split's word counts and URL lists as their texts)
        files = visible_entries(label_dir)
        nested = [p.name for p in files if p.is_dir()]
        if nested:
            raise DataError(
                label_dir,
                None,
                None,
                f"holds folders ({', '.join(nested[:4])}), not texts: a folder dataset is one "
                "split with one sub-folder of texts per label (aclImdb: give aclImdb/train or aclImdb/test)",
            )
        if not files:
            raise DataError(
                label_dir, None, None, "no text files (a label's sub-folder holds one text file per example)"
            )
        for file in files:
            label = label_dir.name if by == "folder" else _rating_in_name(file)
            yield Example(file.read_text(encoding="utf-8", errors="replace"), label, f"{file}:1")


def read_examples(
    path: str | Path,
    *,
    text_field: str | int | None = None,
    label_field: str | int | None = None,
    format: str | None = None,
    has_header: bool | None = None,
    where: dict[str, str] | None = None,
) -> list[Example]:
    """Read labelled texts from `path`.

    text_field / label_field: a column name or position (CSV/TSV), or a key (JSON Lines; defaults "text", "label").
    Header-less CSV defaults to label first, text second (the Yelp / Amazon-full / AG News convention); with more
    than one column after the label (Amazon's and AG News' title, body) the text is them all, joined by a space.
    format: one of FORMATS, else detected from the name. has_header: None guesses from the first row.
    "mind-topics": MIND's news.tsv or MINDRec JSON as topic classification (`fastformer.data.mind_topics`; text
    field title / abstract / body or a comma-separated mix, label field category / subcategory).
    where: keep only JSON Lines records whose fields equal these values (e.g. {"split": "train"}).
    """
    if format == "mind-topics":  # MIND news.tsv / MINDRec (several joined by commas): each news text once
        from fastformer.data.mind_topics import read_topics

        refuse_filter(Path(str(path).split(",")[0]), where, format)
        return read_topics(str(path).split(","), text_field or "title", label_field or "category")[0]
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, None, "no such file or folder")
    format = format or detect_format(path)
    if format not in FORMATS:
        raise DataError(path, None, None, f"unknown format {format!r}; one of {FORMATS}")
    refuse_filter(path, where, format)
    if format in ("csv", "tsv"):
        examples = _read_delimited(path, "," if format == "csv" else "\t", text_field, label_field, has_header)
    elif format == "jsonl":
        examples = _read_jsonl(path, text_field, label_field, where)
    elif format == "fasttext":
        examples = _read_fasttext(path)
    elif format == "trees":
        examples = _read_trees(path)
    else:
        examples = _read_folder(path, label_field)
    result = list(examples)
    if not result:
        raise DataError(path, None, None, "no examples" + (f" matching {where}" if where else ""))
    return result


class LabelMap:
    """Labels <-> ids, fixed from the training data and saved with the model (config.id2label)."""

    def __init__(self, labels: Sequence[str]):
        if len(set(labels)) != len(labels):
            raise ValueError(f"duplicate labels: {labels}")
        self.labels = list(labels)
        self.index = {label: i for i, label in enumerate(self.labels)}

    @classmethod
    def from_examples(cls, examples: Iterable[Example]) -> LabelMap:
        """Sorted labels, numerically when every label is an integer (so "10" comes after "9"). Labels that mix
        true / false with 0 / 1 are refused: one class or two is the user's to say, not a guess."""
        examples = list(examples)
        labels = {e.label for e in examples}
        truth = {label for label in labels if label.lower() in ("true", "false")}
        if truth and labels & {"0", "1"}:
            first = [next(e for e in examples if e.label in kind) for kind in (truth, labels & {"0", "1"})]
            where = " and ".join(f"{e.label!r} at {e.source}" for e in first)
            raise ValueError(f"the labels mix true / false with 0 / 1 ({where}): write them one way")
        numeric = all(label.lstrip("-").isdigit() for label in labels)
        return cls(sorted(labels, key=int) if numeric else sorted(labels))

    def encode(self, example: Example) -> int:
        try:
            return self.index[example.label]
        except KeyError:
            path, _, line = example.source.rpartition(":")
            # a few, each short: when texts were read as labels (a wrong column) the list would be the texts
            shown = [k if len(k) <= 40 else k[:40] + "..." for k in self.labels[:5]]
            known = shown if len(self.labels) <= 5 else [*shown, f"... {len(self.labels)} in all"]
            label = example.label if len(example.label) <= 80 else example.label[:80] + "..."
            raise DataError(
                path, int(line), "label", f"label {label!r} was not seen in training; known labels: {known}"
            ) from None

    def __len__(self) -> int:
        return len(self.labels)

    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.labels))
