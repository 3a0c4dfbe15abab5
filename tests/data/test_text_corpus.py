"""`numbered_texts`: the texts of a file to predict for, each with the line its record starts at, from IMDB's JSON
Lines and Yelp's header-less CSV as they are shipped, and from files with a header row, lists, nulls and blanks; a
record without its text is an error naming the file and line, never a JSON line read as a text."""

import gzip
import json
from itertools import islice
from pathlib import Path

import pytest

from fastformer.data.files import DataError
from fastformer.data.text_corpus import numbered_texts

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_imdb_json_lines_read_their_text_field_with_the_filter_and_the_line():
    path = DATA / "imdb" / "imdb_ratings.jsonl.gz"
    with gzip.open(path, "rt") as lines:
        records = [json.loads(line) for line in islice(lines, 200)]
    assert list(islice(numbered_texts(path), 6)) == [(i + 1, r["text"]) for i, r in enumerate(records[:6])]
    rated = [(i + 1, r["text"]) for i, r in enumerate(records) if r["rating"] == 10]
    assert len(rated) >= 3 and list(islice(numbered_texts(path, where={"rating": "10"}), 3)) == rated[:3]


def test_yelp_csv_without_a_header_row_reads_a_column_by_position_and_refuses_a_name(tmp_path):
    with gzip.open(DATA / "yelp5" / "yelp_test.csv.gz", "rt") as lines:
        head = "".join(islice(lines, 3))
    path = tmp_path / "yelp.csv"
    path.write_text(head)
    import csv
    import io

    rows = list(csv.reader(io.StringIO(head)))
    assert list(numbered_texts(path, "1")) == [(1, rows[0][1]), (2, rows[1][1]), (3, rows[2][1])]
    with pytest.raises(
        DataError, match=r"yelp.csv:1: field 'text': no such column in the header row \['\d', '.{30}\.\.\.'\]"
    ):
        list(numbered_texts(path))


def test_header_rows_lists_nulls_and_blanks(tmp_path):
    csv_file = tmp_path / "reviews.tsv"
    csv_file.write_text('id\treview\n1\tA fine film\n\n2\t"dull,\nlong"\n')
    assert list(numbered_texts(csv_file, "review")) == [(2, "A fine film"), (4, "dull,\nlong")]
    assert list(numbered_texts(csv_file, default_field="review")) == [(2, "A fine film"), (4, "dull,\nlong")]
    assert list(numbered_texts(csv_file)) == [(2, "A fine film"), (4, "dull,\nlong")]  # the one usual text name
    titled = tmp_path / "titled.csv"
    titled.write_text("title,review,stars\nFine,A fine film,5\n")
    assert list(numbered_texts(titled)) == [(2, "A fine film")]  # title and review: the review, as training reads
    with pytest.raises(DataError, match=r"titled.csv:1: field 'Title': no such column"):  # asked for: never guessed
        list(numbered_texts(titled, "Title"))
    titled.write_text("title,headline\nFine,A fine film\n")
    with pytest.raises(DataError, match=r"titled.csv:1: field 'text': no such column in the header row \['title'"):
        list(numbered_texts(titled))
    lines = tmp_path / "docs.jsonl"
    records = [{"article": ["One.", "Two."]}, {"article": None}, {"article": "Three."}]
    lines.write_text(json.dumps(records[0]) + "\n\n" + "".join(json.dumps(r) + "\n" for r in records[1:]))
    assert list(numbered_texts(lines, "article")) == [(1, "One.\nTwo."), (3, ""), (4, "Three.")]
    lines.write_text('{"text": "a review"}\n')  # a run trained on a header-less CSV's column 1, at JSON Lines
    assert list(numbered_texts(lines, default_field="1")) == [(1, "a review")]
    plain = tmp_path / "texts.txt"
    plain.write_text('good\n\n{"text": "read as it is"}\n')
    assert list(numbered_texts(plain)) == [(1, "good"), (2, ""), (3, '{"text": "read as it is"}')]


def test_cohans_pubmed_named_txt_is_read_as_json_lines_its_sentences_a_line_each(tmp_path):
    """Cohan et al. ship their JSON Lines as test.txt: the first line, a JSON object, says what the file is."""
    with gzip.open(DATA / "pubmed" / "cohan_sample_test.jsonl.gz", "rt") as lines:
        first = next(lines)
    path = tmp_path / "test.txt"
    path.write_text(first)
    assert list(numbered_texts(path, "article_text")) == [(1, "\n".join(json.loads(first)["article_text"]))]
    with pytest.raises(DataError, match=r"test.txt:1: field 'article': missing; the record has \['abstract_text'"):
        list(numbered_texts(path, default_field="article"))


