"""Reading every classification set in shared/data, and clear errors for bad input."""

import gzip

import pytest

from fastformer.data import DataError, LabelMap, read_examples
from fastformer.data.text_classification import Example, canonical_label
from fastformer.data.text_corpus import read_texts
from tests.helpers import SHARED, acl_imdb_layout

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
    full = read_examples(
        DATA / "amazon" / "amazon_review_full_condensed_test999.csv", text_field="input", label_field="target"
    )
    assert len(full) == 999
    assert set(LabelMap.from_examples(full).labels) == {
        "Very Negative",
        "Negative",
        "Neutral",
        "Positive",
        "Very Positive",
    }
    electronics = read_examples(
        DATA / "amazon" / "amazon_electronics_sandisk_4915.csv", text_field="reviewText", label_field="overall"
    )
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


@needs_data
def test_the_official_aclimdb_layout_reads_sentiment_or_ratings_and_never_its_unlabelled_reviews(tmp_path):
    """aclImdb/train's unsup/ (50,000 unlabelled reviews) was read as a third label, 'unsup'; aclImdb/ itself as the
    labels 'test' and 'train' with word counts and URL lists for texts. Now unsup/ is no label, the folder one level
    too high is refused naming what it holds, and label_field="rating" reads the rating of <id>_<rating>.txt."""
    root = acl_imdb_layout(tmp_path / "aclImdb")
    train = read_examples(root / "train")
    assert LabelMap.from_examples(train).labels == ["neg", "pos"] and len(train) == 12
    assert all(e.text == (root / "train" / e.label / e.source.rsplit("/", 1)[1][:-2]).read_text() for e in train)
    ratings = read_examples(root / "test", label_field="rating")
    assert {e.label for e in ratings} <= {"1", "2", "3", "4", "7", "8", "9", "10"} and len(ratings) == 12
    assert all(e.label == e.source.rsplit("_", 1)[1].split(".")[0] for e in ratings)
    assert all((e.label in "1234") == ("/neg/" in e.source) for e in ratings)
    with pytest.raises(DataError, match=r"aclImdb/test: holds folders \(neg, pos\), not texts.*aclImdb/train or"):
        read_examples(root)
    with pytest.raises(DataError, match="'label': a folder dataset's label is its sub-folder's name"):
        read_examples(root / "train", label_field="label")
    (root / "test" / "pos" / "notes.txt").write_text("a review without a rating in its name")
    with pytest.raises(DataError, match="notes.txt: field 'label': no rating in the file's name"):
        read_examples(root / "test", label_field="rating")


def test_what_a_macos_or_jupyter_copy_leaves_beside_aclimdb_is_not_read(tmp_path):
    """A copy made on macOS or opened in Jupyter leaves .DS_Store, ._<name> resource forks and .ipynb_checkpoints/
    beside the reviews: a hidden folder inside pos/ was refused as a folder one level too high, and a hidden file
    would have been read as a review. They are left out, as by every folder reader."""
    root = acl_imdb_layout(tmp_path / "aclImdb")
    expected = read_examples(root / "train")
    (root / "train" / ".DS_Store").write_bytes(b"\0\1")
    (root / "train" / ".cache").mkdir()
    (root / "train" / "pos" / ".ipynb_checkpoints").mkdir()
    (root / "train" / "pos" / ".ipynb_checkpoints" / "0_9-checkpoint.txt").write_text("not a review")
    (root / "train" / "neg" / "._0_1.txt").write_bytes(b"\0\5\26\7 resource fork")
    assert read_examples(root / "train") == expected
    assert read_texts(root / "train" / "pos" / ".ipynb_checkpoints")  # a hidden folder named itself is read


@needs_data
def test_a_folder_of_data_files_names_them():
    """The Yelp folder holds CSV files, not label sub-folders: the refusal names the files to give instead."""
    with pytest.raises(DataError, match="it holds yelp_dev.csv.gz, yelp_test.csv.gz, yelp_train_small.csv.gz: give"):
        read_examples(DATA / "yelp5")


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


# ---- files users have: each problem an error at its file and line, or read without loss --------------------------


def _write(tmp_path, name: str, data: bytes | str):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def test_a_headerless_csv_whose_labels_are_words_keeps_its_first_row(tmp_path):
    words = _write(tmp_path, "words.csv", "pos,great movie\nneg,bad movie\npos,fine\n")
    assert [e.label for e in read_examples(words)] == ["pos", "neg", "pos"]
    named = _write(tmp_path, "named.csv", "label,text\npos,great\nneg,bad\n")
    assert [e.label for e in read_examples(named)] == ["pos", "neg"]
    numbers = _write(tmp_path, "numbers.csv", "stars,review\n1,bad\n5,good\n")
    assert [e.label for e in read_examples(numbers)] == ["1", "5"]


