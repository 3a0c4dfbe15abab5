"""Readers of the MIND news-recommendation format (Wu et al. 2020, msnews.github.io) and a converter to it.

A MIND folder holds two tab-separated files without a header:

- news.tsv: news_id, category, subcategory, title, abstract, url, title_entities, abstract_entities
- behaviors.tsv: impression_id, user_id, time, history ("N1 N2 ..." oldest first, may be empty),
  impressions ("N3-1 N4-0 ...": candidate-label pairs; the test set lists bare ids "N3 N4" without labels)

Nothing is mixed in silently. Malformed lines (wrong column count, a label other than 0/1, labelled and unlabelled
candidates in one impression, no candidates) are skipped and counted, and the first few are kept with their file,
line and field (`strict=True` raises on the first instead). News ids that behaviors reference but news.tsv lacks,
and empty histories, are counted in the same `MindReport`; what the pipeline does with them is decided where they
are used (unknown history news are left out of the user's history; unknown candidates cannot be scored and are
ranked last).

`convert_mindrec` writes a MIND folder from the MINDRec JSON format (real MIND titles and clicks, one
user-history / target-title / Yes-No record per sample).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from fastformer.data.files import DataError, lines, open_text

NEWS_COLUMNS = (
    "news_id",
    "category",
    "subcategory",
    "title",
    "abstract",
    "url",
    "title_entities",
    "abstract_entities",
)
BEHAVIORS_COLUMNS = ("impression_id", "user_id", "time", "history", "impressions")
NEWS_FIELDS = ("title", "abstract", "category", "subcategory")  # what a news text can be made of
KEPT_PROBLEMS = 10


@dataclass(frozen=True)
class News:
    news_id: str
    category: str
    subcategory: str
    title: str
    abstract: str
    url: str

    def text(self, fields: tuple[str, ...] | list[str] = ("title",)) -> str:
        """The text the news encoder reads: the chosen fields in the order given, joined by " | "."""
        for name in fields:
            if name not in NEWS_FIELDS:
                raise ValueError(f"unknown news field {name!r}; choose from {NEWS_FIELDS}")
        return " | ".join(getattr(self, name) for name in fields if getattr(self, name))


@dataclass(frozen=True)
class Impression:
    impression_id: str
    user_id: str
    time: str
    history: tuple[str, ...]  # clicked news ids, oldest first, as in the file
    candidates: tuple[str, ...]
    labels: tuple[int, ...] | None  # 1 clicked / 0 not; None for the unlabelled test set
    source: str  # "path:line"


@dataclass
class MindReport:
    """What a read found besides the data: counts of every problem and the first few problems in full."""

    news: int = 0
    news_malformed: int = 0
    news_duplicate: int = 0
    impressions: int = 0
    behaviors_malformed: int = 0
    impressions_duplicate: int = 0  # repeated impression ids (the first kept: the prediction file names each once)
    unlabelled_impressions: int = 0
    empty_histories: int = 0
    history_references: int = 0
    history_unknown: int = 0  # references to ids news.tsv lacks
    candidate_references: int = 0
    candidate_unknown: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, error: DataError, strict: bool) -> None:
        if strict:
            raise error
        if len(self.problems) < KEPT_PROBLEMS:
            self.problems.append(str(error))

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}

    def summary(self) -> str:
        """One line per kind of problem found (empty when there is none)."""
        lines = []
        if self.news_malformed:
            lines.append(f"{self.news_malformed} malformed news lines skipped")
        if self.news_duplicate:
            lines.append(f"{self.news_duplicate} repeated news ids (first kept)")
        if self.behaviors_malformed:
            lines.append(f"{self.behaviors_malformed} malformed behaviors lines skipped")
        if self.impressions_duplicate:
            lines.append(f"{self.impressions_duplicate} repeated impression ids skipped (first kept)")
        if self.empty_histories:
            lines.append(f"{self.empty_histories} of {self.impressions} impressions have an empty history")
        if self.history_unknown:
            lines.append(
                f"{self.history_unknown} of {self.history_references} history references name news not in news.tsv"
            )
        if self.candidate_unknown:
            lines.append(
                f"{self.candidate_unknown} of {self.candidate_references} candidates name news not in news.tsv"
            )
        lines.extend(f"  e.g. {p}" for p in self.problems[:3])
        return "\n".join(lines)


@dataclass
class MindData:
    news: dict[str, News]
    impressions: list[Impression]
    report: MindReport
    folder: str


def known_history(impression: Impression, news: dict, max_history: int) -> list[str]:
    """The user's most recent `max_history` clicks that news.tsv knows, oldest first."""
    return [h for h in impression.history if h in news][-max_history:] if max_history > 0 else []


