"""Classification end to end through the command line: train, save, reload, evaluate, predict, resume, torchrun."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from fastformer.cli.main import main
from fastformer.cli.settings import resolve_settings
from fastformer.cli.train import build_parser
from fastformer.engine.settings import SettingError
from fastformer.tasks.classification.config import ClassificationConfig
from tests.helpers import SHARED

SST = SHARED / "data" / "sst5"
TINY = [
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=32",
    "--vocab-size",
    "600",
    "--max-length",
    "64",
    "--no-progress",
]


def fastformer(*args: str, **kwargs) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "fastformer"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, **kwargs)


def test_builtin_task_trains_saves_and_reloads(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--output-dir",
                str(out),
                "--max-train-examples",
                "400",
                "--epochs",
                "1",
                "--max-eval-examples",
                "100",
                *TINY,
            ]
        )
        == 0
    )
    printed = capsys.readouterr().err
    # before training, one line says what was read (a swapped column shows here); after it, the files written
    before = json.loads(printed.split("fastformer train classification: ", 1)[1].splitlines()[0])
    assert before["examples"] == {"train": 400, "validation": 100, "test": 100}
    assert sorted(before["training_labels"]) == ["0", "1", "2", "3"] and sum(before["training_labels"].values()) == 400
    assert f"wrote {out}: config.json" in printed and "model.safetensors" in printed
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "metrics.json",
        "run_config.json",
        "predictions_validation.jsonl",
        "predictions_test.jsonl",
        "training.png",
    ):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["examples"] == 100 and 0 <= metrics["test"]["macro_f1"] <= 1
    assert len(metrics["test"]["confusion_matrix"]) == 4
    assert metrics["train"]["tokens_per_s"] > 0
    import fastformer.models  # noqa: F401

    model = AutoModelForSequenceClassification.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.id2label == {0: "0", 1: "1", 2: "2", 3: "3"}
    assert tokenizer.pad_token_id == model.config.pad_token_id == 0
    capsys.readouterr()
    assert main(["predict", str(out), "w1 w2 mark2x0 w3 mark2x1", "w5"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and set(rows[0]["probabilities"]) == {"0", "1", "2", "3"}
    # Hugging Face clients truncate to the run's max length (the tokenizer's model_max_length): a 3,000-token text
    from transformers import pipeline

    assert tokenizer.model_max_length == 64
    long_text = " ".join(["w1 w2 mark2x0 w3"] * 750)
    label = pipeline("text-classification", model=str(out), tokenizer=str(out))(long_text, truncation=True)
    assert label[0]["label"] in {"0", "1", "2", "3"}


@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_real_data_sst5_and_unknown_labels_at_evaluation(tmp_path, capsys):
    out = tmp_path / "sst"
    assert (
        main(
            [
                "train",
                "--train",
                str(SST / "sst_train.txt"),
                "--validation",
                str(SST / "sst_dev.txt"),
                "--test",
                str(SST / "sst_test.txt"),
                "--max-train-examples",
                "300",
                "--max-eval-examples",
                "100",
                "--epochs",
                "1",
                "--batch-size",
                "32",
                "--output-dir",
                str(out),
                *TINY,
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["validation"]["labels"] == ["1", "2", "3", "4", "5"]
    assert main(["evaluate", str(out), "--data", str(SST / "sst_dev.txt")]) == 0
    assert json.loads((out / "evaluations" / "sst_dev" / "metrics.json").read_text())["examples"] == 1101
    bad = tmp_path / "other.csv"
    bad.write_text("3,fine\n9,unseen label\n")
    with pytest.raises(SystemExit, match=r"other.csv:2: field 'label': label '9' was not seen in training"):
        main(["evaluate", str(out), "--data", str(bad)])
    assert not (out / "evaluations" / "other").exists()  # a failed evaluation leaves no folder behind
    # a flag the task does not read is refused, not ignored, before anything is written
    with pytest.raises(SystemExit, match=r"--num-beams, --source-field: not read when evaluating a classification run"):
        main(["evaluate", str(out), "--data", str(bad), "--num-beams", "4", "--source-field", "text"])
    assert not (out / "evaluations" / "other").exists()


@pytest.mark.slow
@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_baselines_in_the_same_pipeline(tmp_path):
    """The softmax-attention model and TF-IDF + logistic regression train, evaluate and save like Fastformer."""
    data = [
        "--train",
        str(SST / "sst_train.txt"),
        "--validation",
        str(SST / "sst_dev.txt"),
        "--test",
        str(SST / "sst_test.txt"),
        "--max-eval-examples",
        "300",
        "--subset",
        "first",
    ]
    softmax = tmp_path / "softmax"
    assert (
        main(
            [
                "train",
                *data,
                "--max-train-examples",
                "300",
                "--epochs",
                "1",
                "--architecture",
                "softmax",
                "--output-dir",
                str(softmax),
                *TINY,
            ]
        )
        == 0
    )
    import fastformer.models  # noqa: F401
    from fastformer.layers import SoftmaxAttention

    model = AutoModelForSequenceClassification.from_pretrained(softmax)
    assert model.config.attention_type == "softmax"
    assert isinstance(model.fastformer.encoder.layers[0].attention, SoftmaxAttention)
    assert json.loads((softmax / "metrics.json").read_text())["architecture"] == "softmax"

    tfidf = tmp_path / "tfidf"
    data += ["--max-train-examples", "4000"]  # of 8,544: the bag-of-words fits are most of this test's time
    assert main(["train", *data, "--architecture", "tfidf", "--output-dir", str(tfidf)]) == 0
    metrics = json.loads((tfidf / "metrics.json").read_text())
    assert (tfidf / "tfidf.safetensors").is_file() and (tfidf / "predictions_test.jsonl").is_file()
    assert not list(tfidf.glob("*.joblib")) and not list(tfidf.glob("*.pkl"))  # nothing that unpickles
    assert metrics["train"]["chosen_c"] in metrics["train"]["c_grid"]
    # 5 classes: chance is 0.2; TF-IDF + LR on the full SST-5 training set reaches about 0.4
    assert metrics["test"]["accuracy"] > 0.3 and metrics["test"]["examples"] == 300
    # the TF-IDF folder evaluates and predicts as a model's does
    assert main(["evaluate", str(tfidf), "--data", str(SST / "sst_test.txt"), "--max-examples", "300"]) == 0
    again = json.loads((tfidf / "evaluations" / "sst_test" / "metrics.json").read_text())
    assert again["accuracy"] == metrics["test"]["accuracy"]  # the same 300 test examples (file order)
    # the pipeline rebuilt from plain data gives the fitted one's probabilities
    saved = [json.loads(line)["probability"] for line in (tfidf / "predictions_test.jsonl").read_text().splitlines()]
    rebuilt = (tfidf / "evaluations" / "sst_test" / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(line)["probability"] for line in rebuilt] == saved
    assert main(["predict", str(tfidf), "a gorgeous , witty film", "--output", str(tmp_path / "p.jsonl")]) == 0
    row = json.loads((tmp_path / "p.jsonl").read_text())
    assert set(row["probabilities"]) == {"1", "2", "3", "4", "5"} and row["label"] in row["probabilities"]
    nbsvm = tmp_path / "nbsvm"
    assert main(["train", *data, "--architecture", "nbsvm", "--output-dir", str(nbsvm)]) == 0
    metrics = json.loads((nbsvm / "metrics.json").read_text())
    assert metrics["architecture"] == "nbsvm" and metrics["test"]["accuracy"] > 0.3
    assert main(["evaluate", str(nbsvm), "--data", str(SST / "sst_test.txt"), "--max-examples", "300"]) == 0
    again = json.loads((nbsvm / "evaluations" / "sst_test" / "metrics.json").read_text())
    assert again["accuracy"] == metrics["test"]["accuracy"]  # rebuilt from plain data: the same predictions
    for command in (["predict", str(nbsvm), "a film"], ["evaluate", str(nbsvm), "--data", str(SST / "sst_test.txt")]):
        with pytest.raises(SystemExit, match="--max-length: .* holds the nbsvm baseline, which reads whole texts"):
            main([*command, "--max-length", "64", "--output", str(tmp_path / "refused.json")])
    assert not (tmp_path / "refused.json").exists()
    with pytest.raises(SystemExit, match="--architecture: 'bert' is not one of fastformer, softmax, tfidf, nbsvm"):
        main(["train", *data, "--architecture", "bert", "--output-dir", str(tmp_path / "x")])
    assert not (tmp_path / "x").exists()


def test_config_file_and_flags_resolve_in_order(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("epochs: 2\nlearning_rate: 0.01\nmodel:\n  hidden_size: 48\n")
    args = build_parser("classification").parse_args(
        ["--config", str(config), "--epochs", "5", "--model", "num_attention_heads=3"]
    )
    cfg = resolve_settings(ClassificationConfig, args)
    assert cfg.epochs == 5 and cfg.learning_rate == 0.01
    assert cfg.model["hidden_size"] == 48 and cfg.model["num_attention_heads"] == 3
    config.write_text("epoch: 2\n")
    with pytest.raises(
        SettingError, match=r"\.yaml: epoch: no such setting for this task; did you mean epochs\? \(known: "
    ):
        resolve_settings(ClassificationConfig, build_parser("classification").parse_args(["--config", str(config)]))


def _final_logits(run_dir: Path) -> torch.Tensor:
    import fastformer.models  # noqa: F401

    model = AutoModelForSequenceClassification.from_pretrained(run_dir).eval()
    with torch.no_grad():
        return model(input_ids=torch.arange(1, 65).view(2, 32)).logits


RESUME_ARGS = [
    "train",
    "--max-train-examples",
    "200",
    "--max-eval-examples",
    "40",
    "--epochs",
    "2",
    "--batch-size",
    "8",
    "--seed",
    "3",
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=32",
    "--vocab-size",
    "600",
    "--max-length",
    "32",
    "--no-progress",
]


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_result(tmp_path):
    """A real process killed (SIGKILL) after its first checkpoint, resumed, ends bit-identical to a run never killed."""
    import os
    import signal
    import time

    killed, whole = tmp_path / "killed", tmp_path / "whole"
    exe = str(Path(sys.executable).parent / "fastformer")
    process = subprocess.Popen(
        [exe, *RESUME_ARGS, "--output-dir", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    while not list((killed / "checkpoints").glob("checkpoint-*/trainer_state.json")):
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.1)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (killed / "model.safetensors").exists()
    # the uninterrupted run shares the killed run's tokenizer (WordPiece training breaks ties differently per process);
    # it and the resumed run are independent, so they run side by side
    log = tmp_path / "whole.log"
    with log.open("w") as stderr:
        args = [exe, *RESUME_ARGS, "--tokenizer", str(killed / "tokenizer"), "--output-dir", str(whole)]
        uninterrupted = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr)
        resumed = fastformer(*RESUME_ARGS, "--output-dir", str(killed), "--resume")
        assert uninterrupted.wait(timeout=600) == 0, log.read_text()[-2000:]
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    resumed_train = json.loads((killed / "metrics.json").read_text())["train"]
    assert resumed_train["resumed_from"]
    assert torch.equal(_final_logits(killed), _final_logits(whole))
    # final_loss covers the whole run, not only the steps after the resume
    whole_train = json.loads((whole / "metrics.json").read_text())["train"]
    assert resumed_train["final_loss"] == pytest.approx(whole_train["final_loss"], rel=1e-4)
    # so do run_seconds: the killed process's seconds up to its checkpoint, which the checkpoint recorded, plus the
    # resumed process's (a run trained in one go: its own seconds)
    checkpoint = Path(resumed_train["resumed_from"])
    earlier = json.loads((checkpoint / "fingerprint.json").read_text())["seconds"]
    assert earlier > 0 and resumed_train["run_seconds"] == pytest.approx(earlier + resumed_train["seconds"], abs=0.02)
    assert whole_train["run_seconds"] == whole_train["seconds"]
    # the same command in another process gave the same weights once the vocabulary was fixed with --tokenizer (the
    # documented way: WordPiece training is not deterministic across processes), and the fingerprints say so
    vocabularies = [json.loads((run / "metrics.json").read_text())["tokenizer"] for run in (killed, whole)]
    assert vocabularies[0]["sha256"] == vocabularies[1]["sha256"]
    assert [v["reproducible"] for v in vocabularies] == [False, True]


@pytest.mark.slow
def test_two_torchrun_processes_match_one_process(tmp_path):
    """`torchrun --nproc_per_node 2` (gloo) with the same global batch trains the same model as one process.

    Dropout is off so that the two runs draw no random numbers that differ by process; the order is sequential.
    Each global batch is collated (padded) once and split between the processes, so the only difference left is the
    order of floating-point sums (gradients averaged over processes).
    """
    args = [
        *RESUME_ARGS[:-1],
        "--epochs",
        "1",
        "--sampling",
        "sequential",
        "--logging-steps",
        "1",
        "--model",
        "hidden_dropout_prob=0.0",
        "--no-progress",
    ]
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*args, "--output-dir", str(one)]) == 0  # the one-process run in this process (one import less)
    torchrun = Path(sys.executable).parent / "torchrun"
    exe = str(Path(sys.executable).parent / "fastformer")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    second = subprocess.run(
        # --standalone: a rendezvous on a free local port (a fixed port can be taken by another run of the suite)
        [
            str(torchrun),
            "--standalone",
            "--nproc_per_node",
            "2",
            exe,
            *args,
            "--tokenizer",
            str(one / "tokenizer"),
            "--output-dir",
            str(two),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    losses = [[h["loss"] for h in json.loads((d / "log_history.json").read_text()) if "loss" in h] for d in (one, two)]
    assert len(losses[0]) == len(losses[1]) == 25  # 200 examples / global batch 8
    for step, (a, b) in enumerate(zip(*losses, strict=True)):
        assert abs(a - b) < 1e-4, f"step {step + 1}: loss {a} (1 process) != {b} (2 processes)"
    torch.testing.assert_close(_final_logits(two), _final_logits(one), rtol=1e-4, atol=1e-4)
    # --overwrite of that folder with another vocabulary: the folder still holds the first run's tokenizer while the
    # main process builds its model, and the other process must wait for this launch's own (it once loaded the old
    # one at once: a vocabulary of another size in each process)
    again = [str(torchrun), "--standalone", "--nproc_per_node", "2", exe, *args, "--vocab-size", "250"]
    third = subprocess.run(
        [*again, "--output-dir", str(two), "--overwrite"], capture_output=True, text=True, env=env, timeout=600
    )
    assert third.returncode == 0, third.stderr[-3000:]
    from transformers import AutoTokenizer

    vocabulary = len(AutoTokenizer.from_pretrained(str(two / "tokenizer")))
    assert vocabulary <= 250 != len(AutoTokenizer.from_pretrained(str(one / "tokenizer")))
    assert json.loads((two / "metrics.json").read_text())["inputs"]["vocabulary"] == vocabulary


def test_a_pickled_tfidf_folder_is_refused_unopened(tmp_path):
    """Folders of an earlier version kept the TF-IDF pipeline as a pickle; loading one could run code, so it is
    refused without being opened."""
    import pickle

    class Payload:
        def __reduce__(self):
            return (Path.write_text, (tmp_path / "ran", "code ran"))

    old = tmp_path / "old"
    old.mkdir()
    (old / "model.joblib").write_bytes(pickle.dumps(Payload()))
    (old / "run_config.json").write_text(json.dumps({"architecture": "tfidf"}))
    with pytest.raises(SystemExit, match="saved as a pickle by an earlier version; pickles are not loaded"):
        main(["predict", str(old), "some text"])
    assert not (tmp_path / "ran").exists()


def test_evaluations_per_epoch_checkpoint_inside_an_epoch(tmp_path):
    """--evaluations-per-epoch 3: three evaluations and checkpoints in one epoch (a killed long epoch resumes from
    the last), the best kept; the default stays one per epoch."""
    from fastformer.tasks.classification.task import evaluation_schedule

    assert evaluation_schedule(1, 1000, 32) == dict(eval_strategy="epoch", save_strategy="epoch")
    assert evaluation_schedule(4, 1000, 32) == dict(
        eval_strategy="steps", save_strategy="steps", eval_steps=8, save_steps=8
    )
    out = tmp_path / "run"
    args = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "96", "--max-eval-examples", "16",
            "--batch-size", "16", "--epochs", "1", "--evaluations-per-epoch", "3", *TINY,
            "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0
    log = json.loads((out / "log_history.json").read_text())
    assert [h["step"] for h in log if "eval_accuracy" in h] == [2, 4, 6]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train"]["best_checkpoint"].rsplit("-", 1)[1] in {"2", "4", "6"}


def test_head_and_tail_truncation_keeps_both_ends_with_the_tokenizers_special_tokens(tmp_path):
    """--truncation head+tail: the first 128 tokens and the last ones, inside the tokenizer's own special tokens
    (a BERT tokenizer's [CLS] / [SEP]; none for one a run trains); predict reads texts the run's way."""
    from transformers import BertTokenizerFast

    from fastformer.data.tokenizer import encode_texts, special_tokens_around

    words = [f"w{i}" for i in range(400)]
    bert = BertTokenizerFast(vocab={w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])})
    assert special_tokens_around(bert) == ([2], [3])
    text = " ".join(words)
    ids = encode_texts(bert, [text, "w1 w2"], 300, "head+tail")
    assert len(ids[0]) == 300 and ids[0][0] == 2 and ids[0][-1] == 3
    body = bert.convert_ids_to_tokens(ids[0][1:-1])
    assert body[:128] == words[:128] and body[128:] == words[400 - 170 :]
    assert bert.convert_ids_to_tokens(ids[1]) == ["[CLS]", "w1", "w2", "[SEP]"]
    assert encode_texts(bert, [text], 300, "head")[0][1:5] == bert.convert_tokens_to_ids(words[:4])
    out = tmp_path / "run"
    args = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "48", "--max-eval-examples", "8",
            "--epochs", "1", "--truncation", "head+tail", *TINY, "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0
    from fastformer.tasks.classification.classifier import Classifier

    classifier = Classifier(out)
    assert classifier.truncation == "head+tail" and special_tokens_around(classifier.tokenizer) == ([], [])
    from fastformer.cli.export import _reads  # what export.json tells a server

    assert _reads(str(out), classifier.max_length) == dict(max_length=64, truncation="head+tail", head_tokens=128)
    checkpoint = next((out / "checkpoints").glob("checkpoint-*"))  # evaluated / predicted as its run read texts
    assert Classifier(checkpoint).truncation == "head+tail"
    scored = tmp_path / "checkpoint.json"
    evaluate = ["evaluate", str(checkpoint), "--data", str(SST / "sst_dev.txt"), "--max-examples", "8"]
    assert main([*evaluate, "--output", str(scored)]) == 0 and json.loads(scored.read_text())["examples"] == 8


def test_evaluate_predict_and_explain_read_as_many_tokens_as_the_run_did(tmp_path, capsys, monkeypatch):
    """A folder's model may have more positions than its run read (an --init-from encoder's 8,192; here the 8 a run
    of --max-length 4 gets): evaluate and predict cut texts at the run's --max-length, and under bf16 autocast where
    the run scored so (--bf16), so the folder scores its test split exactly as the run did."""
    from fastformer.tasks.classification.classifier import Classifier

    out = tmp_path / "run"
    # --bf16: scored under autocast, by the run and again by the folder (on any CPU: precision.py)
    monkeypatch.setenv("FASTFORMER_CPU_BF16", "1")
    args = ["train", "--train", str(SST / "sst_train.txt"), "--test", str(SST / "sst_dev.txt"), "--subset", "first",
            "--max-train-examples", "48", "--max-eval-examples", "16", "--epochs", "1", *TINY, "--max-length", "4",
            "--bf16", "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0
    classifier = Classifier(out)
    assert (classifier.max_length, classifier.model.config.max_position_embeddings) == (4, 8)
    scored = tmp_path / "m.json"
    evaluate = ["evaluate", str(out), "--data", str(SST / "sst_dev.txt"), "--max-examples", "16", "--output"]
    assert main([*evaluate, str(scored)]) == 0
    during_training = [json.loads(line) for line in (out / "predictions_test.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert [r["probability"] for r in again] == [r["probability"] for r in during_training]
    assert [(r["source"], r["predicted"]) for r in again] == [(r["source"], r["predicted"]) for r in during_training]
    text = "the plot was dull " + " ".join(["a lovely warm film with fine actors"] * 8)
    capsys.readouterr()
    assert main(["predict", str(out), text, "--max-length", "8"]) == 0  # as many tokens as asked
    assert json.loads(capsys.readouterr().out)["probabilities"] == Classifier(out, 8)([text])[0]["probabilities"]
    assert main(["predict", str(out), text]) == 0
    label = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["label"]
    assert main(["explain", str(out), text, "--output-dir", str(tmp_path / "explained"), "--top-k", "0"]) == 0
    shown = capsys.readouterr().out.split("arg-1: ")[1].splitlines()[0]  # "LABEL; most weight (pooling): w, w, w"
    assert shown.split(";")[0] == label and set(shown.split(": ")[1].split(", ")) <= {"the", "plot", "was", "dull"}


def test_resume_of_a_complete_run_with_a_damaged_checkpoint_changes_nothing(tmp_path):
    """A damaged file in the last checkpoint (optimizer.pt cut short, rng_state.pth garbage): `--resume` is one line
    naming it, before anything is written; the complete run stays byte-identical."""
    import hashlib

    out = tmp_path / "run"
    args = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "48", "--max-eval-examples", "8",
            "--epochs", "1", *TINY, "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0
    last = sorted((out / "checkpoints").glob("checkpoint-*"))[-1]

    def snapshot():
        return {
            str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()
        }

    for name, damage in (("optimizer.pt", lambda b: b[: len(b) // 2]), ("rng_state.pth", lambda b: b"garbage")):
        path = last / name
        intact = path.read_bytes()
        path.write_bytes(damage(intact))
        before = snapshot()
        with pytest.raises(SystemExit) as refused:
            main([*args, "--resume"])
        message = str(refused.value.code)
        assert f"{name}: damaged" in message and "nothing was changed" in message and "\n" not in message, message
        assert snapshot() == before
        path.write_bytes(intact)


def assert_each_damage_is_refused(base: list[str], start: Path, damages: dict, tmp_path: Path) -> None:
    """For each (message, damage): a copy of `start` (its checkpoints left out) so damaged, given to `--init-from`,
    is refused in one line saying the message, before the output folder exists."""
    import shutil

    for i, (says, damage) in enumerate(damages.items()):
        folder = tmp_path / f"damaged{i}"
        shutil.copytree(start, folder, ignore=shutil.ignore_patterns("checkpoints"))
        damage(folder)
        out = tmp_path / f"out{i}"
        with pytest.raises(SystemExit) as refused:
            main([*base, "--init-from", str(folder), "--output-dir", str(out)])
        message = str(refused.value.code)
        assert says in message and "\n" not in message, message
        assert not out.exists()


def test_a_damaged_init_from_folder_is_refused_before_the_run_folder_exists(tmp_path):
    """--init-from a folder with its weights cut short, a config.json that is not JSON, no weights, or tensors of
    other sizes than its config.json: one line naming the file, and no output folder (they were tracebacks, mostly
    after the run folder had been started)."""

    good = tmp_path / "good"
    base = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "32", "--max-eval-examples", "8",
            "--epochs", "1", "--max-length", "64"]  # fmt: skip
    assert main([*base, *TINY, "--output-dir", str(good)]) == 0

    def truncate(folder):
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:2000])

    def resize(folder):
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 64, "num_attention_heads": 4}))

    damages = {
        "model.safetensors: damaged": truncate,
        "config.json: damaged, not valid JSON": lambda f: (f / "config.json").write_text("{"),
        "no model.safetensors (the weights are missing)": lambda f: (f / "model.safetensors").unlink(),
        "has shape (32,), its config.json gives (64,)": resize,
        # transformers' own message was five lines about sentencepiece
        "holds no tokenizer (no tokenizer.json or tokenizer_config.json)": lambda f: [
            (f / name).unlink() for name in ("tokenizer.json", "tokenizer_config.json")
        ],
    }
    assert_each_damage_is_refused(base, good, damages, tmp_path)
    # the folder above a model (a user's `--init-from pretrained`); the output folder's parents made to open it go too
    out = tmp_path / "runs" / "new" / "out"
    with pytest.raises(SystemExit) as refused:
        main([*base, "--init-from", str(tmp_path), "--output-dir", str(out)])
    assert str(refused.value.code).endswith(f"--init-from {tmp_path}: no config.json (not a saved fastformer model)")
    assert not (tmp_path / "runs").exists()


def test_a_sharded_bf16_init_from_folder_starts_a_float32_run_and_its_damage_is_refused(tmp_path):
    """A folder saved as bf16 shards (as the shipped student is) starts a run whose weights are float32 (transformers'
    default would load, and train, them in bf16); a shard missing or cut short, an index that is not JSON, or a
    shard's tensor of another shape than config.json's: one line naming the file, no output folder."""
    import shutil

    from transformers import AutoModel

    base = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "32", "--max-eval-examples", "8",
            "--epochs", "1", "--max-length", "64", "--no-progress"]  # fmt: skip
    assert main([*base, *TINY, "--output-dir", str(tmp_path / "good")]) == 0
    sharded = tmp_path / "sharded"
    model = AutoModel.from_pretrained(tmp_path / "good").to(torch.bfloat16)
    model.save_pretrained(sharded, max_shard_size="20KB")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tmp_path / "good" / name, sharded / name)
    shards = sorted(sharded.glob("model-*.safetensors"))
    assert len(shards) >= 2 and not (sharded / "model.safetensors").exists()
    assert main([*base, "--init-from", str(sharded), "--output-dir", str(tmp_path / "tuned")]) == 0
    assert AutoModel.from_pretrained(tmp_path / "tuned").dtype == torch.float32

    def resize(folder):
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 64, "num_attention_heads": 4}))

    last = shards[-1].name
    damages = {
        f"{last}: missing (named by model.safetensors.index.json)": lambda f: (f / last).unlink(),
        f"{last}: damaged": lambda f: (f / last).write_bytes((f / last).read_bytes()[:100]),
        "model.safetensors.index.json: damaged, not valid JSON": lambda f: (
            f / "model.safetensors.index.json"
        ).write_text("{"),
        ".safetensors: word_embeddings.weight has shape (": resize,  # in whichever shard holds it
    }
    assert_each_damage_is_refused(base, sharded, damages, tmp_path)


def test_init_from_takes_the_folders_fine_tuning_settings_where_no_flag_or_config_sets_them(tmp_path, capsys):
    """A folder's fine_tuning.json (what convert-bert, distill and the shipped student write) sets the learning rate,
    warm-up, batch size and bf16 of a run that starts from it, said in one line; a flag or --config given wins, a
    setting the task has not is left out; a damaged file, an unknown setting or a wrong type is one line naming the
    file, before the output folder exists."""
    base = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "32", "--max-eval-examples", "8",
            "--epochs", "1", "--max-length", "64", "--no-progress"]  # fmt: skip
    start = tmp_path / "start"
    assert main([*base, *TINY, "--output-dir", str(start)]) == 0
    recipe = {"learning_rate": 3e-4, "warmup": 0.2, "batch_size": 8, "bf16": True, "_measured": "why, for a reader"}
    (start / "fine_tuning.json").write_text(json.dumps(recipe))
    capsys.readouterr()
    assert main([*base, "--init-from", str(start), "--output-dir", str(tmp_path / "a")]) == 0
    taken = json.loads((tmp_path / "a" / "run_config.json").read_text())
    assert (taken["learning_rate"], taken["warmup"], taken["batch_size"], taken["bf16"]) == (3e-4, 0.2, 8, True)
    said = capsys.readouterr().err
    assert "its fine-tuning settings: --learning-rate 0.0003 --warmup 0.2 --batch-size 8 --bf16" in said
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"warmup": 0.0}))
    args = [*base, "--init-from", str(start), "--learning-rate", "1e-4", "--config", str(config)]
    assert main([*args, "--output-dir", str(tmp_path / "b")]) == 0
    taken = json.loads((tmp_path / "b" / "run_config.json").read_text())
    assert (taken["learning_rate"], taken["warmup"], taken["batch_size"]) == (1e-4, 0.0, 8)  # flag, config, folder
    # distillation and continued pretraining start from a folder without fine-tuning it: its recipe is not theirs
    from fastformer.cli import train
    from fastformer.cli.settings import resolve_settings

    for task, extra in (("distill", ["--teacher", str(start)]), ("lm", [])):
        name, namespace = train.parse_arguments([task, "--train", str(SST / "sst_train.txt"), "--init-from", str(start),
                                                 *extra])  # fmt: skip
        cfg = resolve_settings(train.TASKS[name].config_class, namespace, None)
        assert cfg.learning_rate != 3e-4 and cfg.batch_size != 8, task

    damages = {
        "fine_tuning.json: not valid JSON": "{",
        "fine_tuning.json: 'max_length' is not a fine-tuning setting": json.dumps({"max_length": 64}),
        "fine_tuning.json: batch_size: '8' must be of type int": json.dumps({"batch_size": "8"}),
        "fine_tuning.json: bf16: 1 must be of type bool": json.dumps({"bf16": 1}),
    }
    for i, (says, text) in enumerate(damages.items()):
        (start / "fine_tuning.json").write_text(text)
        out = tmp_path / f"refused{i}"
        with pytest.raises(SystemExit) as refused:
            main([*base, "--init-from", str(start), "--output-dir", str(out)])
        assert says in str(refused.value.code) and "\n" not in str(refused.value.code), refused.value.code
        assert not out.exists()


def test_init_from_speaks_in_the_commands_own_line_not_the_librarys_report(tmp_path):
    """`--init-from` as a user runs it (the console script): one line of what was copied and what is new, no
    transformers load report ("MISSING ... newly initialized", read as an error) and no "Loading weights" bars."""
    start = tmp_path / "start"
    base = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "32", "--max-eval-examples", "8",
            "--epochs", "1", "--max-length", "64", "--no-progress"]  # fmt: skip
    assert main([*base, *TINY, "--output-dir", str(start)]) == 0
    done = fastformer(
        *base, "--binary-threshold", "3", "--init-from", str(start), "--output-dir", str(tmp_path / "run")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"--init-from {start}: " in done.stderr and "new: classifier" in done.stderr
    assert "LOAD REPORT" not in done.stderr and "Loading weights" not in done.stderr and "MISSING" not in done.stderr


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_the_run_resumes(tmp_path):
    """Ctrl-C (SIGINT) during training: exit 130, one line saying how to continue, no traceback, the folder not
    locked: `--resume` finishes the run."""
    import signal
    import time

    out = tmp_path / "run"
    args = [*RESUME_ARGS, "--max-train-examples", "64", "--max-eval-examples", "16"]  # (the later flags win)
    exe = str(Path(sys.executable).parent / "fastformer")
    # SIGINT as a terminal delivers it: a test run started in the background (`cmd &` in a script) hands its children
    # SIGINT ignored, and Python then keeps it ignored (the run finished, exit 0, in a clean-clone CI run so started)
    process = subprocess.Popen(
        [exe, *args, "--output-dir", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 300
    while not list((out / "checkpoints").glob("checkpoint-*/trainer_state.json")):
        assert process.poll() is None and time.time() < deadline, "the run ended before it could be interrupted"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == (
        "fastformer train: interrupted (the same command with --resume continues from its last checkpoint)"
    )
    assert "Traceback" not in stderr
    assert fastformer(*args, "--output-dir", str(out), "--resume").returncode == 0
    assert (out / "run_complete.json").is_file()
