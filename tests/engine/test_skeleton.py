"""The run skeleton that every task rides: user errors (one line, exit code 2, before anything runs), run folders that
never lose a user's file, resume refused on changed settings, two runs in one folder, a killed re-run."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastformer.cli.main import main
from tests.helpers import SHARED

SST = SHARED / "data" / "sst5"
EXE = str(Path(sys.executable).parent / "fastformer")
# the built-in task at its smallest: a few seconds a run
TINY = [
    "--max-train-examples",
    "200",
    "--max-eval-examples",
    "40",
    "--epochs",
    "1",
    "--batch-size",
    "32",
    "--max-length",
    "64",
    "--vocab-size",
    "300",
    "--model",
    "hidden_size=16",
    "--model",
    "num_attention_heads=2",
    "--model",
    "intermediate_size=16",
    "--no-progress",
]


def fastformer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=600)


def bad_files(tmp: Path) -> dict[str, Path]:
    files = {
        "bad.yaml": "epochs: [1\n",
        "unknown.json": json.dumps({"epoch": 2}),
        "wrongtype.json": json.dumps({"epochs": "three"}),
        "model5.yaml": "model: 5\n",
        "short.csv": "label,text\n1,fine\n2\n",
        "words.csv": "text,label\n" + "a fine film,pos\na dull film,neg\n" * 10,
        "mixed.jsonl": "".join(
            json.dumps(dict(text=f"film {i}", label=v)) + "\n" for i, v in enumerate([True, False, 1] * 4)
        ),
        "news.tsv": "".join(f"N{i}\t{c}\tx\tTitle {i}\tabs\turl\t[]\t[]\n" for i, c in enumerate("aabc")),
    }
    for name, text in files.items():
        (tmp / name).write_text(text)
    planted = tmp / "someone-elses"
    planted.mkdir(exist_ok=True)
    (planted / "notes.txt").write_text("mine")
    return {name: tmp / name for name in [*files, "someone-elses"]}


# (arguments, what the one-line message must say); {tmp} is the test's folder
USER_ERRORS = [
    (["train", "--epochs", "0"], "--epochs: must be > 0, got 0.0"),
    (["train", "--epochs", "x"], "train classification: --epochs: invalid float value: 'x'"),
    (["train", "--max-length", "0"], "--max-length: must be >= 1, got 0"),
    (["train", "--validation-fraction", "1.5"], "--validation-fraction: must be < 1, got 1.5"),
    (["train", "--architecture", "bert"], "--architecture: 'bert' is not one of fastformer, softmax, tfidf"),
    (["train", "--sampling", "shuffled"], "--sampling: 'shuffled' is not one of"),
    (["train", "--train", "{tmp}/nope.csv"], "--train: {tmp}/nope.csv: no such file or folder"),
    (["train", "--tokenizer", "{tmp}/nope"], "--tokenizer: {tmp}/nope: no such folder"),
    (["train", "--word-vectors", "{tmp}/nope.txt"], "--word-vectors: {tmp}/nope.txt: no such file"),
    (["train", "--freeze-word-vectors"], "--freeze-word-vectors: needs --word-vectors"),
    (["train", "--model", "hidden_sise=32"], "--model hidden_sise: not a FastformerConfig field (did you mean"),
    (["train", "--model", "hidden_size=wide"], "--model hidden_size='wide': expected int"),
    (["train", "--model", "dropout"], "--model dropout: not a FastformerConfig field"),
    (["train", "--model", "hidden_size=-3"], "--model hidden_size=-3: must be >= 1"),
    (["train", "--model", "hidden_size=66"], "--model hidden_size=66 is not a multiple of num_attention_heads=4"),
    (["train", "--model", "hidden_dropout_prob=1.5"], "a dropout probability is in [0, 1)"),
    (["train", "--block-size", "64"], "unrecognized arguments: --block-size"),
    (["train", "bogus"], "unknown task 'bogus'; choose from classification, lm, pretrain, distill, news, summarize"),
    (["train", "--config", "{tmp}/missing.yaml"], "--config: {tmp}/missing.yaml: no such file"),
    (["train", "--config", "{tmp}/bad.yaml"], "--config: {tmp}/bad.yaml: not valid YAML"),
    (
        ["train", "--config", "{tmp}/unknown.json"],
        "--config: {tmp}/unknown.json: epoch: no such setting for this task; did you mean epochs? (known: ",
    ),
    (["train", "--config", "{tmp}/wrongtype.json"], "--epochs: expected a number, got 'three'"),
    (["train", "--config", "{tmp}/model5.yaml"], "model: 5 is not a mapping of FastformerConfig fields"),
    (["train", "--train", "{tmp}", "--output-dir", "{tmp}", "--overwrite"], "{tmp} is the --train data {tmp}"),
    (["train", "--train", "{tmp}", "--output-dir", "{tmp}/run"], "{tmp}/run lies inside the --train data {tmp}"),
    (
        ["train", "summarize", "--train", "{tmp}/short.csv", "--split", "1", "0", "0"],
        "--split: 1 0 0: train and validation need at least 1 pair each",
    ),
    (["train", "--where", "dev:split=x"], "--where 'dev:split=x': expected SPLIT:KEY=VALUE"),
    (["train", "lm"], "--train: language modelling needs a file of documents"),
    (["train", "news", "--train", "{tmp}", "--negatives", "0"], "--negatives: must be >= 1, got 0"),
    (["train", "news", "--train", "{tmp}", "--news-fields", "title,body"], "--news-fields: 'body'"),
    (["train", "summarize", "--train", "{tmp}/short.csv", "--split", "1", "2"], "train summarize: --split: expected 3"),
    (["train", "--train", "{tmp}/short.csv", "--output-dir", "{tmp}/out"], "short.csv:3: expected 2 fields, found 1"),
    (["train", "--output-dir", "{tmp}/someone-elses"], "not empty and not made by a fastformer run"),
    (["train", "--resume", "--output-dir", "{tmp}/someone-elses"], "not a run folder (no .fastformer-run)"),
    (["evaluate", "{tmp}/nowhere", "--data", "x.csv"], "{tmp}/nowhere: no such folder"),
    (["evaluate", "{tmp}/nowhere", "--data", "x.csv", "--max-examples", "0"], "--max-examples: must be >= 1, got 0"),
    (["evaluate", "{tmp}/nowhere"], "--data: required: the labelled data to evaluate on"),
    (["evaluate", "{tmp}/nowhere", "--data", "x.csv", "--where", "split"], "--where 'split': expected KEY=VALUE"),
    (["evaluate", "{tmp}/nowhere", "--data", "x.csv", "--num-beams", "0"], "--num-beams: must be >= 1, got 0"),
    (["evaluate", "{tmp}/someone-elses", "--data", "x.csv"], "not a folder written by `fastformer train`"),
    (["predict", "{tmp}/someone-elses", "hello"], "not a folder written by `fastformer train`"),
    (["generate", "{tmp}/someone-elses", "--file", "{tmp}"], "holds folders (someone-elses): a folder of documents"),
    (["generate", "{tmp}/someone-elses", "--file", "{tmp}/nowhere"], "{tmp}/nowhere: no such file"),
    (["bench", "--variants", "nope"], "--variants: unknown ['nope']"),
    # abbreviations are refused: argparse would read them as --epochs / --sweep, and a typo would change the run
    (
        ["train", "--epoch", "3", "--output-dir", "{tmp}/out"],
        "unrecognized arguments: --epoch; did you mean --epochs?",
    ),
    (["bench", "--swe", "paper"], "unrecognized arguments: --swe; did you mean --sweep?"),
    (
        ["explain", "{tmp}/nowhere", "--top-kk", "3", "a text"],
        "unrecognized arguments: --top-kk; did you mean --top-k?",  # (argparse lists its value and the text too)
    ),
    # a positional spelt as a flag, as other tools spell it, is named (difflib offered --help for --model)
    (
        ["evaluate", "--model", "{tmp}/nowhere", "--data", "x.csv"],
        "unrecognized arguments: --model; model_dir is given by position, without a flag (",
    ),
    (
        ["predict", "--model-dir", "{tmp}/nowhere", "--text", "hi", "--max-lenght", "3"],
        "--model-dir --text --max-lenght; model_dir, texts are given by position, without a flag; did you mean "
        "--max-length?",
    ),
    (["train", "lm", "--task", "lm"], "the task is given by position, first, without a flag: fastformer train TASK"),
    # a misspelt command, task or choice: the one it likely meant
    (["trian"], "invalid choice: 'trian' (choose from 'train', "),
    (["convert_bert", "x", "y"], "; did you mean convert-bert?"),
    (["train", "summarise"], "unknown task 'summarise'; choose from classification, "),
    (["train", "summarise"], "; did you mean summarize?"),
    (
        ["train", "--architecture", "fastformr"],
        "'fastformr' is not one of fastformer, softmax, tfidf, nbsvm; did you mean fastformer?",
    ),
    (
        ["train", "--truncation", "head_tail"],
        "--truncation: 'head_tail' is not one of head, head+tail; did you mean head+tail?",
    ),
    (
        ["train", "--train", str(SST / "sst_dev.txt"), "--binary-threshold", "7", "--output-dir", "{tmp}/out"],
        "--binary-threshold 7: the labels run from 1 to 5, all under 7, so every example would be 'neg'; give one",
    ),
    # decoding flags: checked before the folder is read (--num-beams 0 was a ZeroDivisionError, --top-p 2 taken)
    (["generate", "{tmp}/nowhere", "x", "--num-beams", "0"], "fastformer generate: --num-beams: must be >= 1, got 0"),
    (["generate", "{tmp}/nowhere", "x", "--do-sample", "--top-p", "2"], "--top-p: must be in (0, 1], got 2"),
    (["generate", "{tmp}/nowhere", "x", "--do-sample", "--temperature", "nan"], "--temperature: must be > 0"),
    (["generate", "{tmp}/nowhere", "x", "--temperature", "0.7"], "--temperature only acts when sampling: add --do-s"),
    (["generate", "{tmp}/nowhere", "x", "--top-k", "5", "--top-p", "0.9"], "--top-k and --top-p only act when sam"),
    # bench and demo: a size of 0 or an uneven head split was a traceback inside the layer or the plot
    (["bench", "--fast", "--lengths", "0"], "fastformer bench: --lengths: must be >= 1, got 0 (--help"),
    (["bench", "--fast", "--heads", "3", "--hidden-size", "100"], "--hidden-size 100 does not split into --heads 3"),
    (["bench", "--fast", "--repeats", "0"], "fastformer bench: --repeats: must be >= 1, got 0"),
    (["bench", "--fast", "--budget-s", "inf"], "fastformer bench: --budget-s: must be a finite number, got inf"),
    (["bench", "--fast", "--device", "tpu"], "fastformer bench: --device 'tpu': cpu, cuda or cuda:N"),
    (["bench", "--sweep", "fixd"], "--sweep: invalid choice: 'fixd' (choose from 'paper', 'fixed', 'both'); did you"),
    (
        ["convert-mindrec", "{tmp}/nothere.json", "{tmp}/out"],
        "fastformer convert-mindrec: {tmp}/nothere.json: no such file",
    ),
    (["demo", "--heads", "0"], "fastformer demo: --heads: must be >= 1, got 0"),
    (["demo", "--batch-size", "x"], "fastformer demo: --batch-size: expected an integer, got 'x'"),
    (["demo", "--json", "{tmp}/nowhere/x.json"], "fastformer demo: --json {tmp}/nowhere/x.json: its folder"),
    (["train", "--output-dir", "{tmp}/bad.yaml"], "{tmp}/bad.yaml: exists and is not a folder"),
    (["train", "--warmup", "nan"], "--warmup: must be a finite number, got nan"),
    (["train", "--seed", "-1"], "--seed: must be >= 0, got -1"),
    (["train", "--train", "{tmp}/mixed.jsonl", "--output-dir", "{tmp}/out"], "the labels mix true / false with 0 / 1"),
    (
        ["train", "--format", "mind-topics", "--train", "{tmp}/news.tsv", "--output-dir", "{tmp}/out"],
        "no validation or test texts could be cut from the training texts",
    ),
    (["train", "--learning-rate", "inf"], "--learning-rate: must be a finite number, got inf"),
    (["train", "--tokenizer", "{tmp}/someone-elses"], "someone-elses: holds no tokenizer (no tokenizer.json"),
    (
        ["train", "--train", "{tmp}/words.csv", "--binary-threshold", "3", "--output-dir", "{tmp}/out"],
        "is not a number; --binary-threshold 3 splits numeric labels",
    ),
]


@pytest.mark.parametrize("argv, message", USER_ERRORS, ids=[" ".join(a)[:60] for a, _ in USER_ERRORS])
def test_a_user_error_is_one_line_before_anything_runs(tmp_path, argv, message):
    bad_files(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as error:
        main(argv)
    text = str(error.value.code)
    assert isinstance(error.value.code, str) and "\n" not in text, text
    assert message.replace("{tmp}", str(tmp_path)) in text
    assert not (tmp_path / "out").exists()  # refused (its data too) before a folder was made, or the folder undone
    assert (tmp_path / "someone-elses" / "notes.txt").read_text() == "mine"


def test_version_prints_the_package_version(capsys):
    from fastformer.version import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"fastformer {__version__}\n"


def test_the_console_script_exits_2_without_a_traceback(tmp_path, monkeypatch, capsys):
    """The installed script, in a process of its own once; the other errors through the same entry function
    (`console`, what the script calls) in this process: each a fresh interpreter would add ~3 s of imports."""
    from fastformer.cli.main import console

    result = fastformer("train", "--epochs", "-1")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr and lines[0].startswith("fastformer "), lines
    for argv in (
        ["train", "--model", "nope=1"],
        ["evaluate", str(tmp_path), "--data", "x"],
        ["train", "news", "--train", str(tmp_path / "none")],
    ):
        monkeypatch.setattr(sys, "argv", ["fastformer", *argv])
        assert console() == 2, argv
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err and lines[0].startswith("fastformer "), (argv, lines)


def _plant(folder: Path) -> dict[Path, str]:
    files = {folder / "notes.txt": "mine", folder / "data" / "mine.csv": "1,text\n"}
    files[folder / "predictions_mine.jsonl"] = "{}"
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def _intact(files: dict[Path, str]) -> None:
    for path, text in files.items():
        assert path.read_text() == text, path


def test_planted_files_survive_train_overwrite_resume_and_evaluate(tmp_path):
    out = tmp_path / "run"
    planted = _plant(out)
    with pytest.raises(SystemExit, match="not empty and not made by a fastformer run"):
        main(["train", *TINY, "--output-dir", str(out)])
    _intact(planted)
    sst = ["--train", str(SST / "sst_train.txt"), "--validation", str(SST / "sst_dev.txt"), "--subset", "first"]
    with pytest.raises(SystemExit, match="not empty and not made by a fastformer run"):
        main(["train", *sst, *TINY, "--output-dir", str(out)])
    _intact(planted)
    assert main(["train", *sst, *TINY, "--output-dir", str(out), "--overwrite"]) == 0
    _intact(planted)
    first = json.loads((out / "run_complete.json").read_text())
    assert "notes.txt" not in first["files"] and "model.safetensors" in first["files"]
    trained = json.loads((out / "metrics.json").read_text())
    assert main(["train", *sst, *TINY, "--output-dir", str(out), "--resume"]) == 0
    _intact(planted)
    # resumed from its last step, a complete run trains no step: the same model and scores, and no made-up speed
    resumed = json.loads((out / "metrics.json").read_text())
    assert resumed["train"]["resumed_from"] and resumed["train"]["steps"] == trained["train"]["steps"]
    assert resumed["validation"] == trained["validation"]
    assert trained["train"]["tokens_per_s"] > 0 and resumed["train"]["tokens_per_s"] is None
    assert trained["closing_evaluation_seconds"] > 0 and resumed["closing_evaluation_seconds"] > 0  # it scores anew
    assert main(["train", *sst, *TINY, "--output-dir", str(out), "--overwrite", "--seed", "7"]) == 0
    _intact(planted)
    assert main(["evaluate", str(out), "--data", str(SST / "sst_dev.txt"), "--max-examples", "20"]) == 0
    assert main(["evaluate", str(out), "--data", str(SST / "sst_dev.txt"), "--max-examples", "20"]) == 0
    assert (out / "evaluations" / "sst_dev" / "metrics.json").is_file()
    assert (out / "evaluations" / "sst_dev-2" / "metrics.json").is_file()  # a second evaluation never overwrites
    with pytest.raises(SystemExit, match="inside .* which this command reads or a run wrote"):
        main(["evaluate", str(out), "--data", str(SST / "sst_dev.txt"), "--output", str(out / "metrics.json")])
    with pytest.raises(SystemExit, match="is an input of this command"):
        main(["evaluate", str(out), "--data", str(tmp_path / "d.csv"), "--output", str(tmp_path / "d.csv")])
    _intact(planted)
    # a folder of the user's where the run keeps its tokenizer or checkpoints: refused, untouched
    for folder in (out / "tokenizer", out / "checkpoints" / "checkpoint-999"):
        other = tmp_path / "other"
        (other / folder.relative_to(out)).mkdir(parents=True)
        (other / folder.relative_to(out) / "keep.txt").write_text("keep")
        with pytest.raises(SystemExit, match="no run (of this version )?wrote"):
            main(["train", *sst, *TINY, "--output-dir", str(other), "--overwrite"])
        assert (other / folder.relative_to(out) / "keep.txt").read_text() == "keep"
        shutil.rmtree(other)
    # a file of the user's inside the run's own tokenizer/ and checkpoint-N/ folders: --overwrite keeps it
    inside = [out / "tokenizer" / "my-notes.txt", *(c / "mine.txt" for c in (out / "checkpoints").glob("checkpoint-*"))]
    assert len(inside) > 1
    for path in inside:
        path.write_text("mine")
    assert main(["train", *sst, *TINY, "--output-dir", str(out), "--overwrite", "--seed", "8"]) == 0
    for path in inside:
        assert path.read_text() == "mine", path
    assert (out / "tokenizer" / "tokenizer.json").is_file()  # the new run's tokenizer beside the user's file
    _intact(planted)
    # a classifier is not a language model: generate refuses it (it used to write text from a random head)
    with pytest.raises(SystemExit, match="holds a classification run, which does not generate"):
        main(["generate", str(out), "A film"])


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_resume_with_changed_settings_is_refused_names_them_and_touches_nothing(tmp_path, monkeypatch):
    from fastformer.engine import skeleton as run

    assert run.release_freed_memory() is True  # glibc here (and in CI): freed memory goes back after each step
    calls = []
    monkeypatch.setattr(run, "release_freed_memory", lambda: calls.append(1))
    out = tmp_path / "run"
    assert main(["train", *TINY, "--output-dir", str(out)]) == 0
    steps = json.loads((out / "metrics.json").read_text())["train"]["steps"]
    assert len(calls) >= steps > 0  # after every training step (and each evaluation)
    # and after each batch of the final predictions, whose batches grow in length (at 1,024 tokens a process's
    # memory grew to 9.5 GB over IMDB's 25,000 test reviews untrimmed)
    from fastformer.tasks.classification import classifier as classification

    batches = []
    monkeypatch.setattr(classification, "release_freed_memory", lambda: batches.append(1))
    assert main(["train", *TINY, "--output-dir", str(tmp_path / "again")]) == 0
    metrics = json.loads((tmp_path / "again" / "metrics.json").read_text())
    splits = [metrics[s]["examples"] for s in ("validation", "test") if s in metrics]
    import inspect

    batch = inspect.signature(classification.predict_dataset).parameters["batch_size"].default
    assert splits and len(batches) == sum(-(-n // batch) for n in splits)
    monkeypatch.undo()
    before = _snapshot(out)
    with pytest.raises(SystemExit) as error:
        main(["train", *TINY, "--output-dir", str(out), "--resume", "--epochs", "2", "--learning-rate", "0.01"])
    message = str(error.value.code)
    assert "trained with other settings" in message
    assert "epochs: 1.0 -> 2.0" in message and "learning_rate: 0.001 -> 0.01" in message
    # the refused resume left the complete run exactly as it was (it used to delete its model and metrics)
    assert _snapshot(out) == before
    # a complete run whose checkpoints are gone is compared by its manifest instead of silently retrained
    shutil.rmtree(out / "checkpoints")
    before = _snapshot(out)
    with pytest.raises(SystemExit, match="holds a complete run trained with other settings"):
        main(["train", *TINY, "--output-dir", str(out), "--resume", "--epochs", "2"])
    assert _snapshot(out) == before
    # settings that do not shape the weights may change
    assert main(["train", *TINY, "--output-dir", str(out), "--resume", "--logging-steps", "3"]) == 0
    # a kill at the instant a checkpoint folder is made: the folder appears with its fingerprint inside, and an empty
    # one (an earlier version killed there) does not block --resume
    from fastformer.engine.folder import FINGERPRINT, RunFolder

    made = out / "checkpoints" / "checkpoint-7777"
    RunFolder(out, "classification", {}).write_fingerprint(made)
    assert (made / FINGERPRINT).is_file() and not list((out / "checkpoints").glob(".*partial"))
    shutil.rmtree(made)
    (out / "checkpoints" / "checkpoint-8888").mkdir()
    assert main(["train", *TINY, "--output-dir", str(out), "--resume", "--logging-steps", "3"]) == 0


def test_a_run_failed_on_its_data_does_not_lock_its_folder(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("text,label\nA moving film,pos\nA dull film\n")  # row 3 lacks its label
    out = tmp_path / "run"
    with pytest.raises(SystemExit, match="data.csv:3: expected 2 fields"):
        main(["train", "--train", str(data), *TINY, "--output-dir", str(out)])
    assert not out.exists()  # refused before the folder was claimed: nothing left behind
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not empty and not made by a fastformer run"):
        main(["train", "--train", str(data), *TINY, "--output-dir", str(out)])
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    (out / "notes.txt").unlink()
    data.write_text(
        "text,label\n" + "".join(f"A {w} film,{label}\n" for w, label in [("moving", "pos"), ("dull", "neg")] * 40)
    )
    assert main(["train", "--train", str(data), *TINY, "--output-dir", str(out)]) == 0  # fixed: no flags needed
    # the data edited under the same path (one label, the same size): --resume notices, and changes nothing
    data.write_text(data.read_text().replace("A dull film,neg", "A dull film,pos", 1))
    before = _snapshot(out)
    with pytest.raises(SystemExit, match=r"its data changed since it was trained \(.*data.csv"):
        main(["train", "--train", str(data), *TINY, "--output-dir", str(out), "--resume"])
    assert _snapshot(out) == before
    # word vectors an --overwrite of the finished run cannot use, refused before the run begins so the run stays
    # whole: malformed ones, read by the word tokenizer (made once the run had begun, which removed its weights
    # first), and well-formed ones of none of the vocabulary's words, refused as the model is built (now before begin)
    vectors = tmp_path / "vectors.txt"
    overwrite = ["train", "--train", str(data), *TINY, "--output-dir", str(out), "--overwrite"]
    for text, refusal in [
        ("a 0.1 0.2 0.3\nfilm 0.1 x 0.3\n", "vectors.txt:2: field 'vector': not a number in the vector of 'film'"),
        ("qzqzq 0.1 0.2 0.3\nzxzxz 0.3 0.2 0.1\n", "vectors.txt: none of the .* vocabulary words has a vector"),
    ]:
        vectors.write_text(text)
        with pytest.raises(SystemExit, match=refusal):
            main([*overwrite, "--word-vectors", str(vectors)])
        assert _snapshot(out) == before


def test_resume_reads_only_what_a_run_loads_of_a_folder(tmp_path):
    """A run started from a folder (--init-from, --teacher) records the digests of the files it may load: a model
    card edited, a plot redrawn or the folder's checkpoints pruned since does not stop --resume; other weights do."""
    import torch
    from safetensors.torch import load_file, save_file

    start, tuned = tmp_path / "start", tmp_path / "tuned"
    assert main(["train", *TINY, "--output-dir", str(start)]) == 0
    assert main(["train", *TINY, "--init-from", str(start), "--output-dir", str(tuned)]) == 0
    (start / "README.md").write_text("# A model card written after the run\n")
    (start / "training.png").write_bytes(b"another plot")
    (start / "metrics.json").write_text("{}")
    shutil.rmtree(start / "checkpoints")
    assert main(["train", *TINY, "--init-from", str(start), "--output-dir", str(tuned), "--resume"]) == 0
    weights = load_file(start / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + torch.ones_like(weights[name])
    save_file(weights, start / "model.safetensors", metadata={"format": "pt"})
    before = _snapshot(tuned)
    with pytest.raises(SystemExit, match=r"its data changed since it was trained \(.*model.safetensors"):
        main(["train", *TINY, "--init-from", str(start), "--output-dir", str(tuned), "--resume"])
    assert _snapshot(tuned) == before


def _wait_for(condition, process, seconds=300):
    deadline = time.time() + seconds
    while not condition():
        assert process.poll() is None, process.communicate()[1][-2000:]
        assert time.time() < deadline
        time.sleep(0.05)


@pytest.mark.slow
def test_a_second_run_is_kept_out_of_a_folder_in_use(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen(
        [EXE, "train", *TINY, "--epochs", "2", "--output-dir", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: (out / "RUN_INCOMPLETE").is_file(), first)
    os.kill(first.pid, signal.SIGSTOP)  # held mid-run (still alive, still holding the folder) while the second tries
    try:
        with pytest.raises(SystemExit, match=r"in use by another run \(pid \d+\)"):
            main(["train", *TINY, "--output-dir", str(out), "--overwrite", "--seed", "9"])
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=600) == 0, first.stderr.read()[-2000:]
    manifest = json.loads((out / "run_complete.json").read_text())
    settings = json.loads((out / "run_config.json").read_text())
    assert settings["epochs"] == 2.0 and settings["seed"] == 42  # the first run's result, whole
    from fastformer.tasks.classification.config import ClassificationConfig

    assert manifest["fingerprint"] == ClassificationConfig.from_dict(settings).fingerprint()


@pytest.mark.slow
def test_a_killed_rerun_never_leaves_a_loadable_mix_of_two_runs(tmp_path):
    out = tmp_path / "run"
    assert main(["train", *TINY, "--output-dir", str(out)]) == 0
    # 5 epochs: a checkpoint after the first, and time to kill the run before it finishes even on a loaded machine
    # (with 3, a starved test process once saw the re-run complete first)
    args = [EXE, "train", *TINY, "--epochs", "5", "--seed", "5", "--output-dir", str(out), "--overwrite"]
    rerun = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    # the re-run has saved a complete checkpoint of its own (its fingerprint names seed 5; RUN_INCOMPLETE alone is
    # not enough: it appears before the first run's files and checkpoints are removed)
    def rerun_checkpoint_saved():
        for state in (out / "checkpoints").glob("checkpoint-*/trainer_state.json"):
            stamp = state.parent / "fingerprint.json"
            if stamp.is_file() and json.loads(stamp.read_text())["settings"]["seed"] == 5:
                return True
        return False

    _wait_for(
        rerun_checkpoint_saved,
        rerun,
    )
    os.kill(rerun.pid, signal.SIGKILL)
    rerun.wait()
    assert (out / "RUN_INCOMPLETE").is_file() and not (out / "run_complete.json").exists()
    assert not (out / "model.safetensors").exists()  # the old model went before the new run began
    assert json.loads((out / "run_config.json").read_text())["seed"] == 5
    from transformers import AutoModelForSequenceClassification

    import fastformer.models  # noqa: F401

    with pytest.raises((OSError, ValueError)):  # no config.json, no weights: nothing of either run loads
        AutoModelForSequenceClassification.from_pretrained(out)
    with pytest.raises(SystemExit, match="its run has not finished"):
        main(["evaluate", str(out), "--data", "x.csv"])
    # the killed run resumes to a complete folder
    assert main(["train", *TINY, "--epochs", "5", "--seed", "5", "--output-dir", str(out), "--resume"]) == 0
    assert (out / "run_complete.json").is_file() and not (out / "RUN_INCOMPLETE").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train"]["resumed_from"] and metrics["train"]["final_loss"] > 0


def test_a_diverged_run_is_an_error_and_never_complete(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as error:
        main(["train", *TINY, "--learning-rate", "1e6", "--logging-steps", "1", "--output-dir", str(out)])
    assert "training diverged" in str(error.value.code) and "\n" not in str(error.value.code)
    assert not (out / "run_complete.json").exists() and not (out / "model.safetensors").exists()


def test_one_class_is_an_error_before_training(tmp_path):
    data = tmp_path / "one.csv"
    data.write_text("text,label\n" + "".join(f"review {i},pos\n" for i in range(20)))
    with pytest.raises(SystemExit, match=r"the training data holds one class \('pos'\)"):
        main(["train", "--train", str(data), *TINY, "--output-dir", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def test_a_run_killed_while_moving_its_files_in_leaves_nothing_the_next_run_keeps(tmp_path, monkeypatch):
    """Killed after its weights were moved into place but before run_complete.json: the next run (killed too, say)
    must not leave that model beside its own run_config.json. `finish` lists what it moves before moving it, and
    `begin` removes what the list names when there is no manifest."""
    import fastformer.engine.folder as run_folder
    from fastformer.engine.folder import RunFolder

    path = tmp_path / "run"
    with RunFolder(path, "classification", {"seed": 1}) as first:
        first.begin()
        for name in ("config.json", "model.safetensors", "metrics.json"):
            (first.staging / name).write_text(name)
        real_replace = run_folder.os.replace

        def killed_at_the_manifest(source, target):
            if Path(target).name == run_folder.COMPLETE:
                raise KeyboardInterrupt  # the kill
            real_replace(source, target)

        monkeypatch.setattr(run_folder.os, "replace", killed_at_the_manifest)
        with pytest.raises(KeyboardInterrupt):
            first.finish()
        monkeypatch.setattr(run_folder.os, "replace", real_replace)
    assert (path / "model.safetensors").is_file() and not (path / run_folder.COMPLETE).exists()
    (path / "notes.txt").write_text("mine")
    with RunFolder(path, "classification", {"seed": 2}, overwrite=True) as second:
        second.begin()
        assert not (path / "model.safetensors").exists() and not (path / "config.json").exists()
    assert (path / "notes.txt").read_text() == "mine"


def test_nothing_is_written_through_a_symbolic_link(tmp_path):
    """A `.lock` or `run_config.json` link in the run folder, or the folder itself a link: refused in one line
    naming the link, the link's target unchanged (the lock used to overwrite it with "pid N" even when refused)."""
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    args = ["train", "--train", str(SHARED / "data" / "sst5" / "sst_train.txt"), "--max-train-examples", "32",
            "--max-eval-examples", "8", "--epochs", "1", "--no-progress", "--model", "hidden_size=16",
            "--model", "num_attention_heads=2", "--model", "intermediate_size=16", "--vocab-size", "300"]  # fmt: skip
    real = tmp_path / "real"
    real.mkdir()
    cases = []
    for name in (".lock", "run_config.json"):
        folder = tmp_path / f"with-{name.strip('.')}"
        folder.mkdir()
        (folder / name).symlink_to(outside)
        cases.append((folder, name, ["--overwrite"]))
    link = tmp_path / "link"
    link.symlink_to(real)
    cases.append((link, "link", []))
    for folder, name, extra in cases:
        with pytest.raises(SystemExit) as refused:
            main([*args, *extra, "--output-dir", str(folder)])
        message = str(refused.value.code)
        assert "symbolic link" in message and name in message and "\n" not in message, message
        assert outside.read_text() == "keep me"
    assert list(real.iterdir()) == []


def test_the_time_estimate_is_one_line_once_enough_steps_have_run(capsys):
    from types import SimpleNamespace

    from fastformer.engine.skeleton import estimate_callback

    callback = estimate_callback("classification", after_seconds=0.0, after_steps=3)
    state = SimpleNamespace(global_step=0, max_steps=103, is_world_process_zero=True)
    callback.on_train_begin(None, state, None)
    for step in range(1, 8):
        state.global_step = step
        callback.on_step_end(None, state, None)
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("classification: step 3 of 103, ")
    assert "of training left (evaluations not counted)" in lines[0]


def test_a_checkpoint_that_does_not_fit_stops_the_run_in_one_line_before_it_is_begun(tmp_path, monkeypatch):
    """torch's writer aborts the process when the disk fills inside a save; the run checks the room a checkpoint
    needs (the last one's size, or three copies of the weights) before the Trainer begins it, and stops as a full
    disk does: one line, no partial checkpoint, and --resume continues once there is room."""
    import collections

    from fastformer.engine import skeleton

    out = tmp_path / "run"
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(skeleton.shutil, "disk_usage", lambda path: usage(2**30, 2**30 - 4096, 4096))
    with pytest.raises(SystemExit) as error:
        main(["train", *TINY, "--output-dir", str(out)])
    message = str(error.value.code)
    assert "No space left for the checkpoint of step" in message and "--resume" in message and "\n" not in message
    assert not (out / "run_complete.json").exists()
    assert not list((out / "checkpoints").glob("checkpoint-*"))
    monkeypatch.undo()  # room again
    assert main(["train", *TINY, "--output-dir", str(out), "--resume"]) == 0
    assert (out / "run_complete.json").is_file()


def test_a_time_limit_stops_training_and_the_run_still_finishes(tmp_path, monkeypatch):
    """--time-limit: the step that passes the limit is saved and evaluated, the run completes (metrics, weights,
    run_complete.json) and metrics.json says where it stopped. The clock is the test's: every reading 30 s on."""
    from fastformer.engine import skeleton

    clock = iter(range(0, 10**6, 30))
    monkeypatch.setattr(skeleton.time, "perf_counter", lambda: float(next(clock)))
    out = tmp_path / "run"
    args = [*TINY, "--epochs", "50", "--time-limit", "2"]  # 200 examples / 32 = 7 steps an epoch: 350 steps asked
    assert main(["train", *args, "--output-dir", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    stop = metrics["train"]["stopped_by_time_limit_at_step"]
    assert stop is not None and 1 <= stop < 350 and metrics["train"]["steps"] == stop
    log = json.loads((out / "log_history.json").read_text())
    assert any(h.get("step") == stop and "eval_loss" in h for h in log), "the last step is evaluated"
    assert (out / "run_complete.json").is_file() and (out / "model.safetensors").is_file()


def test_sigterm_stops_at_the_step_in_flight_with_its_checkpoint_and_resume_ends_as_if_never_stopped(
    tmp_path, monkeypatch, capsys
):
    """SIGTERM (a scheduler pre-empting the job, a session ending) mid-step: the step finishes, its checkpoint is
    written, one line and exit code 143, the folder still incomplete; `--resume` continues from that step (not from
    the last evaluation's checkpoint) and ends with the weights of a run never stopped. The run's handler is gone
    once training ends. The signal is the real one, sent by the process to itself during step 4."""
    import torch
    from safetensors.torch import load_file
    from transformers import Trainer

    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    args = [*TINY, "--epochs", "2"]  # 7 steps an epoch, a checkpoint at each epoch's end
    original = Trainer.training_step

    def training_step(self, *step_args, **step_kwargs):
        if self.state.global_step == 3 and Path(self.args.output_dir).parent == stopped:  # (the 4th step)
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *step_args, **step_kwargs)

    monkeypatch.setattr(Trainer, "training_step", training_step)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["train", *args, "--output-dir", str(stopped)]) == 143
    assert signal.getsignal(signal.SIGTERM) is before
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "fastformer train classification: stopped by SIGTERM at step 4 of 14, its checkpoint is written (the same "
        "command with --resume continues from it)"
    )
    assert [p.name for p in (stopped / "checkpoints").glob("checkpoint-*")] == ["checkpoint-4"]
    assert (stopped / "RUN_INCOMPLETE").exists() and not (stopped / "model.safetensors").exists()

    assert main(["train", *args, "--output-dir", str(stopped), "--resume"]) == 0
    resumed = json.loads((stopped / "metrics.json").read_text())["train"]
    assert Path(resumed["resumed_from"]).name == "checkpoint-4"
    assert main(["train", *args, "--tokenizer", str(stopped / "tokenizer"), "--output-dir", str(whole)]) == 0
    got, expected = load_file(stopped / "model.safetensors"), load_file(whole / "model.safetensors")
    assert got.keys() == expected.keys() and all(torch.equal(got[name], expected[name]) for name in got)
    # the stop evaluated nothing: the evaluations are the unstopped run's, at the ends of the two epochs
    evaluated = [h["step"] for h in json.loads((stopped / "log_history.json").read_text()) if "eval_loss" in h]
    assert evaluated == [7, 14]


def test_sigterm_handler_lives_only_while_training_and_a_second_sigterm_acts_at_once():
    from types import SimpleNamespace

    from fastformer.engine.skeleton import stop_signal_callback

    before = signal.getsignal(signal.SIGTERM)
    callback = stop_signal_callback()
    state = SimpleNamespace(global_step=0, max_steps=9, epoch=0.0)
    control = SimpleNamespace(should_training_stop=False, should_save=False, should_evaluate=False)
    callback.on_train_begin(None, state, control)
    assert signal.getsignal(signal.SIGTERM) == callback._receive
    state.global_step = 1
    callback.on_step_end(None, state, control)
    assert not (control.should_training_stop or control.should_save)
    callback._receive(signal.SIGTERM, None)  # (as the signal would: a second one then meets the earlier handler)
    assert signal.getsignal(signal.SIGTERM) is before
    state.global_step = 2
    callback.on_step_end(None, state, control)
    assert control.should_training_stop and control.should_save and callback.stopped_at == 2
    state.epoch, control.should_evaluate = 2 / 3, True  # the epoch cut short: its end-of-epoch flow is not made
    callback.on_epoch_end(None, state, control)
    assert not (control.should_evaluate or control.should_save)
    callback.on_train_end(None, state, control)
    assert signal.getsignal(signal.SIGTERM) is before