def test_one_value_spelled_two_ways_is_one_class(tmp_path):
    spelled = _write(tmp_path, "spell.csv", "1,good\n1.0,ok\n01,fine\n2,bad\n0.50,half\n.5,half\n")
    assert [e.label for e in read_examples(spelled)] == ["1", "1", "1", "2", "0.5", "0.5"]
    jsonl = _write(
        tmp_path, "s.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": 1.0}\n{"text": "c", "label": "1"}\n'
    )
    assert {e.label for e in read_examples(jsonl)} == {"1"}


@pytest.mark.parametrize(
    "name, data, kwargs, message",
    [
        ("fake.csv.gz", b"1,good\n", {}, r"fake.csv.gz: named .gz but not gzip-compressed"),
        ("cut.csv.gz", None, {}, r"cut.csv.gz: the gzip stream is damaged or cut short after line \d+"),
        ("latin.csv", b"1,ok\n2,caf\xe9\n", {}, r"latin.csv:2: not UTF-8 text \(byte 0xe9 at column 6\)"),
        (
            "tabs.csv",
            b"1\tgood movie\n2\tbad movie\n",
            {},
            r"tabs.csv:1: field 'column 1': the text column is beyond the row's 1 field\(s\) \(the row holds a tab",
        ),
        (
            "short.csv",
            b"1,good\n2,bad\n",
            {"label_field": 5},
            r"short.csv:1: field 'column 5': the label column is beyond the row's 2 field\(s\)",
        ),
        ("ragged.csv", b"1,good\n2\n", {}, r"ragged.csv:2: expected 2 fields, found 1"),
    ],
)
def test_a_malformed_file_is_an_error_at_its_line(tmp_path, name, data, kwargs, message):
    import gzip

    if data is None:  # a gzip file cut in half
        whole = gzip.compress(b"".join(b"%d,review number %d\n" % (i % 3, i) for i in range(5000)))
        data = whole[: len(whole) // 2]
    with pytest.raises(DataError, match=message):
        read_examples(_write(tmp_path, name, data), **kwargs)


def test_a_byte_order_mark_is_not_part_of_the_first_cell(tmp_path):
    bom = _write(tmp_path, "bom.csv", "\ufefflabel,text\n1,good\n")
    assert [(e.label, e.text) for e in read_examples(bom)] == [("1", "good")]


def test_an_evaluation_label_the_training_file_lacks_stops_the_run_before_training(tmp_path):
    from fastformer.cli.main import main

    train = _write(tmp_path, "train.csv", "".join(f"{i % 2},text {i}\n" for i in range(40)))
    test = _write(tmp_path, "test.csv", "0,a\n1,b\n7,c\n")
    with pytest.raises(SystemExit, match=r"test.csv:3: field 'label': label '7' was not seen in training"):
        main(
            [
                "train",
                "--train",
                str(train),
                "--test",
                str(test),
                "--output-dir",
                str(tmp_path / "run"),
                "--no-progress",
            ]
        )
    assert not (tmp_path / "run" / "checkpoints").exists()  # nothing trained


@pytest.mark.parametrize(
    "header, row",
    [
        ("text,label", "A moving film,pos"),  # pandas' to_csv of a DataFrame with these columns
        ("sentence,label", "A moving film,pos"),  # GLUE
        ("review,sentiment", "A moving film,pos"),  # the Kaggle IMDB CSV
        ("id,text,label", "7,A moving film,pos"),  # the id is not the label
        ("source,text,label", "web,A moving film,pos"),  # nor is the first column
        ("label,title,text", "pos,Title,A moving film"),  # title and text: the text
        ("Sentiment,Review", "pos,A moving film"),  # names in any case, label first
    ],
)
def test_a_header_is_read_by_its_names(tmp_path, header, row):
    path = tmp_path / "data.csv"
    path.write_text(f"{header}\n{row}\n{row.replace('pos', 'neg').replace('moving', 'dull')}\n")
    examples = read_examples(path)
    assert [(e.text, e.label) for e in examples] == [("A moving film", "pos"), ("A dull film", "neg")]


def test_a_header_without_usable_names_is_an_error_listing_it(tmp_path):
    (tmp_path / "two.csv").write_text("label,text,review\npos,a,A moving film\n")
    with pytest.raises(DataError, match=r"two.csv:1: the header \['label', 'text', 'review'\] has several usual text"):
        read_examples(tmp_path / "two.csv")
    (tmp_path / "none.csv").write_text(
        "stars,col_b\n5,A moving film\n1,A dull film\n"
    )  # a header: its labels are numbers
    with pytest.raises(DataError, match=r"the header \['stars', 'col_b'\] has no usual text name: pass --text-field"):
        read_examples(tmp_path / "none.csv")
    assert [e.text for e in read_examples(tmp_path / "none.csv", text_field="col_b")] == [
        "A moving film",
        "A dull film",
    ]


def test_an_unknown_label_error_stays_short(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"t{i},{i}\n" for i in range(50)))
    (tmp_path / "test.csv").write_text("text,label\nsome text," + "x" * 500 + "\n")
    labels = LabelMap.from_examples(read_examples(tmp_path / "train.csv"))
    with pytest.raises(DataError) as error:
        labels.encode(read_examples(tmp_path / "test.csv")[0])
    assert len(str(error.value)) < 400 and "... 50 in all" in str(error.value)


