"""Readers of document / summary pairs: CNN/DailyMail (CSV or JSON Lines with article / highlights, the folder of
`.story` files it is released as: `cnn/stories/`, `dailymail/stories/`, or one of the URL lists that define its
standard split, `url_lists/all_train.txt`, `all_val.txt`, `all_test.txt`, read in their order from those folders),
PubMed in Cohan et al.'s format (JSON Lines: article_text and abstract_text sentence lists, `<S> ... </S>` tags
removed), and plain JSON Lines or CSV with chosen source and target fields (SumPubMed: text / abstract).

Sentences are kept where the format gives them: a Pair's `source_sentences` feed the Lead-3 baseline, and its target
holds one sentence per line, as ROUGE-Lsum wants. A bad row (a missing field, a field of the wrong type, a malformed
CSV row) raises a DataError naming file, line and field. Rows whose document or summary is empty (the official
PubMed set has some) are skipped and counted (`Pairs.skipped_empty`, with their places), never turned into pairs.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fastformer.data.files import (
    DataError,
    csv_reader,
    format_suffix,
    open_text,
    records,
    refuse_filter,
    rows_with_lines,
    visible_entries,
)

FORMATS = ("csv", "jsonl", "cohan", "stories", "urls")
DEFAULT_FIELDS = {
    "csv": ("article", "highlights"),
    "stories": ("article", "highlights"),
    "urls": ("article", "highlights"),
    "jsonl": ("article", "highlights"),
    "cohan": ("article_text", "abstract_text"),
}
_SENTENCE_TAGS = re.compile(r"</?S>")
# a sentence ends at . ! or ? (optionally closed by quotes / brackets) followed by white space and an upper-case
# letter, a digit or a quote (in a lower-cased text, any letter); good enough for news and paper prose, and only
# used where the format has no sentences
_SENTENCE_END = re.compile(r"(?<=[.!?])['\")\]]*\s+(?=[\"'A-Z0-9(])")
_SENTENCE_END_LOWERCASED = re.compile(r"(?<=[.!?])['\")\]]*\s+(?=[\"'a-z0-9(])")
_HEADING = re.compile(r"^[A-Z][A-Z &/,-]{0,60}$")  # a section heading line such as "BACKGROUND" (SumPubMed)


class Pairs(list):
    """The pairs of a file, and the rows skipped because their document or summary is empty."""

    skipped_empty: list[str]


@dataclass(frozen=True)
class Pair:
    """A document and its summary as read. Their sentences are split on first use: a reader keeps every pair of a
    file (a random hold-out needs them all) while a run often uses a few hundred, and splitting is most of the cost
    of reading (5,000 SumPubMed articles: 200 MB of text)."""

    raw_source: str
    raw_target: str
    sentence_lists: bool  # the format gives one sentence per line (cohan, a JSON list), so nothing is split
    origin: str  # "path:line"

    @cached_property
    def source_sentences(self) -> tuple[str, ...]:
        """The document's sentences, white space normalised (the Lead-3 baseline's input)."""
        sentences = self.raw_source.split("\n") if self.sentence_lists else split_sentences(self.raw_source)
        return tuple(" ".join(s.split()) for s in sentences if s.strip())

    @cached_property
    def source(self) -> str:
        """The document as one line: its sentences joined (section headings dropped)."""
        return " ".join(self.source_sentences)

    @cached_property
    def target(self) -> str:
        """The summary, one sentence per line (as ROUGE-Lsum wants)."""
        lines = self.raw_target.split("\n") if self.sentence_lists else split_sentences(self.raw_target)
        return "\n".join(" ".join(t.split()) for t in lines if t.strip())


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: each line split at sentence ends; lines that are only a section heading are dropped."""
    sentences = []
    for line in text.splitlines():
        line = line.strip()
        if not line or _HEADING.match(line):
            continue
        rule = _SENTENCE_END_LOWERCASED if line == line.lower() else _SENTENCE_END
        sentences.extend(s.strip() for s in rule.split(line) if s.strip())
    return sentences


