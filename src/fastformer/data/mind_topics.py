"""MIND news topic classification (the third column of the paper's Table 4): a news text labelled with its category.

Two sources, read into the same `Example`s as every other classification set:
- MIND's `news.tsv` (any split, `.gz` too; a MIND folder is looked into): label = category (or subcategory), text =
  title, abstract, both, or `body` when a ninth column holds the news body (the paper used crawled bodies);
- MINDRec JSON (`{"instruction", "input", "output"}` records): the (title, category) pairs named in each user's
  history and target line ("... in catagory finance", MINDRec's spelling). Their `source` is `path:RECORD`, the
  1-based record number (errors name the 0-based record index, as `convert_mindrec` does).

Every news is kept once: a repeated news id, or a repeated text (the same title in a second file or record), is
dropped and counted; a text filed under two categories keeps its most frequent category (ties: the first in
alphabetical order), so the result never depends on the order of files or lines. Rows without a category are
skipped and counted; malformed rows raise `DataError` with file, line and field (MIND's own reader counts instead:
a topic set is small enough that a broken line should be fixed, not skipped).

`title_disjoint_split` splits by a hash of the normalised text, per category, so no test title was seen in training.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fastformer.data.files import DataError, lines, open_text
from fastformer.data.mind import NEWS_COLUMNS, parse_mindrec_input, read_mindrec_records
from fastformer.data.text_classification import Example

TEXT_FIELDS = ("title", "abstract", "body")
LABEL_FIELDS = ("category", "subcategory")


@dataclass
class TopicsReport:
    """What reading the topic set found: counts per category, and everything dropped, with why."""

    files: list[str] = field(default_factory=list)
    rows: int = 0  # news rows / MINDRec title mentions read
    kept: int = 0
    duplicate_ids: int = 0
    duplicate_texts: int = 0
    empty_texts: int = 0
    without_category: int = 0
    category_conflicts: int = 0  # distinct texts filed under more than one category
    categories: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def summary(self) -> str:
        counts = ", ".join(f"{c} {n:,}" for c, n in self.categories.items())
        return (
            f"{self.kept:,} distinct news in {len(self.categories)} categories ({counts}); dropped: "
            f"{self.duplicate_ids:,} repeated ids, {self.duplicate_texts:,} repeated texts, {self.empty_texts:,} empty "
            f"texts, {self.without_category:,} rows without a category; {self.category_conflicts:,} texts filed "
            f"under two categories kept their most frequent one"
        )


def normalise_title(text: str) -> str:
    """The key that identifies a text across files: lower case, white space collapsed."""
    return " ".join(text.lower().split())


def _is_mindrec(path: Path) -> bool:
    with open_text(path) as f:
        return f.read(64).lstrip().startswith("[")


def _resolve(path: Path) -> Path:
    if path.is_dir():
        for name in ("news.tsv", "news.tsv.gz", "news_sample.tsv", "news_sample.tsv.gz"):
            if (path / name).is_file():
                return path / name
        raise DataError(path, None, None, "a MIND folder needs a news.tsv (or .tsv.gz)")
    if not path.is_file():
        raise DataError(path, None, None, "no such file or folder")
    return path


def _news_rows(path: Path, text_fields: Sequence[str], label_field: str, report: TopicsReport):
    """(source, news id, text, label) of every usable news.tsv row."""
    columns = {name: i for i, name in enumerate(NEWS_COLUMNS)}
    columns["body"] = len(NEWS_COLUMNS)  # an optional ninth column
    for number, line in lines(path):
        cols = line.split("\t")
        if len(cols) not in (len(NEWS_COLUMNS), len(NEWS_COLUMNS) + 1):
            raise DataError(
                path,
                number,
                None,
                f"expected {len(NEWS_COLUMNS)} tab-separated columns (or a ninth, the body), got {len(cols)}",
            )
        if "body" in text_fields and len(cols) == len(NEWS_COLUMNS):
            raise DataError(path, number, "body", "text field 'body' asked for, but the row has no ninth column")
        if not cols[0].strip():
            raise DataError(path, number, "news_id", "empty news id")
        report.rows += 1
        label = cols[columns[label_field]].strip()
        if not label:
            report.without_category += 1
            continue
        text = " | ".join(cols[columns[f]].strip() for f in text_fields if cols[columns[f]].strip())
        yield f"{path}:{number}", cols[0].strip(), text, label


def _mindrec_rows(path: Path, text_fields: Sequence[str], label_field: str, report: TopicsReport):
    """(source, None, title, category) of every title a MINDRec file names (histories and targets)."""
    if tuple(text_fields) != ("title",) or label_field != "category":
        raise DataError(
            path, None, None, "MINDRec files hold titles and categories only (text 'title', label 'category')"
        )
    for index, record in enumerate(read_mindrec_records(path)):
        _, clicked, target = parse_mindrec_input(record, path, index)
        report.rows += len(clicked) + 1
        for title, category in [*clicked, target]:
            yield f"{path}:{index + 1}", None, title, category


def read_topics(
    paths: str | Path | Sequence[str | Path],
    text_fields: str | Sequence[str] = ("title",),
    label_field: str = "category",
) -> tuple[list[Example], TopicsReport]:
    """(examples, report): each distinct news text once with its category, from MIND news.tsv files / folders and
    MINDRec JSON files (told apart by content). `text_fields`: names from TEXT_FIELDS, or one comma-separated string
    ("title,abstract"); `label_field`: "category" or "subcategory"."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if isinstance(text_fields, str):
        text_fields = [f.strip() for f in text_fields.split(",") if f.strip()]
    for name in text_fields:
        if name not in TEXT_FIELDS:
            raise ValueError(f"MIND topic text field {name!r}: choose from {TEXT_FIELDS} (comma-separated)")
    if not text_fields:
        raise ValueError(f"MIND topics need a text field from {TEXT_FIELDS}")
    if label_field not in LABEL_FIELDS:
        raise ValueError(f"MIND topic label field {label_field!r}: choose from {LABEL_FIELDS}")
    report = TopicsReport()
    seen_ids: set[str] = set()
    first: dict[str, Example] = {}  # normalised text -> the first example read
    labels: dict[str, Counter] = {}  # normalised text -> how often each category was given
    for raw in paths:
        path = _resolve(Path(raw))
        report.files.append(str(path))
        rows = _mindrec_rows if _is_mindrec(path) else _news_rows
        for source, news_id, text, label in rows(path, text_fields, label_field, report):
            if news_id is not None:
                if news_id in seen_ids:
                    report.duplicate_ids += 1
                    continue
                seen_ids.add(news_id)
            key = normalise_title(text)
            if not key:
                report.empty_texts += 1
                continue
            labels.setdefault(key, Counter())[label] += 1
            if key in first:
                report.duplicate_texts += 1
            else:
                first[key] = Example(text, label, source)
    examples = []
    for key, example in first.items():
        counts = labels[key]
        report.category_conflicts += len(counts) > 1
        label = min(counts, key=lambda c: (-counts[c], c))  # most frequent, then alphabetical
        examples.append(Example(example.text, label, example.source))
    if not examples:
        raise DataError(", ".join(report.files), None, None, "no labelled news read")
    report.kept = len(examples)
    report.categories = dict(Counter(e.label for e in examples).most_common())
    return examples, report