def test_integer_labels_keep_every_digit():
    # through float, 2**53 + 1 and 2**53 were one class
    assert canonical_label("9007199254740993") != canonical_label("9007199254740992")
    assert canonical_label("9007199254740993") == "9007199254740993"
    assert [canonical_label(x) for x in ("1", "1.0", " 01 ", "0.50", "1e3")] == ["1", "1", "1", "0.5", "1000"]


@pytest.mark.parametrize("header, text_first", [("txt,lable", True), ("review_polarity,review", False)])
def test_a_header_of_unknown_names_is_refused_naming_its_fields_not_read_as_data(tmp_path, header, text_first):
    """Real Yelp reviews under a header of names the reader does not know: refused in one line that shows the header
    and the flag to pass (they were read as data, positionally: texts became labels, or the header a class)."""
    import csv
    import gzip

    with gzip.open(SHARED / "data" / "yelp5" / "yelp_dev.csv.gz", "rt") as f:
        rows = [row for row, _ in zip(csv.reader(f), range(50), strict=False)]
    path = tmp_path / "mine.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header.split(","))
        writer.writerows([[text, label] if text_first else [label, text] for label, text in rows])
    with pytest.raises(DataError) as refused:
        read_examples(path)
    message = str(refused.value)
    assert f"the header {header.split(',')}" in message and "pass --label-field NAME" in message
    names = header.split(",")
    label, text = (names[1], names[0]) if text_first else (names[0], names[1])
    examples = read_examples(path, label_field=label, text_field=text)  # the flags it names work
    assert len(examples) == 50 and {e.label for e in examples} <= {"0", "1", "2", "3", "4"}


def test_a_header_of_unknown_names_over_short_texts_is_refused_too(tmp_path):
    """Texts of a few words (SST's sentences cut short) give no text column by length; the label column does: a few
    values, each repeated, and the header's name is not one of them."""
    lines = (SHARED / "data" / "sst5" / "sst_train.txt").read_text().splitlines()[:40]
    path = tmp_path / "short.csv"
    rows = [(" ".join(line.split()[1:4]), line.split()[0].removeprefix("__label__")) for line in lines]
    path.write_text("txt,lable\n" + "".join(f'"{text}",{label}\n' for text, label in rows))
    with pytest.raises(DataError, match=r"the header \['txt', 'lable'\]"):
        read_examples(path)
    headerless = tmp_path / "headerless.csv"  # the same rows without the header: read as data, as before
    headerless.write_text("".join(f'{label},"{text}"\n' for text, label in rows))
    assert len(read_examples(headerless)) == 40


def test_an_unknown_label_error_lists_a_few_short_labels():
    labels = LabelMap([f"a whole review read as a label by mistake, number {i}" for i in range(30)])
    with pytest.raises(DataError) as refused:
        labels.encode(Example("x", "another", "f.csv:7"))
    message = str(refused.value)
    assert "... 30 in all" in message and len(message) < 600


def test_an_error_after_multi_line_texts_names_the_csv_record_beside_the_line(tmp_path):
    """pandas writes texts with newlines inside quotes: the physical line and the record differ, and the message
    gives both (the record is what a spreadsheet or `df.iloc` shows)."""
    import csv

    path = tmp_path / "mine.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["label", "text"])
        writer.writerow(["pos", "A fine film.\nTwo lines.\nThree."])
        writer.writerow(["neg", "Dull."])
        writer.writerow(["", "No label here."])
    with pytest.raises(DataError) as refused:
        read_examples(path)
    assert str(refused.value) == f"{path}:6: field 'label': CSV record 3: empty label"


PTB = {"(": "-LRB-", ")": "-RRB-"}


def _as_tree(label: int, words: list[str]) -> str:
    """A sentence as SST's trees/*.txt writes it: binary nodes, every node labelled, brackets as -LRB- / -RRB-."""
    words = [PTB.get(word, word) for word in words]
    if len(words) == 1:
        return f"({label} {words[0]})"
    tree = f"(2 {words[-1]})"
    for word in reversed(words[:-1]):
        tree = f"(2 (2 {word}) {tree})"
    return f"({label}{tree[2:]}"


