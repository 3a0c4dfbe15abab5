"""`fastformer predict` streams: one record per input line, in order, blank lines marked, memory bounded whatever
the number of lines (the peak of Python allocations measured, not time)."""

import json
import tracemalloc

import pytest

from fastformer.cli.main import main
from tests.helpers import TINY_CLASSIFIER

TINY = TINY_CLASSIFIER


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    out = tmp_path_factory.mktemp("stream") / "run"
    assert main(["train", "--output-dir", str(out), *TINY]) == 0
    return out


def _lines(path, n: int) -> list[str]:
    lines = ["" if i % 97 == 5 else f"w{i % 50} w{i % 7} mark{i % 4}x{i % 3} text number {i}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return lines


def _peak_of_predict(classifier, tmp_path, n: int) -> tuple[int, list[str]]:
    source, output = tmp_path / f"in{n}.txt", tmp_path / f"out{n}.jsonl"
    lines = _lines(source, n)
    tracemalloc.start()
    try:
        assert main(["predict", str(classifier), "--file", str(source), "--output", str(output), "--no-progress"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, lines


@pytest.mark.slow
def test_eight_thousand_lines_in_bounded_memory_one_record_per_line_in_order(classifier, tmp_path):
    peak, lines = _peak_of_predict(classifier, tmp_path, 8_000)
    # measured ~0.9 MiB for 2,000 lines and for 20,000 alike; keeping every line's text and record (what predict did
    # before, ~20 KB a line with its tensors) would pass 100 MiB of Python objects here (8,000 lines: 31 chunks)
    assert peak < 4 * 2**20, peak
    records = [json.loads(line) for line in (tmp_path / "out8000.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == list(range(1, 8_001))
    for record, text in zip(records, lines, strict=True):
        if text:
            assert record["text"] == text[:80] and set(record) == {"line", "text", "label", "probabilities"}
        else:
            assert record == {"line": record["line"], "blank": True}


def test_arguments_then_file_lines_and_output_written_as_it_goes(classifier, tmp_path, capsys):
    source = tmp_path / "few.txt"
    source.write_text("first line\n\nthird line\n")
    capsys.readouterr()
    assert main(["predict", str(classifier), "an argument", "--file", str(source), "--no-progress"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [next(iter(r.items()))[0:2] for r in records] == [("argument", 1), ("line", 1), ("line", 2), ("line", 3)]
    assert records[2] == {"line": 2, "blank": True}


def test_outputs_that_would_destroy_an_input_a_model_or_a_file_are_refused(tmp_path):
    """predict / generate / evaluate --output: never the input, never inside the model folder, never an existing file
    without --overwrite; a refused command leaves every file as it was."""
    from tests.helpers import TINY_CLASSIFIER

    model = tmp_path / "model"
    assert main(["train", "--output-dir", str(model), *TINY_CLASSIFIER]) == 0
    source = tmp_path / "in.txt"
    source.write_text("w1 w2\nw3\n")
    weights = (model / "model.safetensors").read_bytes()
    cases = [
        (["predict", str(model), "--file", str(source), "--output", str(source)], "is an input of this command"),
        (["predict", str(model), "hi", "--output", str(model / "model.safetensors")], "inside"),
        (["generate", str(model), "hi", "--output", str(model / "out.jsonl")], "inside"),
        (["evaluate", str(model), "--data", str(source), "--output", str(source)], "is an input of this command"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit, match=message):
            main(argv)
    assert source.read_text() == "w1 w2\nw3\n" and (model / "model.safetensors").read_bytes() == weights
    mine = tmp_path / "mine.jsonl"
    mine.write_text("keep")
    with pytest.raises(SystemExit, match="mine.jsonl: exists; pass --overwrite"):
        main(["predict", str(model), "hi", "--output", str(mine), "--no-progress"])
    assert mine.read_text() == "keep"
    assert main(["predict", str(model), "hi", "--output", str(mine), "--overwrite", "--no-progress"]) == 0
    assert json.loads(mine.read_text())["argument"] == 1
    link = tmp_path / "link.jsonl"
    link.symlink_to(mine)
    for argv in (["predict", str(model), "hi"], ["evaluate", str(model), "--data", str(source)]):
        with pytest.raises(SystemExit, match="link.jsonl: is a symbolic link"):
            main([*argv, "--output", str(link), "--overwrite"])
    assert json.loads(mine.read_text())["argument"] == 1  # the link's target as it was


def test_a_damaged_folder_is_one_line_naming_the_file(tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from tests.helpers import TINY_CLASSIFIER

    model = tmp_path / "model"
    assert main(["train", "--output-dir", str(model), *TINY_CLASSIFIER]) == 0
    good = {name: (model / name).read_bytes() for name in ("model.safetensors", "config.json")}
    damages = [
        ("model.safetensors", good["model.safetensors"][:1000], "model.safetensors: damaged"),
        ("config.json", b"{bad", "config.json: damaged, not valid JSON"),
    ]
    for name, content, message in damages:
        (model / name).write_bytes(content)
        for argv in (["predict", str(model), "hi"], ["evaluate", str(model), "--data", str(model / "x.csv")]):
            with pytest.raises(SystemExit, match=message):
                main(argv)
        (model / name).write_bytes(good[name])
    tensors = load_file(model / "model.safetensors")  # a renamed tensor: refused, not drawn at random
    tensors["renamed.weight"] = tensors.pop("classifier.weight")
    save_file(tensors, model / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(SystemExit, match="lacks tensors classifier.weight"):
        main(["predict", str(model), "hi"])
    shutil.rmtree(model)


def test_convert_mindrec_never_replaces_existing_files_unasked(tmp_path):
    from tests.helpers import SHARED

    source = SHARED / "data" / "mind" / "mindrec20_test.json.gz"
    out = tmp_path / "mind"
    out.mkdir()
    (out / "news.tsv").write_text("mine")
    with pytest.raises(SystemExit, match="news.tsv: exists; pass --overwrite"):
        main(["convert-mindrec", str(source), str(out)])
    assert (out / "news.tsv").read_text() == "mine" and not (out / "behaviors.tsv").exists()
    assert main(["convert-mindrec", str(source), str(out), "--overwrite"]) == 0
    assert (out / "news.tsv").read_text() != "mine"


def test_evaluate_and_predict_reuse_the_runs_own_fields_and_threshold(tmp_path, capsys):
    """A run trained on a JSON Lines file's `body`: evaluate reads its fields and threshold, and predict --file on
    such a file reads each record's `body` (not the JSON line as a text), --where keeping some records."""
    rows = [
        {"body": f"a {word} film {i}", "stars": stars} for i in range(40) for word, stars in (("fine", 9), ("dull", 2))
    ]
    data = tmp_path / "reviews.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    small = [
        "--epochs",
        "1",
        "--vocab-size",
        "100",
        "--max-length",
        "16",
        "--model",
        "hidden_size=16",
        "--model",
        "num_attention_heads=2",
        "--model",
        "intermediate_size=16",
        "--no-progress",
    ]
    model = tmp_path / "model"
    assert (
        main(
            [
                "train",
                "--train",
                str(data),
                "--text-field",
                "body",
                "--label-field",
                "stars",
                "--binary-threshold",
                "7",
                "--output-dir",
                str(model),
                *small,
            ]
        )
        == 0
    )
    out = tmp_path / "metrics.json"
    assert main(["evaluate", str(model), "--data", str(data), "--output", str(out)]) == 0  # no fields given
    assert json.loads(out.read_text())["examples"] == 80
    # the run's threshold (7) on a file of another scale (1-5 stars) would make every row 'neg': refused, nothing
    # written; the file's own threshold given scores it; one distinct label (all 9s) is a file of one class, scored
    five = tmp_path / "five-stars.jsonl"
    five.write_text("".join(json.dumps({**r, "stars": 5 if r["stars"] == 9 else 1}) + "\n" for r in rows))
    refused = tmp_path / "refused" / "metrics.json"
    refused.parent.mkdir()
    with pytest.raises(
        SystemExit, match=r"labels run from 1 to 5, all under 7, so every example would be 'neg' by the"
    ):
        main(["evaluate", str(model), "--data", str(five), "--output", str(refused)])
    assert not any(refused.parent.iterdir())
    again = ["--output", str(out), "--overwrite"]
    assert main(["evaluate", str(model), "--data", str(five), "--binary-threshold", "4", *again]) == 0
    assert main(["evaluate", str(model), "--data", str(data), "--where", "stars=9", *again]) == 0
    assert json.loads(out.read_text())["examples"] == 40
    capsys.readouterr()
    assert main(["predict", str(model), "--file", str(data), "--no-progress"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["line"], r["text"]) for r in records] == [(i + 1, row["body"]) for i, row in enumerate(rows)]
    assert main(["predict", str(model), "--file", str(data), "--where", "stars=9", "--no-progress"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["line"] for r in records] == list(range(1, 81, 2)) and records[0]["text"] == "a fine film 0"
    with pytest.raises(SystemExit, match=r"reviews.jsonl:1: field 'text': missing; the record has \['body', 'stars'\]"):
        main(["predict", str(model), "--file", str(data), "--text-field", "text"])
    with pytest.raises(SystemExit, match="--where 'stars': expected KEY=VALUE"):
        main(["predict", str(model), "--file", str(data), "--where", "stars"])
    for verb, flag in (("predict", ["--where", "stars=9"]), ("explain", ["--text-field", "body"])):
        with pytest.raises(
            SystemExit, match=f"^fastformer {verb}: {flag[0]} reads the records of --file: give --file$"
        ):
            main([verb, str(model), "a text", *flag])
    with pytest.raises(SystemExit, match="^fastformer generate: --text-field reads the records of --file"):
        main(["generate", str(model), "a prompt", "--text-field", "body"])


def test_predictions_of_a_nan_model_are_json_null_with_a_warning(classifier, tmp_path, capsys):
    """A model whose weights went NaN: each probability is null (valid JSON, not a bare NaN) and one warning line
    says why."""
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(classifier, broken, ignore=shutil.ignore_patterns("checkpoints"))
    weights = load_file(str(broken / "model.safetensors"))
    weights["classifier.bias"] = weights["classifier.bias"] * float("nan")
    save_file(weights, str(broken / "model.safetensors"), metadata={"format": "pt"})
    output = tmp_path / "p.jsonl"
    assert main(["predict", str(broken), "a fine film", "--output", str(output), "--no-progress"]) == 0
    record = json.loads(output.read_text())  # (a bare NaN would not parse as strict JSON below)
    json.loads(output.read_text(), parse_constant=lambda name: pytest.fail(f"bare {name} in the output"))
    assert all(p is None for p in record["probabilities"].values())
    assert "predicted numbers were NaN or infinite (written as null)" in capsys.readouterr().err


def test_export_on_a_full_disk_leaves_nothing_half_written(classifier, tmp_path):
    """`fastformer export` with too little room (a file-size limit, as a full disk): one line, exit 2, and no output
    folder at all (it used to leave a truncated model.pt2 with nothing marking it incomplete), no staging left."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "fastformer"
    out = tmp_path / "exported"
    done = subprocess.run(
        ["bash", "-c", f"ulimit -f 64; exec {exe} export {classifier} {out}"], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].startswith("fastformer export:") and "File too large" in done.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert main(["export", str(classifier), str(out)]) == 0 and (out / "model.pt2").is_file()  # with room: whole


def test_a_file_that_is_not_utf8_is_one_line_for_explain_as_for_predict(classifier, tmp_path):
    """(generate reads its prompts before it looks at the folder: a traceback until 2026-12-06)"""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café film\n".encode("latin-1"))
    for argv in (["explain", str(classifier), "--file", str(latin1), "--output-dir", str(tmp_path / "pages")],
                 ["predict", str(classifier), "--file", str(latin1)],
                 ["generate", str(classifier), "--file", str(latin1)]):  # fmt: skip
        with pytest.raises(SystemExit) as refused:
            main(argv)
        assert "latin1.txt:1: not UTF-8 text (byte 0xe9 at column 4)" in str(refused.value.code)
    assert not (tmp_path / "pages").exists()


def test_a_second_evaluation_on_the_same_data_says_where_it_goes(classifier, tmp_path, capsys):
    data = tmp_path / "mine.csv"
    data.write_text("label,text\n0,w1 w2 mark0x0\n1,w3 mark1x1\n2,w4 mark2x2\n")
    for _ in range(2):
        assert main(["evaluate", str(classifier), "--data", str(data)]) == 0
    captured = capsys.readouterr()
    second = classifier / "evaluations" / "mine-2"
    assert (second / "metrics.json").is_file()
    assert f"holds an earlier evaluation: this one goes to {second}" in captured.err and str(second) in captured.out


def test_a_folder_whose_config_names_no_labels_says_so(classifier, tmp_path, capsys):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(classifier, bare, ignore=shutil.ignore_patterns("checkpoints", "evaluations"))
    config = json.loads((bare / "config.json").read_text())
    config["num_labels"] = len(config.pop("id2label"))  # as a config saved without names has them
    config.pop("label2id", None)
    (bare / "config.json").write_text(json.dumps(config))
    assert main(["predict", str(bare), "w1 w2", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "config.json names no labels (id2label): classes are called LABEL_0" in captured.err
    assert json.loads(captured.out.strip().splitlines()[-1])["label"].startswith("LABEL_")


def test_a_tokenizer_larger_than_the_models_vocabulary_is_one_line(classifier, tmp_path):
    """A folder whose tokenizer was swapped for a larger one (ids past the embedding table): one line, not an
    IndexError from inside the model."""
    import shutil

    from tests.helpers import SHARED

    swapped = tmp_path / "swapped"
    shutil.copytree(classifier, swapped, ignore=shutil.ignore_patterns("checkpoints", "evaluations"))
    other = tmp_path / "other"
    assert main(["train", "--train", str(SHARED / "data" / "sst5" / "sst_train.txt"), "--max-train-examples", "400",
                 "--epochs", "1", "--vocab-size", "2000", "--model", "hidden_size=16", "--model",
                 "num_attention_heads=2", "--model", "intermediate_size=16", "--max-length", "32",
                 "--no-progress", "--output-dir", str(other)]) == 0  # fmt: skip
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(other / name, swapped / name)
    with pytest.raises(SystemExit) as refused:
        main(["predict", str(swapped), "w1 w2", "--no-progress"])
    assert "its tokenizer has" in str(refused.value.code) and "the model's vocabulary" in str(refused.value.code)


def test_predict_on_a_full_disk_is_one_line_and_leaves_no_partial_file(classifier, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    source, output = tmp_path / "in.txt", tmp_path / "out.jsonl"
    _lines(source, 3000)
    exe = Path(sys.executable).parent / "fastformer"
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"ulimit -f 16; exec {exe} predict {classifier} --file {source} --output {output} --no-progress",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"fastformer predict: File too large while writing {output}; nothing written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_options_and_texts_come_in_any_order(classifier, tmp_path, capsys):
    """`predict DIR --file F "a text"` and `explain DIR --top-k 0 "a text"`: argparse's parse_args took texts only
    before the first option and called later ones unrecognized; a missing folder still names the folder alone."""
    source = tmp_path / "few.txt"
    source.write_text("first line\n")
    capsys.readouterr()
    assert main(["predict", str(classifier), "--file", str(source), "an argument", "--no-progress"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r.get("argument") or r.get("line") for r in records] == [1, 1] and records[0]["text"] == "an argument"
    pages = tmp_path / "pages"
    assert main(["explain", str(classifier), "--top-k", "0", "a text", "--output-dir", str(pages), "more"]) == 0
    assert sorted(p.name for p in pages.iterdir()) == ["arg-1.html", "arg-2.html"]
    with pytest.raises(SystemExit, match=r"^fastformer explain: the following arguments are required: model_dir \("):
        main(["explain"])


def test_a_length_past_the_models_positions_is_one_line_before_anything(classifier, tmp_path):
    """--max-length past the positions failed on the first long text, deep in the embeddings ("position 76 is
    beyond max_position_embeddings 48"), after the data was read: now one line naming the flag, nothing written."""
    from tests.helpers import SHARED

    too_long, data = ["--max-length", "1000"], SHARED / "data" / "sst5" / "sst_dev.txt"
    out = tmp_path / "out"
    commands = (
        ["explain", str(classifier), "a text", "--output-dir", str(out), *too_long],
        ["evaluate", str(classifier), "--data", str(data), "--output", str(out / "m.json"), *too_long],
    )
    for command in commands:
        with pytest.raises(SystemExit) as refused:
            main(command)
        says = "--max-length 1000: the model reads at most 48 tokens (its max_position_embeddings)"
        assert str(refused.value.code) == f"fastformer {command[0]}: {says}"
        assert not out.exists()


def test_explain_reads_a_json_lines_file_as_predict_does(classifier, tmp_path):
    """explain --file on JSON Lines: a page per record with text, named by the line it is on (the blank line and the
    filtered-out record none); a missing field is one line, no page written."""
    source = tmp_path / "reviews.jsonl"
    rows = [
        {"review": "w1 w2 mark1x1", "keep": "y"},
        {"review": "w3 mark2x2", "keep": "n"},
        {"review": "", "keep": "y"},
    ]
    source.write_text(json.dumps(rows[0]) + "\n\n" + "".join(json.dumps(r) + "\n" for r in rows[1:]))
    pages = tmp_path / "pages"
    explain = ["explain", str(classifier), "--file", str(source), "--top-k", "0", "--output-dir", str(pages)]
    assert main([*explain, "--text-field", "review"]) == 0
    assert sorted(p.name for p in pages.iterdir()) == ["line-1.html", "line-3.html"]
    assert "mark2x2" in (pages / "line-3.html").read_text()
    with pytest.raises(SystemExit, match=r"^fastformer explain: .*reviews.jsonl:1: field 'text': missing"):
        main([*explain, "--output-dir", str(tmp_path / "none")])
    assert not (tmp_path / "none").exists()
    assert main([*explain, "--text-field", "review", "--where", "keep=n", "--output-dir", str(tmp_path / "kept")]) == 0
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["line-3.html"]


def test_a_folder_of_text_files_is_predicted_and_explained_file_by_file(classifier, tmp_path, capsys):
    """`--file aclImdb/test/pos` (real reviews, one a file): a record per file named by it, an empty file marked
    blank, hidden files not read; a folder of folders and --text-field are one line; nothing is written into the
    folder read (its files are the texts: a second read would take the output for a review)."""
    from tests.helpers import acl_imdb_layout

    pos = acl_imdb_layout(tmp_path / "aclImdb", per_folder=4) / "test" / "pos"
    (pos / "9_7.txt").write_text("")
    (pos / ".DS_Store").write_bytes(b"\0")
    out = tmp_path / "predictions.jsonl"
    assert main(["predict", str(classifier), "--file", str(pos), "--output", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 5
    assert [r["file"] for r in records] == sorted(p.name for p in pos.iterdir() if not p.name.startswith("."))
    assert records[-1] == {"file": "9_7.txt", "blank": True} and all("label" in r for r in records[:-1])
    assert records[0]["text"] == (pos / records[0]["file"]).read_text()[:80]
    for argv, says in [
        (["--file", str(pos.parent)], "holds folders (neg, pos): a folder of documents"),
        (["--file", str(pos), "--text-field", "text"], "--text-field reads a file's records; a folder's texts"),
        (
            ["--file", str(pos), "--where", "split=test"],
            "--where filters JSON Lines records ({'split': 'test'}); this file is read as a folder of text files",
        ),  # worded as `train` words it
        (["--file", str(pos), "--output", str(pos / "p.jsonl")], "p.jsonl: inside"),
    ]:
        with pytest.raises(SystemExit) as refused:
            main(["predict", str(classifier), *argv])
        assert says in str(refused.value.code) and "\n" not in str(refused.value.code)
    pages = tmp_path / "pages"
    explain = ["explain", str(classifier), "--file", str(pos), "--top-k", "0"]
    assert main([*explain, "--output-dir", str(pages)]) == 0
    assert sorted(p.name for p in pages.iterdir()) == [f"file-{r['file']}.html" for r in records[:-1]]
    with pytest.raises(SystemExit, match="inside the --file folder"):
        main([*explain, "--output-dir", str(pos / "pages")])
    assert sorted(p.name for p in pos.iterdir()) == [".DS_Store", *(r["file"] for r in records)]