def _rank(seed: int, text: str) -> str:
    return hashlib.sha1(f"{seed}\0{normalise_title(text)}".encode()).hexdigest()


def title_disjoint_split(
    examples: Sequence[Example], validation_fraction: float, test_fraction: float, seed: int = 0
) -> tuple[dict[str, list[Example]], dict[str, dict[str, int]]]:
    """({"train", "validation", "test"}: examples, per-split category counts), stratified by category.

    Within each category the examples are ordered by a hash of (seed, normalised text) and the first
    `test_fraction` go to test, the next `validation_fraction` to validation, the rest to training; a category of
    at least 3 examples gets at least one in each split of non-zero fraction, a rarer one stays in training only. The
    split depends on the set of texts and the seed alone, not on the order they were read in; texts are distinct
    (see `read_topics`), so no text is in two splits.
    """
    for name, value in (("validation_fraction", validation_fraction), ("test_fraction", test_fraction)):
        if not 0 <= value < 1:
            raise ValueError(f"{name} must be in [0, 1), got {value}")
    if validation_fraction + test_fraction >= 1:
        raise ValueError("validation_fraction + test_fraction must leave examples for training")
    rank = {e: _rank(seed, e.text) for e in examples}  # hashed once, used for both orders below
    by_category: dict[str, list[Example]] = {}
    for example in examples:
        by_category.setdefault(example.label, []).append(example)
    splits: dict[str, list[Example]] = {"train": [], "validation": [], "test": []}
    for category in sorted(by_category):
        items = sorted(by_category[category], key=rank.__getitem__)
        n = len(items)
        n_test = max(1, round(test_fraction * n)) if n >= 3 and test_fraction else 0
        n_val = max(1, round(validation_fraction * n)) if n >= 3 and validation_fraction else 0
        splits["test"] += items[:n_test]
        splits["validation"] += items[n_test : n_test + n_val]
        splits["train"] += items[n_test + n_val :]
    for name in splits:  # a fixed order, independent of the input order
        splits[name].sort(key=rank.__getitem__)
    counts = {name: dict(Counter(e.label for e in items).most_common()) for name, items in splits.items()}
    return splits, counts