def _strip_tags(sentence: str) -> str:
    return " ".join(_SENTENCE_TAGS.sub(" ", sentence).split())


def detect_format(path: Path) -> str:
    """csv from the name, stories for a folder; otherwise a file whose first line is a JSON object is JSON Lines,
    "cohan" when that object has article_text and abstract_text (Cohan et al. ship theirs as train.txt / val.txt /
    test.txt)."""
    if path.is_dir():
        return "stories"
    if format_suffix(path) == ".csv":
        return "csv"
    if format_suffix(path) == ".parquet":  # its rows read as JSON Lines records are
        first = next(records(path, None), (0, {}))[1]
        return "cohan" if "article_text" in first and "abstract_text" in first else "jsonl"
    with open_text(path) as f:
        first = next((line for line in f if line.strip()), "")
    try:
        record = json.loads(first) if first else None
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict):
        return "cohan" if "article_text" in record and "abstract_text" in record else "jsonl"
    if first.strip().startswith(("http://", "https://")):
        return "urls"
    raise DataError(
        path,
        1,
        None,
        f"cannot tell the format (not CSV by name, not JSON Lines); pass format= one of {', '.join(FORMATS)}",
    )


def _text_field(value, path: Path, line: int, field: str, record_keys) -> str:
    if value is None:
        raise DataError(path, line, field, f"missing; the record has {sorted(record_keys)}")
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise DataError(path, line, field, "expected a string or a list of strings")
        return "\n".join(_strip_tags(v) for v in value if _strip_tags(v))
    if not isinstance(value, str):
        raise DataError(path, line, field, f"expected a string, got {type(value).__name__}")
    return value


def _pair(source: str, target: str, path: Path, line: int, fields: tuple[str, str], sentence_lists: bool) -> Pair | str:
    """A Pair, or the reason the row is skipped ("path:line: field 'x': empty")."""
    for text, field in ((source, fields[0]), (target, fields[1])):
        if not text.strip():
            return f"{path}:{line}: field {field!r}: empty"
    return Pair(raw_source=source, raw_target=target, sentence_lists=sentence_lists, origin=f"{path}:{line}")


def _read_csv(path: Path, fields: tuple[str, str]) -> Iterator[Pair | str]:
    with open_text(path) as f:
        reader = csv_reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(path, None, None, "the file is empty") from None
        for field in fields:
            if field not in header:
                raise DataError(path, 1, field, f"no such column; the header has {header}")
        source_i, target_i = header.index(fields[0]), header.index(fields[1])
        line = 1
        try:
            for number, row in rows_with_lines((), reader, start=2):
                line = number
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != len(header):
                    raise DataError(path, number, None, f"expected {len(header)} fields, found {len(row)}")
                yield _pair(row[source_i], row[target_i], path, number, fields, sentence_lists=False)
        except csv.Error as error:
            raise DataError(path, line + 1, None, f"malformed row: {error}") from None


def _read_json_lines(path: Path, fields: tuple[str, str], where, sentence_lists: bool) -> Iterator[Pair | str]:
    for number, record in records(path, where):
        source, target = (_text_field(record.get(f), path, number, f, record) for f in fields)
        lists = sentence_lists or isinstance(record.get(fields[0]), list)
        yield _pair(source, target, path, number, fields, sentence_lists=lists)


def _story_folder(path: Path) -> list[Path]:
    """The `.story` files of a folder of CNN/DailyMail's stories, refused in one line when it has none."""
    entries = visible_entries(path)  # (a copy made on macOS holds a binary ._<hash>.story beside each story)
    stories = [p for p in entries if p.suffix == ".story"]
    if not stories:
        folders = [p.name for p in entries if p.is_dir()]
        hint = f" (it holds {', '.join(folders[:4])}: CNN/DailyMail keeps them in cnn/stories/)" if folders else ""
        raise DataError(path, None, None, "a folder of pairs holds CNN/DailyMail's .story files; it has none" + hint)
    return stories