def read_news(path: str | Path, report: MindReport | None = None, strict: bool = False) -> dict[str, News]:
    """news.tsv as {news_id: News}. Malformed lines are counted in `report` (or raise with strict=True)."""
    path = Path(path)
    report = report if report is not None else MindReport()
    news: dict[str, News] = {}
    for number, line in lines(path):
        cols = line.split("\t")
        if len(cols) != len(NEWS_COLUMNS):
            report.news_malformed += 1
            report.problem(
                DataError(path, number, None, f"expected {len(NEWS_COLUMNS)} tab-separated columns, got {len(cols)}"),
                strict,
            )
            continue
        if not cols[0].strip():
            report.news_malformed += 1
            report.problem(DataError(path, number, "news_id", "empty news id"), strict)
            continue
        item = News(*(c.strip() for c in cols[:6]))
        if item.news_id in news:
            report.news_duplicate += 1
            continue
        news[item.news_id] = item
    report.news = len(news)
    if not news:
        raise DataError(path, None, None, "no news read")
    return news


def _parse_candidates(text: str) -> tuple[tuple[str, ...], tuple[int, ...] | None, str | None]:
    """(ids, labels or None, error message or None) of an impressions field."""
    ids, labels = [], []
    for token in text.split():
        news_id, dash, label = token.rpartition("-")
        if not dash:  # a bare id: the unlabelled test set
            ids.append(token)
            labels.append(None)
        elif label in ("0", "1") and news_id:
            ids.append(news_id)
            labels.append(int(label))
        else:
            return (), None, f"candidate {token!r}: expected NEWS_ID-0, NEWS_ID-1 or a bare NEWS_ID"
    if not ids:
        return (), None, "no candidates"
    if all(label is None for label in labels):
        return tuple(ids), None, None
    if any(label is None for label in labels):
        return (), None, "some candidates carry a label and some do not"
    return tuple(ids), tuple(labels), None


def read_behaviors(
    path: str | Path,
    news: dict[str, News] | None = None,
    report: MindReport | None = None,
    strict: bool = False,
) -> list[Impression]:
    """behaviors.tsv as Impressions, in file order. With `news`, references to unknown ids are counted in `report`."""
    path = Path(path)
    report = report if report is not None else MindReport()
    impressions, seen = [], set()
    for number, line in lines(path):
        cols = line.split("\t")
        if len(cols) != len(BEHAVIORS_COLUMNS):
            report.behaviors_malformed += 1
            report.problem(
                DataError(
                    path, number, None, f"expected {len(BEHAVIORS_COLUMNS)} tab-separated columns, got {len(cols)}"
                ),
                strict,
            )
            continue
        impression_id, user_id, time, history_text, candidates_text = (c.strip() for c in cols)
        if not impression_id:
            report.behaviors_malformed += 1
            report.problem(DataError(path, number, "impression_id", "empty impression id"), strict)
            continue
        if impression_id in seen:
            report.impressions_duplicate += 1
            report.problem(
                DataError(path, number, "impression_id", f"impression id {impression_id!r} repeated (the first kept)"),
                strict,
            )
            continue
        seen.add(impression_id)
        candidates, labels, error = _parse_candidates(candidates_text)
        if error:
            report.behaviors_malformed += 1
            report.problem(DataError(path, number, "impressions", error), strict)
            continue
        history = tuple(history_text.split())
        report.impressions += 1
        report.unlabelled_impressions += labels is None
        report.empty_histories += not history
        report.history_references += len(history)
        report.candidate_references += len(candidates)
        if news is not None:
            report.history_unknown += sum(h not in news for h in history)
            report.candidate_unknown += sum(c not in news for c in candidates)
        impressions.append(Impression(impression_id, user_id, time, history, candidates, labels, f"{path}:{number}"))
    if not impressions:
        raise DataError(path, None, None, "no impressions read")
    return impressions


def _find(folder: Path, stem: str) -> Path:
    for name in (f"{stem}.tsv", f"{stem}.tsv.gz", f"{stem}_sample.tsv", f"{stem}_sample.tsv.gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{folder}: no {stem}.tsv (or .tsv.gz) in this folder")


