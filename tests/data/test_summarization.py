"""Document / summary readers on the real CNN/DailyMail, Cohan PubMed and SumPubMed files, and on broken files."""

import gzip
import json

import pytest

from fastformer.data import DataError
from fastformer.data.summarization import lead, read_pairs, split_sentences
from tests.helpers import SHARED

CNNDM = SHARED / "data" / "cnndm"
PUBMED = SHARED / "data" / "pubmed"


def test_cnndm_csv():
    pairs = read_pairs(CNNDM / "test_first500.csv.gz")
    assert len(pairs) == 500 and pairs.skipped_empty == []
    first = pairs[0]
    assert first.source.startswith("(CNN)The Palestinian Authority officially became the 123rd member")
    assert first.target.split("\n")[0].startswith("Membership gives the ICC jurisdiction")  # highlights, one per line
    assert lead(first).split("\n")[1].startswith("The formal accession was marked with a ceremony at The Hague")
    assert first.origin.endswith("test_first500.csv.gz:2")


def test_cohan_pubmed_tags_removed_and_empty_articles_skipped():
    pairs = read_pairs(PUBMED / "cohan_sample_train.jsonl.gz")
    records = [json.loads(line) for line in gzip.open(PUBMED / "cohan_sample_train.jsonl.gz", "rt")]
    empty = [i + 1 for i, r in enumerate(records) if not " ".join(r["article_text"]).strip()]
    assert len(pairs) + len(pairs.skipped_empty) == len(records) and len(empty) == len(pairs.skipped_empty) > 0
    assert pairs.skipped_empty[0].endswith(f":{empty[0]}: field 'article_text': empty")
    first = pairs[0]
    assert "<S>" not in first.target and "</S>" not in first.target
    assert first.target.count("\n") == len(records[0]["abstract_text"]) - 1  # one line per abstract sentence
    assert first.source_sentences[0] == " ".join(records[0]["article_text"][0].split())


def test_cohan_txt_files_are_read_as_json_lines(tmp_path):
    text = gzip.open(PUBMED / "cohan_sample_test.jsonl.gz", "rt").read()
    (tmp_path / "test.txt").write_text(text)  # Cohan et al. ship JSON Lines named .txt
    assert len(read_pairs(tmp_path / "test.txt")) == len(read_pairs(PUBMED / "cohan_sample_test.jsonl.gz"))
    (tmp_path / "plain.txt").write_text("just text\n")
    with pytest.raises(DataError, match="cannot tell the format"):
        read_pairs(tmp_path / "plain.txt")


def test_sumpubmed_chosen_fields_and_headings():
    pairs = read_pairs(PUBMED / "sumpubmed_first5000.jsonl.gz", "text", "shorter_abstract")
    assert len(pairs) == 5000
    assert all("BACKGROUND" not in s for s in pairs[0].source_sentences[:5])  # section headings are not sentences


def test_sentence_splitter():
    assert split_sentences('(CNN)The man said. He left! "Why?" she asked. The U.S. army came.') == [
        "(CNN)The man said.",
        "He left!",
        '"Why?" she asked.',
        "The U.S. army came.",
    ]
    assert split_sentences("first line\nsecond. third") == ["first line", "second.", "third"]


def test_bad_rows_name_file_line_and_field(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"article": "a b", "highlights": "c"}) + "\n" + json.dumps({"article": "x"}) + "\n")
    with pytest.raises(DataError, match=r"pairs.jsonl:2: field 'highlights': missing"):
        read_pairs(path)
    path.write_text(json.dumps({"article": 3, "highlights": "c"}) + "\n")
    with pytest.raises(DataError, match=r"pairs.jsonl:1: field 'article': expected a string, got int"):
        read_pairs(path)
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_text('article,summary\n"a b",c\n')
    with pytest.raises(DataError, match=r"pairs.csv:1: field 'highlights': no such column"):
        read_pairs(csv_path)
    csv_path.write_text('article,highlights\n"a b",c,extra\n')
    with pytest.raises(DataError, match=r"pairs.csv:2: expected 2 fields, found 3"):
        read_pairs(csv_path)
    csv_path.write_text("article,highlights\n,c\n")
    with pytest.raises(DataError, match="no pairs read"):
        read_pairs(csv_path)
    with pytest.raises(FileNotFoundError):
        read_pairs(tmp_path / "missing.csv")