def _read_stories(stories: list[Path]) -> Iterator[Pair | str]:
    """CNN/DailyMail as released (Hermann et al. 2015): `<hash>.story` files, each the article's paragraphs and then
    its highlights, every one after an `@highlight` line."""
    for story in stories:
        article, highlights, highlight_next = [], [], False
        for line in story.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if line == "@highlight":
                highlight_next = True
            elif line and highlight_next:
                highlights.append(line)
                highlight_next = False
            elif line and not highlights:
                article.append(line)
        if not highlights:
            raise DataError(story, None, "highlights", "no @highlight line (a .story file ends with its highlights)")
        # a paragraph is split into sentences (the Lead-3 baseline's); a highlight is one sentence, often with no stop
        yield _pair(
            "\n".join(article), "\n".join(highlights), story, 1, DEFAULT_FIELDS["stories"], sentence_lists=False
        )


def story_folders(url_list: Path) -> list[Path]:
    """Where the stories of a URL list are: `cnn/stories/` and `dailymail/stories/` beside the list or one folder up
    (the released layout: `url_lists/all_train.txt` beside `cnn/` and `dailymail/`), as many as exist."""
    places = (url_list.parent, url_list.parent.parent)
    return [place / name / "stories" for place in places for name in ("cnn", "dailymail") if (place / name).is_dir()]


def _read_url_list(path: Path) -> Iterator[Pair | str]:
    """CNN/DailyMail's standard split (Hermann et al. 2015; the lists of See et al. 2017): one article URL a line,
    each read from `<sha1 of the URL>.story`, in the list's order."""
    folders = story_folders(path)
    if not folders:
        places = " or ".join(str(place) for place in (path.parent, path.parent.parent))
        raise DataError(
            path, None, None, f"a URL list reads cnn/stories/ and dailymail/stories/; neither is in {places}"
        )
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            url = line.strip()
            if not url:
                continue
            name = hashlib.sha1(url.encode("utf-8")).hexdigest() + ".story"
            story = next((folder / name for folder in folders if (folder / name).is_file()), None)
            if story is None:
                where = ", ".join(str(folder) for folder in folders)
                raise DataError(path, number, None, f"no {name} for this URL in {where}")
            yield from _read_stories([story])


def read_pairs(
    path: str | Path,
    source_field: str | None = None,
    target_field: str | None = None,
    format: str | None = None,
    where: dict[str, str] | None = None,
) -> Pairs:
    """Every pair of a file, in order (rows with an empty document or summary skipped and listed).

    Formats: csv (header row; default columns article / highlights), jsonl (default keys article / highlights; a key
    may hold a list of sentences), cohan (article_text / abstract_text lists, `<S>` tags removed), stories (a folder
    of CNN/DailyMail's .story files), urls (one of CNN/DailyMail's URL lists: its stories, in its order, from
    `story_folders`). `where` filters JSON Lines records by key = value."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    format = format or detect_format(path)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if path.is_dir() != (format == "stories"):
        raise DataError(path, None, None, f"format {format!r} reads a {'file' if path.is_dir() else 'folder'}")
    refuse_filter(path, where, format)
    default_source, default_target = DEFAULT_FIELDS[format]
    fields = (source_field or default_source, target_field or default_target)
    if format == "csv":
        rows = _read_csv(path, fields)
    elif format == "stories":
        rows = _read_stories(_story_folder(path))
    elif format == "urls":
        rows = _read_url_list(path)
    else:
        rows = _read_json_lines(path, fields, where, sentence_lists=format == "cohan")
    pairs = Pairs()
    pairs.skipped_empty = []
    for row in rows:
        (pairs.skipped_empty if isinstance(row, str) else pairs).append(row)
    if not pairs:
        raise DataError(path, None, None, "no pairs read" + (f" (filters {where})" if where else ""))
    return pairs


def lead(pair: Pair, n: int = 3) -> str:
    """The Lead-n baseline: the document's first n sentences, one per line."""
    return "\n".join(pair.source_sentences[:n])