def load_mind(path: str | Path, news_path: str | Path | None = None, strict: bool = False) -> MindData:
    """A MIND split: `path` is a folder with news.tsv and behaviors.tsv (or .gz), or a behaviors file with its
    news.tsv beside it or at `news_path`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    folder = path if path.is_dir() else path.parent
    behaviors_path = _find(path, "behaviors") if path.is_dir() else path
    news_file = Path(news_path) if news_path else _find(folder, "news")
    report = MindReport()
    news = read_news(news_file, report, strict)
    impressions = read_behaviors(behaviors_path, news, report, strict)
    return MindData(news, impressions, report, str(path))


# ---------------------------------------------------------------------------------------------------------------
# MINDRec JSON -> MIND folder
# ---------------------------------------------------------------------------------------------------------------

_HISTORY_ITEM = re.compile(r'"(.*?)" in catagory ([A-Za-z_]+)(?:, |$)')
_TARGET = re.compile(r'Whether the user will click the target news "(.*)" in catagory ([A-Za-z_]+)\?\s*$')
_ANSWERS = {"Yes.": 1, "No.": 0}


def _stable_id(prefix: str, text: str) -> str:
    return prefix + hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def _parse_history(text: str, path: Path, record: int) -> list[tuple[str, str]]:
    if not text.startswith("User History: "):
        raise DataError(path, None, "input", f"record {record}: expected it to start with 'User History: '")
    body, items, at = text[len("User History: ") :], [], 0
    while at < len(body):
        match = _HISTORY_ITEM.match(body, at)
        if match is None:
            raise DataError(
                path, None, "input", f"record {record}: cannot read the history item at {body[at : at + 60]!r}"
            )
        items.append((match.group(1), match.group(2)))
        at = match.end()
    return items


def read_mindrec_records(path: Path) -> list:
    """The records of a MINDRec JSON file (a JSON list), .gz too."""
    with open_text(path) as f:
        try:
            records = json.load(f)
        except json.JSONDecodeError as error:
            raise DataError(path, error.lineno, None, f"not valid JSON: {error.msg}") from None
    if not isinstance(records, list):
        raise DataError(path, None, None, "expected a JSON list of records")
    return records


def parse_mindrec_input(record, path: Path, index: int) -> tuple[str, list[tuple[str, str]], tuple[str, str]]:
    """(history text, [(title, category) clicked], (target title, target category)) of one MINDRec record;
    `index` (0-based) names the record in errors."""
    if not isinstance(record, dict) or not isinstance(record.get("input"), str):
        raise DataError(path, None, "input", f"record {index}: expected a record with a string 'input'")
    history_text, newline, target_text = record["input"].partition("\n")
    target = _TARGET.match(target_text.strip())
    if not newline or target is None:
        raise DataError(path, None, "input", f"record {index}: cannot find the target news line")
    return history_text, _parse_history(history_text, path, index), (target.group(1), target.group(2))


def convert_mindrec(json_path: str | Path, output_dir: str | Path) -> dict[str, int]:
    """Write news.tsv and behaviors.tsv from a MINDRec JSON file (a list of {"instruction", "input", "output"}).

    Each record holds one user's clicked history (titles with categories) and one target title with the answer
    "Yes." (clicked) or "No.". News ids are "N" + a hash of the title; a user is a distinct history (user id "U" +
    its hash); all of a user's records in the file become one impression, which lists the user's targets with their
    click labels in an order shuffled per user (seeded by the user id, so a conversion is reproducible): MINDRec lists
    a user's clicked target first, and candidates left in file order would tell any ranker that breaks ties in
    candidate order (as ranks written for MIND's scorer must) which one was clicked. Titles carry no subcategory,
    abstract, url or entities: those columns are written empty (the subcategory repeats the category). Records that
    cannot be read raise with their index (0-based). Returns counts.
    """
    json_path, output_dir = Path(json_path), Path(output_dir)
    records = read_mindrec_records(json_path)
    news: dict[str, tuple[str, str]] = {}  # id -> (category, title)
    users: dict[str, dict] = {}  # history text -> {"history": [...], "candidates": [...], "labels": [...]}
    category_conflicts = 0

    def news_id(title: str, category: str) -> str:
        nonlocal category_conflicts
        nid = _stable_id("N", title)
        if nid not in news:
            news[nid] = (category, title)
        elif news[nid][0] != category:
            category_conflicts += 1  # the same title filed under two categories: the first is kept
        return nid

    for index, record in enumerate(records):
        history_text, clicked, target = parse_mindrec_input(record, json_path, index)
        answer = str(record.get("output", "")).strip()
        if answer not in _ANSWERS:
            raise DataError(json_path, None, "output", f"record {index}: expected 'Yes.' or 'No.', got {answer!r}")
        user = users.get(history_text)
        if user is None:
            history = [news_id(t, c) for t, c in clicked]
            user = users[history_text] = dict(history=history, candidates=[], labels=[])
        user["candidates"].append(news_id(*target))
        user["labels"].append(_ANSWERS[answer])

    output_dir.mkdir(parents=True, exist_ok=True)
    with (output_dir / "news.tsv").open("w", encoding="utf-8", newline="") as f:
        for nid, (category, title) in news.items():
            f.write("\t".join([nid, category, category, title.replace("\t", " "), "", "", "[]", "[]"]) + "\n")
    with (output_dir / "behaviors.tsv").open("w", encoding="utf-8", newline="") as f:
        for number, (history_text, user) in enumerate(users.items(), 1):
            user_id = _stable_id("U", history_text)
            pairs = list(zip(user["candidates"], user["labels"], strict=True))
            random.Random(user_id).shuffle(pairs)
            impressions = " ".join(f"{c}-{y}" for c, y in pairs)
            f.write("\t".join([str(number), user_id, "", " ".join(user["history"]), impressions]) + "\n")
    return dict(
        records=len(records),
        news=len(news),
        users=len(users),
        impressions=len(users),
        clicks=sum(sum(u["labels"]) for u in users.values()),
        category_conflicts=category_conflicts,
    )