def test_cnndm_as_released_a_folder_of_story_files(tmp_path):
    """CNN/DailyMail's release (Hermann et al. 2015): cnn/stories/<id>.story, the article's paragraphs and then each
    highlight after an @highlight line. Written from the CSV's real rows (whose `id` is the story's name), the folder
    reads as the same pairs; a story with no article is skipped and counted, one with no highlight is an error naming
    it, and the folder above stories/ is named with what it holds."""
    import csv

    with gzip.open(CNNDM / "test_first500.csv.gz", "rt") as f:
        rows = [row for _, row in zip(range(20), csv.DictReader(f), strict=False)]
    stories = tmp_path / "cnn" / "stories"
    stories.mkdir(parents=True)
    for row in rows:
        paragraphs = row["article"].replace(". ", ".\n\n", 3)  # a few paragraphs, as the .story files keep them
        highlights = "".join(f"\n\n@highlight\n\n{h}" for h in row["highlights"].split("\n"))
        (stories / f"{row['id']}.story").write_text(paragraphs + highlights + "\n")
    (stories / f"._{rows[0]['id']}.story").write_bytes(b"\0\5\26\7 a macOS resource fork, not a story")
    by_id = {row["id"]: pair for row, pair in zip(rows, read_pairs(CNNDM / "test_first500.csv.gz"), strict=False)}
    pairs = read_pairs(stories)
    assert len(pairs) == 20 and pairs.skipped_empty == []
    for pair in pairs:
        expected = by_id[pair.origin.rsplit("/", 1)[1].removesuffix(".story:1")]
        assert (pair.source, pair.target) == (expected.source, expected.target)
        assert lead(pair) == lead(expected)
    (stories / "0000empty.story").write_text("\n@highlight\n\nA highlight of an article that is not there\n")
    assert read_pairs(stories).skipped_empty == [f"{stories / '0000empty.story'}:1: field 'article': empty"]
    (stories / "0001cut.story").write_text("An article whose highlights were cut off.\n")
    with pytest.raises(DataError, match=r"0001cut.story: field 'highlights': no @highlight line"):
        read_pairs(stories)
    with pytest.raises(DataError, match=r"cnn: a folder of pairs holds CNN/DailyMail's .story files; it has none \("):
        read_pairs(tmp_path / "cnn")
    with pytest.raises(DataError, match="format 'csv' reads a file"):
        read_pairs(stories, format="csv")


def test_cnndm_standard_split_a_url_list_read_from_the_story_folders(tmp_path):
    """CNN/DailyMail's standard split is three URL lists (url_lists/all_train.txt, all_val.txt, all_test.txt), each
    URL's story named by the SHA-1 of the URL, in cnn/stories/ or dailymail/stories/ beside url_lists/. Stories
    written from the CSV's real rows under the hashes of made-up URLs read back in the list's order, both folders
    searched; a URL without its story is refused naming the list's line, a list with no story folders near it too,
    and `fastformer train summarize` takes a list as --train and --test (Lead-3 here)."""
    import csv
    import hashlib

    from fastformer.cli.main import main

    with gzip.open(CNNDM / "test_first500.csv.gz", "rt") as f:
        rows = [row for _, row in zip(range(12), csv.DictReader(f), strict=False)]
    expected = read_pairs(CNNDM / "test_first500.csv.gz")[:12]
    root = tmp_path / "cnn_dm"
    (root / "url_lists").mkdir(parents=True)
    urls = []
    for i, row in enumerate(rows):
        site = "cnn" if i % 2 else "dailymail"
        url = f"http://web.archive.org/web/2015/http://www.{site}.com/article-{i}.html"
        urls.append(url)
        folder = root / site / "stories"
        folder.mkdir(parents=True, exist_ok=True)
        highlights = "".join(f"\n\n@highlight\n\n{h}" for h in row["highlights"].split("\n"))
        (folder / f"{hashlib.sha1(url.encode()).hexdigest()}.story").write_text(row["article"] + highlights + "\n")
    order = [5, 0, 11, 2, 7, 3]  # the list's order, not the folders'
    train_list, test_list = root / "url_lists" / "all_train.txt", root / "url_lists" / "all_test.txt"
    train_list.write_text("".join(urls[i] + "\n" for i in order) + "\n")
    test_list.write_text("".join(urls[i] + "\n" for i in (1, 4, 6, 8, 9, 10)))
    pairs = read_pairs(train_list)
    assert [(p.source, p.target) for p in pairs] == [(expected[i].source, expected[i].target) for i in order]
    out = tmp_path / "lead3"
    args = ["train", "summarize", "--train", str(train_list), "--test", str(test_list), "--architecture", "lead3"]
    assert main([*args, "--validation-fraction", "0.5", "--output-dir", str(out), "--no-progress"]) == 0
    assert json.loads((out / "metrics.json").read_text())["test"]["examples"] == 6
    test_list.write_text(urls[1] + "\nhttp://www.cnn.com/a-story-not-downloaded.html\n")
    with pytest.raises(DataError, match=r"all_test.txt:2: no [0-9a-f]{40}.story for this URL in .*cnn/stories"):
        read_pairs(test_list)
    alone = tmp_path / "elsewhere" / "all_val.txt"
    alone.parent.mkdir()
    alone.write_text(urls[0] + "\n")
    with pytest.raises(DataError, match="a URL list reads cnn/stories/ and dailymail/stories/; neither is in"):
        read_pairs(alone)