@needs_data
def test_sst_trees_as_released_read_as_their_root_labels_and_leaves(tmp_path):
    """SST-5 as released (trainDevTestTrees_PTB/trees/dev.txt) from the fastText copy's real sentences, labels 1-5
    there and 0-4 in the trees: each tree reads back as its sentence (brackets included) and its root's label,
    found from the first line; a line that is not a tree is an error at its line."""
    fasttext = read_examples(DATA / "sst5" / "sst_dev.txt")
    trees = tmp_path / "dev.txt"
    trees.write_text("".join(_as_tree(int(e.label) - 1, e.text.split()) + "\n" for e in fasttext))
    assert trees.read_text().startswith("(3 (2 It) (2 (2 's)")
    read = read_examples(trees)
    assert [(e.text, int(e.label) + 1) for e in read] == [(e.text, int(e.label)) for e in fasttext]
    assert any("( " in e.text for e in read) and read[5].source == f"{trees}:6"
    assert LabelMap.from_examples(read).labels == ["0", "1", "2", "3", "4"]
    lines = trees.read_text().splitlines()
    trees.write_text("\n".join([*lines[:2], lines[2][:-1], *lines[3:]]) + "\n")
    with pytest.raises(DataError, match=r"dev.txt:3: field 'label': not a labelled tree"):
        read_examples(trees)


@needs_data
def test_a_headerless_csv_of_label_title_and_body_reads_them_all_as_the_text(tmp_path):
    """Zhang et al.'s CSVs (Amazon-full, AG News, DBPedia: "label","title","body", no header) were read as their
    titles alone (column 1). Written from MIND's real news (category, title, abstract), the text is now title and body
    joined, as those datasets are trained; a text column given by position still reads that column alone, and a
    two-column file (Yelp's) reads as before."""
    import csv

    with gzip.open(DATA / "mind" / "news_sample.tsv.gz", "rt", encoding="utf-8") as f:
        news = [line.rstrip("\n").split("\t") for _, line in zip(range(50), f, strict=False)]
    path = tmp_path / "train.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([n[1], n[3], n[4]] for n in news)
    examples = read_examples(path)
    expected = [" ".join(part for part in (n[3].strip(), n[4].strip()) if part) for n in news]
    assert [e.text for e in examples] == expected and [e.label for e in examples] == [n[1] for n in news]
    assert sum(bool(n[4].strip()) for n in news) > 40  # most rows have a body, so reading it changes the texts
    assert [e.text for e in read_examples(path, text_field=1)] == [n[3] for n in news]
    yelp = read_examples(DATA / "yelp5" / "yelp_dev.csv.gz")
    assert yelp[0].text.startswith("Entirely too expensive") and "\t" not in yelp[0].text


@needs_data
def test_a_text_of_two_fields_joins_them_in_every_format_for_training_and_prediction(tmp_path):
    """DBPedia's and Amazon polarity's title and content as one text (`--text-field title,content`): from MIND's real
    news (title, abstract, category) in JSON Lines, a CSV with a header and Parquet, training and `predict --file` read
    the same joined texts; a key or column the records lack is named."""
    import csv
    import json

    from fastformer.data.text_corpus import numbered_texts

    with gzip.open(DATA / "mind" / "news_sample.tsv.gz", "rt", encoding="utf-8") as f:
        news = [
            dict(zip(("title", "abstract", "category"), (n[3], n[4], n[1]), strict=True))
            for n in (line.rstrip("\n").split("\t") for _, line in zip(range(40), f, strict=False))
        ]
    expected = [" ".join(part.strip() for part in (n["title"], n["abstract"]) if part.strip()) for n in news]
    files = [tmp_path / "news.jsonl", tmp_path / "news.csv"]
    files[0].write_text("".join(json.dumps(n) + "\n" for n in news))
    with files[1].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["category", "title", "abstract"])
        writer.writeheader()
        writer.writerows(news)
    try:
        import pyarrow
        import pyarrow.parquet

        files.append(tmp_path / "news.parquet")
        pyarrow.parquet.write_table(pyarrow.Table.from_pylist(news), files[-1])
    except ImportError:  # (pyarrow is optional: the other two formats still run)
        pass
    for path in files:
        examples = read_examples(path, text_field="title,abstract", label_field="category")
        assert [e.text for e in examples] == expected and [e.label for e in examples] == [n["category"] for n in news]
        assert [text for _, text in numbered_texts(path, "title,abstract")] == expected
        with pytest.raises(DataError, match="field 'body'"):
            read_examples(path, text_field="title,body", label_field="category")
