"""MIND readers on the real samples and on broken files; the MINDRec converter on the real MINDRec files."""

import gzip
import json

import pytest

from fastformer.data import DataError
from fastformer.data.mind import convert_mindrec, load_mind, read_behaviors, read_news
from fastformer.metrics.ranking import mind_metrics, rank_scores
from tests.helpers import SHARED

MIND = SHARED / "data" / "mind"
NEWS_LINE = "N1\tsports\tgolf\tA title\tAn abstract\thttps://x\t[]\t[]\n"


def test_real_samples_count_unknown_ids_and_empty_histories():
    data = load_mind(MIND)  # news_sample.tsv.gz + behaviors_sample.tsv.gz: independent samples of MIND-small
    r = data.report
    assert (r.news, r.impressions, r.news_malformed, r.behaviors_malformed) == (2000, 5000, 0, 0)
    assert r.empty_histories == sum(not imp.history for imp in data.impressions) > 0
    assert r.history_references == sum(len(imp.history) for imp in data.impressions)
    assert r.history_unknown == sum(h not in data.news for imp in data.impressions for h in imp.history)
    assert 0.9 < r.candidate_unknown / r.candidate_references < 1  # most referenced ids are missing: counted
    assert "name news not in news.tsv" in r.summary() and "empty history" in r.summary()
    first = data.impressions[0]
    assert first.labels is not None and len(first.labels) == len(first.candidates)
    assert set(first.labels) <= {0, 1} and first.source.endswith(":1")
    assert data.news["N16278"].category == "sports" and data.news["N16278"].text(["category", "title"]).startswith(
        "sports | Silver Spring"
    )


def test_malformed_lines_are_counted_with_file_line_and_field(tmp_path):
    (tmp_path / "news.tsv").write_text(NEWS_LINE + "N2\tonly three\tcolumns\n" + "N1\tdup\tdup\tt\t\t\t[]\t[]\n")
    (tmp_path / "behaviors.tsv").write_text(
        "1\tU1\t11/11/2019 9:05:58 AM\tN1 N9\tN1-1 N9-0\n"  # fine; N9 unknown (history and candidate)
        "2\tU2\t\t\tN1-2\n"  # label 2
        "3\tU3\t\tN1\tN1-1 N1\n"  # labelled and unlabelled mixed
        "4\tU4\t\tN1\t\n"  # no candidates
        "5\tU5\t\tN1\n"  # four columns
        "6\tU6\t\t\tN1 N9\n"  # unlabelled (test set) and empty history: fine
        "1\tU7\t\tN1\tN1-0 N9-1\n"  # impression id 1 again
    )
    data = load_mind(tmp_path)
    r = data.report
    assert (r.news, r.news_malformed, r.news_duplicate) == (1, 1, 1)
    assert (r.impressions, r.behaviors_malformed, r.unlabelled_impressions, r.empty_histories) == (2, 4, 1, 1)
    assert (r.history_unknown, r.candidate_unknown) == (1, 2)
    assert [imp.impression_id for imp in data.impressions] == ["1", "6"] and data.impressions[1].labels is None
    problems = "\n".join(r.problems)
    assert "news.tsv:2: expected 8 tab-separated columns, got 3" in problems
    assert "behaviors.tsv:2: field 'impressions': candidate 'N1-2'" in problems
    assert "behaviors.tsv:3: field 'impressions': some candidates carry a label" in problems
    assert "behaviors.tsv:4: field 'impressions': no candidates" in problems
    assert "behaviors.tsv:7: field 'impression_id': impression id '1' repeated (the first kept)" in problems
    assert r.impressions_duplicate == 1 and "1 repeated impression ids skipped" in r.summary()
    with pytest.raises(DataError, match=r"news.tsv:2: expected 8"):
        load_mind(tmp_path, strict=True)


def test_behaviors_file_path_and_missing_files(tmp_path):
    (tmp_path / "news.tsv").write_text(NEWS_LINE)
    (tmp_path / "dev.tsv").write_text("7\tU1\t\tN1\tN1-0 N1-1\n")
    data = load_mind(tmp_path / "dev.tsv", news_path=tmp_path / "news.tsv")
    assert data.impressions[0].labels == (0, 1)
    with pytest.raises(FileNotFoundError, match="no behaviors.tsv"):
        load_mind(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_mind(tmp_path / "nope")
    (tmp_path / "empty.tsv").write_text("\n")
    with pytest.raises(DataError, match="no impressions read"):
        read_behaviors(tmp_path / "empty.tsv")
    with pytest.raises(DataError, match="no news read"):
        read_news(tmp_path / "empty.tsv")


def test_convert_real_mindrec_keeps_every_record(tmp_path):
    source = MIND / "mindrec20_valid.json.gz"
    counts = convert_mindrec(source, tmp_path)
    records = json.load(gzip.open(source))
    assert counts["records"] == len(records) == 2006
    assert counts["clicks"] == sum(r["output"] == "Yes." for r in records)
    data = load_mind(tmp_path)
    r = data.report
    assert (r.news_malformed, r.behaviors_malformed, r.history_unknown, r.candidate_unknown) == (0, 0, 0, 0)
    assert len(data.impressions) == counts["users"] == len({r["input"].split("\n")[0] for r in records})
    assert sum(len(imp.candidates) for imp in data.impressions) == len(records)
    # the first record: its history titles in order, its target with its label, in the first impression
    first, imp = records[0], data.impressions[0]
    titles = [data.news[h].title for h in imp.history]
    assert (
        titles[0] == "Foie Gras Is Banned by New York City" and len(titles) == first["input"].count(" in catagory ") - 1
    )
    target = first["input"].split('target news "')[1].rsplit('" in catagory', 1)[0]
    at = [data.news[c].title for c in imp.candidates].index(target)
    assert imp.labels[at] == (first["output"] == "Yes.")
    assert data.news[imp.candidates[at]].category == first["input"].rsplit("in catagory ", 1)[1].rstrip("?")
    # MINDRec lists each user's click first; the converted order must not say which candidate was clicked:
    # ranking every impression in candidate order scores near chance, not the AUC 1.0 file order gave
    order = [rank_scores([0] * len(i.candidates)) for i in data.impressions]
    assert 0.4 < mind_metrics([i.labels for i in data.impressions], order)["auc"] < 0.6
    again = tmp_path / "again"
    convert_mindrec(source, again)  # the shuffle is seeded: a conversion is reproducible
    assert (again / "behaviors.tsv").read_text() == (tmp_path / "behaviors.tsv").read_text()


def test_convert_rejects_unreadable_records(tmp_path):
    bad = tmp_path / "bad.json"
    good_input = 'User History: "A" in catagory news\nWhether the user will click the target news "B" in catagory news?'
    bad.write_text(json.dumps([{"input": good_input, "output": "Yes."}, {"input": good_input, "output": "Maybe"}]))
    with pytest.raises(DataError, match=r"bad.json: field 'output': record 1: expected 'Yes.' or 'No.'"):
        convert_mindrec(bad, tmp_path / "out")
    bad.write_text(json.dumps([{"input": 'User History: "A" in catagory news\nno target', "output": "No."}]))
    with pytest.raises(DataError, match="cannot find the target news line"):
        convert_mindrec(bad, tmp_path / "out")
    bad.write_text("[{")
    with pytest.raises(DataError, match="not valid JSON"):
        convert_mindrec(bad, tmp_path / "out")
