"""MIND news topic classification: the readers on the real shared files, malformed rows, the title-disjoint split."""

import gzip
import json

import pytest

from fastformer.data import DataError, read_examples
from fastformer.data.mind_topics import normalise_title, read_topics, title_disjoint_split
from tests.helpers import SHARED

MIND = SHARED / "data" / "mind"
FILES = [MIND / "news_sample.tsv.gz", MIND / "mindrec20_valid.json.gz", MIND / "mindrec20_test.json.gz"]
needs_data = pytest.mark.skipif(not MIND.is_dir(), reason="shared data missing")


@needs_data
def test_real_files_exact_counts():
    examples, report = read_topics(FILES)
    assert report.kept == len(examples) == 9517 and report.rows == 72970
    assert report.duplicate_texts == 63453 and report.duplicate_ids == 0 and report.without_category == 0
    assert report.category_conflicts == 1  # one title filed under two categories: the more frequent one is kept
    assert len(report.categories) == 15
    assert report.categories["news"] == 2985 and report.categories["sports"] == 1790
    assert report.categories["finance"] == 714 and report.categories["kids"] == 3
    assert len({normalise_title(e.text) for e in examples}) == len(examples)  # every news once

    news, report = read_topics(FILES[0], "title,abstract", "subcategory")
    assert report.kept == 1999 and report.duplicate_texts == 1 and len(report.categories) > 15
    assert " | " in news[0].text  # title | abstract
    assert read_examples(FILES[0], format="mind-topics") == read_topics(FILES[0])[0]
    assert len(read_examples(",".join(map(str, FILES)), format="mind-topics")) == 9517


def _news_tsv(tmp_path, rows, name="news.tsv"):
    path = tmp_path / name
    path.write_text("".join("\t".join(row) + "\n" for row in rows))
    return path


def _row(news_id, category, title, abstract="", body=None):
    row = [news_id, category, category + "sub", title, abstract, "", "[]", "[]"]
    return row + [body] if body is not None else row


@pytest.mark.parametrize(
    "rows, message",
    [
        ([_row("N1", "news", "a"), ["N2", "news", "b"]], r"news.tsv:2: expected 8 tab-separated columns"),
        ([_row("N1", "news", "a"), _row("", "news", "b")], r"news.tsv:2: field 'news_id': empty news id"),
    ],
)
def test_malformed_news_rows_name_file_line_and_field(tmp_path, rows, message):
    with pytest.raises(DataError, match=message):
        read_topics(_news_tsv(tmp_path, rows))


def test_counts_of_what_is_dropped_and_the_body_column(tmp_path):
    rows = [
        _row("N1", "news", "Same Title"),
        _row("N1", "sports", "other"),
        _row("N2", "", "no category"),
        _row("N3", "sports", "same  title"),
        _row("N4", "sports", "  "),
        _row("N5", "news", "Third"),
    ]
    examples, report = read_topics(_news_tsv(tmp_path, rows))
    assert [(e.text, e.label) for e in examples] == [("Same Title", "news"), ("Third", "news")]
    assert (report.duplicate_ids, report.without_category, report.duplicate_texts, report.empty_texts) == (1, 1, 1, 1)
    assert report.category_conflicts == 1  # news once, sports once: a tie goes to the first name alphabetically
    with pytest.raises(DataError, match=r"news.tsv:1: field 'body': .* no ninth column"):
        read_topics(_news_tsv(tmp_path, rows), "body")
    bodies = _news_tsv(tmp_path, [_row("N1", "news", "t", body="the body")], "bodies.tsv")
    assert read_topics(bodies, "body")[0][0].text == "the body"
    with pytest.raises(ValueError, match="choose from"):
        read_topics(bodies, "url")


def test_mindrec_malformed_record(tmp_path):
    target = '\nWhether the user will click the target news "{}" in catagory {}?'
    records = [
        {"input": 'User History: "A" in catagory news' + target.format("B", "sports"), "output": "Yes."},
        {"input": "User History: broken" + target.format("C", "tv"), "output": "No."},
    ]
    path = tmp_path / "rec.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(records, f)
    with pytest.raises(DataError, match=r"rec.json.gz: field 'input': record 1: cannot read the history"):
        read_topics(path)
    with gzip.open(path, "wt") as f:
        json.dump(records[:1], f)
    assert [(e.text, e.label, e.source[-2:]) for e in read_topics(path)[0]] == [
        ("A", "news", ":1"),
        ("B", "sports", ":1"),
    ]


@needs_data
def test_split_is_title_disjoint_stratified_and_independent_of_file_order():
    examples, _ = read_topics(FILES)
    splits, counts = title_disjoint_split(examples, 0.1, 0.1, seed=0)
    keys = {name: {normalise_title(e.text) for e in items} for name, items in splits.items()}
    assert not keys["train"] & keys["test"] and not keys["train"] & keys["validation"]
    assert not keys["validation"] & keys["test"]
    assert sum(len(v) for v in splits.values()) == len(examples)
    assert counts["test"]["kids"] == counts["validation"]["kids"] == 1  # rare categories reach every split
    assert len(counts["test"]) == 15
    shuffled, _ = read_topics(list(reversed(FILES)))
    again, _ = title_disjoint_split(list(reversed(shuffled)), 0.1, 0.1, seed=0)
    assert all([e.text for e in again[n]] == [e.text for e in splits[n]] for n in splits)  # same split, any order
    other, _ = title_disjoint_split(examples, 0.1, 0.1, seed=1)
    assert [e.text for e in other["test"]] != [e.text for e in splits["test"]]
    with pytest.raises(ValueError, match="must leave examples for training"):
        title_disjoint_split(examples, 0.5, 0.5)
