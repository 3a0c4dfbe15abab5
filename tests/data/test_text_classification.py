"""Reading every classification set in shared/data, and clear errors for bad input."""

import gzip

import pytest

from fastformer.data import DataError, LabelMap, read_examples
from tests.helpers import SHARED

DATA = SHARED / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data missing: {DATA}")


@needs_data
def test_imdb_jsonl_gz_by_split():
    train = read_examples(DATA / "imdb" / "imdb_ratings.jsonl.gz", label_field="rating", where={"split": "train"})
    assert len(train) == 25_000
    labels = LabelMap.from_examples(train)
    assert labels.labels == ["1", "2", "3", "4", "7", "8", "9", "10"]  # numeric order, 5 and 6 absent
    assert train[0].source.endswith(":1") and train[0].text


@needs_data
def test_yelp_headerless_csv_gz():
    dev = read_examples(DATA / "yelp5" / "yelp_dev.csv.gz")
    assert len(dev) == 4_008
    assert LabelMap.from_examples(dev).labels == ["0", "1", "2", "3", "4"]
    assert dev[0].text.startswith("Entirely too expensive")


@needs_data
def test_amazon_csvs_with_headers():
    full = read_examples(DATA / "amazon" / "amazon_review_full_condensed_test999.csv", text_field="input",
                         label_field="target")  # fmt: skip
    assert len(full) == 999
    assert set(LabelMap.from_examples(full).labels) == {"Very Negative", "Negative", "Neutral", "Positive",
                                                         "Very Positive"}  # fmt: skip
    electronics = read_examples(DATA / "amazon" / "amazon_electronics_sandisk_4915.csv", text_field="reviewText",
                                label_field="overall")  # fmt: skip
    assert len(electronics) == 4_915
    assert LabelMap.from_examples(electronics).labels == ["1", "2", "3", "4", "5"]


@needs_data
def test_sst5_fasttext_lines():
    dev = read_examples(DATA / "sst5" / "sst_dev.txt")
    assert len(dev) == 1_101
    assert LabelMap.from_examples(dev).labels == ["1", "2", "3", "4", "5"]
    assert dev[0].text.startswith("It 's a lovely film")


def test_folder_of_text_files(tmp_path):
    for label, texts in {"neg": ["bad", "awful"], "pos": ["good"]}.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    examples = read_examples(tmp_path)
    assert [(e.label, e.text) for e in examples] == [("neg", "bad"), ("neg", "awful"), ("pos", "good")]


def test_tsv_with_header_and_quoted_multiline_field(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('label\ttext\npos\t"two\nlines"\nneg\tplain\n')
    examples = read_examples(path, text_field="text", label_field="label")
    assert [(e.label, e.text) for e in examples] == [("pos", "two\nlines"), ("neg", "plain")]
    assert examples[1].source.endswith(":4")  # the line the row starts on, counting the quoted newline


def test_empty_text_is_kept(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('1,""\n0,fine\n')
    assert [e.text for e in read_examples(path)] == ["", "fine"]


@pytest.mark.parametrize(
    "name,content,kwargs,message",
    [
        ("d.csv", "", {}, "d.csv: the file is empty"),
        ("d.csv", "1,a\n2,b,extra\n", {}, "d.csv:2: expected 2 fields, found 3"),
        ("d.csv", "label,text\n,a\n", {"label_field": "label"}, "d.csv:2: field 'label': empty label"),
        ("d.csv", "label,text\n1,a\n", {"text_field": "body"}, "d.csv:1: field 'body': no such text column"),
        ("d.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n', {}, "d.jsonl:2: field 'label': missing"),
        ("d.jsonl", '{"text": "a", "label": 1}\nnot json\n', {}, "d.jsonl:2: not valid JSON"),
        ("d.jsonl", '{"text": 3, "label": 1}\n', {}, "d.jsonl:1: field 'text': expected a string"),
        ("d.txt", "__label__1\tok\nno label here\n", {}, "d.txt:2: field 'label': line does not start"),
    ],
)
def test_bad_input_names_file_line_and_field(tmp_path, name, content, kwargs, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError) as error:
        read_examples(path, **kwargs)
    assert message in str(error.value)


def test_gzip_is_read_through_and_missing_file_reported(tmp_path):
    path = tmp_path / "d.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write('{"text": "a", "label": "x"}\n')
    assert read_examples(path)[0].label == "x"
    with pytest.raises(DataError, match="no such file"):
        read_examples(tmp_path / "missing.csv")


def test_unknown_label_at_evaluation_names_its_line(tmp_path):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("0,a\n1,b\n")
    test.write_text("1,c\n7,d\n")
    labels = LabelMap.from_examples(read_examples(train))
    examples = read_examples(test)
    assert labels.encode(examples[0]) == 1
    with pytest.raises(DataError, match=r"test.csv:2: field 'label': label '7' was not seen in training"):
        labels.encode(examples[1])