@pytest.mark.parametrize(
    "name, content, options, says",
    [
        (
            "a.jsonl",
            '{"text": "ok"}\n{"review": "x"}\n',
            {},
            r"a.jsonl:2: field 'text': missing; the record has \['review'\]",
        ),
        ("a.jsonl", '{"text": 3}\n', {}, "a.jsonl:1: field 'text': expected a string or a list of strings, got int"),
        ("a.jsonl", '{"text": "ok"}\nnot json\n', {}, "a.jsonl:2: not valid JSON"),
        (
            "a.csv",
            "id,text\n1,ok\n",
            {"where": {"id": "1"}},
            r"--where filters JSON Lines records \({'id': '1'}\); this file is read as csv",
        ),
        ("a.csv", "a,b\n1\n", {"text_field": "1"}, "a.csv:2: field '1': the row has 1 columns"),
        ("a.csv", "", {}, "the file is empty"),
        ("a.txt", "ok\n", {"text_field": "text"}, "--text-field reads JSON Lines / CSV / TSV files"),
        ("a.txt", "ok\n", {"where": {"a": "b"}}, r"\); this file is read as one text a line"),
    ],
)
def test_refusals_name_the_file_and_line(tmp_path, name, content, options, says):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=says):
        list(numbered_texts(path, **options))


def test_a_filter_on_a_file_that_is_not_json_lines_is_refused_by_every_reader():
    """`--where split=test` on Yelp's CSV (or on the corpus or summarization readers' CSV) read every row: an
    evaluation on all of a file that the user asked to filter. Now one line naming the file."""
    from fastformer.data import read_examples
    from fastformer.data.summarization import read_pairs
    from fastformer.data.text_corpus import read_texts

    yelp, cnndm = DATA / "yelp5" / "yelp_dev.csv.gz", DATA / "cnndm" / "test_first500.csv.gz"
    sst = DATA / "sst5"
    sst_file = next(p for p in sorted(sst.iterdir()) if not p.name.endswith(".md"))
    for read, path in (
        (lambda p, w: read_examples(p, where=w), yelp),
        (lambda p, w: read_examples(p, where=w), sst_file),
        (lambda p, w: list(read_texts(p, where=w)), cnndm),
        (lambda p, w: read_pairs(p, where=w), cnndm),
        (lambda p, w: list(numbered_texts(p, "1", where=w)), yelp),
    ):
        with pytest.raises(
            DataError, match=rf"{path.name}: --where filters JSON Lines records \({{'split': 'test'}}\)"
        ):
            read(path, {"split": "test"})
    assert len(read_examples(DATA / "imdb" / "imdb_ratings.jsonl.gz", label_field="rating", where={"id": "8035"})) >= 1


def test_a_cell_longer_than_csvs_default_limit_is_read_by_every_reader(tmp_path):
    """A document of 200,000 characters in one CSV cell (a long article; csv's default limit is 131,072) was refused
    as a "malformed row" by every CSV reader."""
    from fastformer.data import read_examples
    from fastformer.data.summarization import read_pairs
    from fastformer.data.text_corpus import read_texts

    with gzip.open(DATA / "imdb" / "imdb_unsup.jsonl.gz", "rt") as lines:
        document = ""
        for line in lines:
            document += json.loads(line)["text"] + " "
            if len(document) > 200_000:
                break
    path = tmp_path / "long.csv"
    with path.open("w", newline="") as f:
        import csv

        csv.writer(f).writerows([["label", "text", "summary"], ["pos", document, "a summary"]])
    assert read_examples(path)[0].text == document
    assert read_pairs(path, "text", "summary")[0].raw_source == document
    assert list(read_texts(path)) == [document] and list(numbered_texts(path)) == [(2, document)]


def test_a_headerless_label_title_body_csv_reads_its_text_columns_joined_as_training_does(tmp_path):
    """MIND's real news written as a header-less "category","title","abstract" CSV (Zhang et al.'s layout): training
    reads title and body joined; `--text-field 1,2` reads the same texts to predict for, and the refusal without a
    field says so."""
    import csv

    from fastformer.data.text_classification import read_examples

    with gzip.open(DATA / "mind" / "news_sample.tsv.gz", "rt", encoding="utf-8") as f:
        news = [line.rstrip("\n").split("\t") for line in islice(f, 30)]
    path = tmp_path / "news.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([n[1], n[3], n[4]] for n in news)
    trained_on = [e.text for e in read_examples(path)]
    assert [text for _, text in numbered_texts(path, "1,2")] == trained_on
    assert [text for _, text in numbered_texts(path, "1")] == [n[3] for n in news]
    with pytest.raises(DataError, match="1,2: the second and third joined, as training reads a label, title, body"):
        list(numbered_texts(path))
