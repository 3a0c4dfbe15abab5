"""Parquet, as Hugging Face's datasets ship (stanfordnlp/imdb, yelp_review_full, cnn_dailymail: `*.parquet`): every
reader takes a Parquet file's rows as it takes JSON Lines records (fields by name, `--where` filters, errors at their
row). Written here from the shared data's real rows, each must read as the same file in JSON Lines (or CSV) does."""

from __future__ import annotations

import csv
import gzip
import json
from itertools import islice

import pytest

from fastformer.data import DataError, read_examples
from fastformer.data.summarization import read_pairs
from fastformer.data.text_corpus import numbered_texts, read_texts
from tests.helpers import SHARED

parquet = pytest.importorskip("pyarrow.parquet")
import pyarrow  # noqa: E402  (after the skip: pyarrow is an optional dependency)

DATA = SHARED / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data missing: {DATA}")


def _write(rows: list[dict], path):
    parquet.write_table(pyarrow.Table.from_pylist(rows), path, row_group_size=64)  # several row groups
    return path


def _imdb(n: int) -> list[dict]:
    """n real reviews of each sentiment and split (the file holds train pos, train neg, test pos, test neg)."""
    with gzip.open(DATA / "imdb" / "imdb_ratings.jsonl.gz", "rt") as f:
        lines = list(f)
    return [json.loads(line) for start in range(0, 50_000, 12_500) for line in lines[start : start + n]]


@needs_data
def test_imdb_as_hugging_face_ships_it_reads_as_its_json_lines(tmp_path):
    """stanfordnlp/imdb's columns (text, label 0 / 1) plus the split, from 300 real reviews of both splits: the same
    examples as the same rows in JSON Lines, filters included; the row a field is missing from is named."""
    rows = [dict(text=r["text"], label=int(r["rating"] >= 7), split=r["split"]) for r in _imdb(75)]
    path = _write(rows, tmp_path / "train-00000-of-00001.parquet")
    (tmp_path / "same.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = read_examples(path, where={"split": "train"})
    expected = read_examples(tmp_path / "same.jsonl", where={"split": "train"})
    assert [(e.text, e.label) for e in read] == [(e.text, e.label) for e in expected] and len(read) == 150
    assert {e.label for e in read} == {"0", "1"} and read[41].source == f"{path}:42"
    assert [e.source for e in read_examples(path, where={"split": "test"})][:1] == [f"{path}:151"]
    with pytest.raises(DataError, match=r"train-00000-of-00001.parquet:1: field 'review': missing"):
        read_examples(path, text_field="review")


@needs_data
def test_a_corpus_and_a_file_to_predict_for_read_their_rows(tmp_path):
    with gzip.open(DATA / "imdb" / "imdb_unsup.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in islice(f, 100)]
    path = _write(rows, tmp_path / "unsup.parquet")
    assert list(read_texts(path)) == [r["text"] for r in rows]
    assert list(numbered_texts(path)) == [(i, r["text"]) for i, r in enumerate(rows, start=1)]
    assert [t for _, t in numbered_texts(path, "movie")] == [r["movie"] for r in rows]
    from fastformer.cli.streaming import inputs

    # predict's records name a Parquet file's input by its row (a line of JSON Lines, a row here)
    assert list(islice(inputs(["a text"], str(path)), 3)) == [
        ("argument", 1, "a text"),
        ("row", 1, rows[0]["text"]),
        ("row", 2, rows[1]["text"]),
    ]


@needs_data
def test_cnn_dailymail_as_hugging_face_ships_it_reads_as_its_csv(tmp_path):
    with gzip.open(DATA / "cnndm" / "test_first500.csv.gz", "rt") as f:
        rows = list(islice(csv.DictReader(f), 30))
    path = _write(rows, tmp_path / "test-00000-of-00001.parquet")
    from_csv = read_pairs(DATA / "cnndm" / "test_first500.csv.gz")[:30]
    read = read_pairs(path)
    assert [(p.source, p.target) for p in read] == [(p.source, p.target) for p in from_csv]


def test_a_damaged_parquet_file_is_one_line(tmp_path):
    path = _write([{"text": "a fine film", "label": 1}] * 10, tmp_path / "d.parquet")
    path.write_bytes(path.read_bytes()[:-20])  # its footer cut
    with pytest.raises(DataError) as refused:
        read_examples(path)
    assert str(refused.value).startswith(f"{path}: not a readable Parquet file") and "\n" not in str(refused.value)
    empty = tmp_path / "empty.parquet"
    parquet.write_table(pyarrow.table({"text": pyarrow.array([], pyarrow.string())}), empty)
    with pytest.raises(DataError, match="empty.parquet: the file is empty"):
        read_examples(empty)
