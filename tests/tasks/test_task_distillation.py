"""`fastformer train classification --teacher DIR` (task distillation, TinyBERT's second stage) on real SST-5: the
loss equals a row-by-row reference (unlabelled rows, a batch of them alone), a student learns from a teacher and
unlabelled texts with the evaluation texts among them dropped, a teacher with fewer positions than the student reads
each row as the run's truncation makes it at the teacher's length, and a teacher that does not fit is refused in one
line before anything is written."""

from __future__ import annotations

import gzip
import json
from itertools import islice

import pytest
import torch

from fastformer.cli.main import main
from fastformer.data.tokenizer import encode_texts, kept_head
from fastformer.engine.state_loss import hidden_state_loss, reference_state_loss, teacher_depths, teacher_scales
from fastformer.engine.teacher import distillation_loss, reference_distillation_loss
from fastformer.tasks.classification.classifier import shorten_rows
from tests.helpers import ROOT, SHARED, sst5_sentences

SST = SHARED / "data" / "sst5"
TINY = ["--model", "hidden_size=16", "--model", "num_attention_heads=2", "--model", "intermediate_size=16",
        "--vocab-size", "400", "--max-length", "48", "--epochs", "1", "--batch-size", "16",
        "--no-progress"]  # fmt: skip
SPLITS = ["--train", str(SST / "sst_train.txt"), "--test", str(SST / "sst_test.txt"), "--max-train-examples", "64",
          "--max-eval-examples", "16", "--subset", "first"]  # fmt: skip


@pytest.mark.parametrize("weight, temperature", [(0.5, 2.0), (1.0, 1.0), (0.0, 3.0)])
def test_loss_equals_the_row_by_row_reference(weight, temperature):
    torch.manual_seed(0)
    student, teacher = torch.randn(6, 5), torch.randn(6, 5)
    labels = torch.tensor([0, 3, -100, 4, -100, 1])
    torch.testing.assert_close(
        distillation_loss(student, teacher, labels, weight, temperature).double(),
        reference_distillation_loss(student, teacher, labels, weight, temperature),
    )
    unlabelled = torch.full((6,), -100)
    loss = distillation_loss(student, teacher, unlabelled, weight, temperature)
    assert torch.isfinite(loss)  # a batch of unlabelled texts alone: the teacher's term only, no NaN
    torch.testing.assert_close(
        loss.double(), reference_distillation_loss(student, teacher, unlabelled, weight, temperature)
    )


def test_hidden_states_are_compared_depth_by_depth_as_the_loop_reference_and_teach_the_student_alone():
    """--distill-hidden's term: a 3-layer student against a 6-layer teacher compares depths 0-3 with the teacher's
    0, 2, 4 and 6 (TinyBERT's uniform mapping; the embeddings' output first), each in units of the teacher's scales
    on the batch, over real tokens only; the gradient reaches the student's states, never the teacher's."""
    assert teacher_depths(4, 7) == [0, 2, 4, 6] and teacher_depths(7, 7) == list(range(7))
    assert teacher_depths(3, 13) == [0, 6, 12]
    generator = torch.Generator().manual_seed(0)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    students = tuple(
        torch.randn(2, 5, 4, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(4)
    )
    teachers = tuple(torch.randn(2, 5, 4, generator=generator, dtype=torch.float64) * (1 + d) for d in range(7))
    teachers = tuple(t.requires_grad_() for t in teachers)
    loss = hidden_state_loss(students, teachers, mask)
    expected = (
        sum(
            reference_state_loss(
                s.detach(), teachers[d].detach(), teacher_scales((teachers[d].detach(),), mask)[0], mask
            )
            for s, d in zip(students, [0, 2, 4, 6], strict=True)
        )
        / 4
    )
    torch.testing.assert_close(loss.double(), expected, rtol=1e-5, atol=1e-7)
    loss.backward()
    assert all(s.grad is not None and s.grad.abs().sum() > 0 for s in students)
    assert all(t.grad is None for t in teachers)
    padded = students[0].detach().clone()
    padded[1, 3:] += 100.0  # padding positions: no part of the loss
    moved = hidden_state_loss((padded, *students[1:]), teachers, mask)
    torch.testing.assert_close(moved, loss.detach())


@pytest.mark.parametrize("truncation", ["head", "head+tail"])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_a_longer_row_shortened_is_the_row_encoded_at_the_teachers_length(truncation, padding_side):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(ROOT / "pretrained" / "fastformer-minilm-l6-distilled"))
    tokenizer.padding_side = padding_side
    with gzip.open(SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz", "rt") as lines:
        texts = [json.loads(line)["text"] for line in islice(lines, 12)]
    texts += ["Not good.", "A" + " very" * 140 + " fine film."]  # shorter than both lengths; between them
    student = tokenizer.pad({"input_ids": encode_texts(tokenizer, texts, 320, truncation)}, return_tensors="pt")
    assert student["input_ids"].shape[1] == 320  # (some reviews are longer than the student reads)
    ids, mask = shorten_rows(
        student["input_ids"], student["attention_mask"], 160, kept_head(tokenizer, 160, truncation)
    )
    for row, expected in enumerate(encode_texts(tokenizer, texts, 160, truncation)):
        assert ids[row, : len(expected)].tolist() == expected and mask[row].sum() == len(expected)
        assert not mask[row, len(expected) :].any() and not ids[row, len(expected) :].any()
    assert ids.shape == (len(texts), 160)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    folder = tmp_path_factory.mktemp("teacher") / "run"
    assert main(["train", *SPLITS, *TINY, "--output-dir", str(folder)]) == 0
    return folder


def test_a_student_learns_from_the_teacher_and_unlabelled_texts(teacher, tmp_path):
    test_texts = sst5_sentences(3, "test")  # in the run's test split: must be dropped
    others = [s for s in sst5_sentences(200, "train")[100:130]]
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text("".join(json.dumps({"text": t}) + "\n" for t in [*test_texts, *others]))
    out = tmp_path / "student"
    args = ["train", *SPLITS, *TINY, "--teacher", str(teacher), "--tokenizer", str(teacher / "tokenizer"),
            "--unlabelled", str(unlabelled), "--distill-weight", "0.7", "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"]["unlabelled"]["dropped_as_evaluation_texts"] == 3
    assert metrics["data"]["unlabelled"]["kept"] == 30
    assert metrics["train"]["examples"] == 64 + 30 and metrics["train"]["unlabelled"] == 30
    assert 0 <= metrics["test"]["accuracy"] <= 1 and "teacher" in json.loads((out / "run_config.json").read_text())


def test_a_student_taught_hidden_states_trains_and_its_loss_holds_the_term(teacher, tmp_path):
    """`--distill-hidden 1`: the run trains and saves; its first logged loss is above the logits-only run's, which
    starts from the same weights, batches and seed (the hidden-state term is > 0 for a student that is not its
    teacher)."""
    losses = {}
    for hidden in ("0", "1"):
        out = tmp_path / f"hidden{hidden}"
        args = ["train", *SPLITS, *TINY, "--teacher", str(teacher), "--tokenizer", str(teacher / "tokenizer"),
                "--distill-hidden", hidden, "--logging-steps", "1", "--output-dir", str(out)]  # fmt: skip
        assert main(args) == 0
        history = json.loads((out / "log_history.json").read_text())
        losses[hidden] = next(entry["loss"] for entry in history if "loss" in entry)
        assert json.loads((out / "run_config.json").read_text())["distill_hidden"] == float(hidden)
    assert losses["1"] > losses["0"] > 0


def test_a_teacher_that_does_not_fit_is_refused_before_anything_is_written(teacher, tmp_path):
    binary = ["--binary-threshold", "3"]  # labels neg / pos: not the teacher's 1..5
    taught = ["--teacher", str(teacher), "--tokenizer", str(teacher / "tokenizer")]
    cases = [
        ([*SPLITS, *binary, *taught], "its labels"),
        ([*SPLITS, "--teacher", str(teacher)], "needs --init-from or --tokenizer"),
        ([*SPLITS, "--unlabelled", str(SST / "sst_dev.txt")], "texts with no label need a --teacher"),
        ([*SPLITS, "--distill-hidden", "1"], "--distill-hidden: needs --teacher"),
        ([*SPLITS, *taught, "--distill-hidden", "1", "--model", "hidden_size=32"], "the teacher's hidden size is 16"),
        ([*SPLITS, *taught, "--distill-hidden", "1", "--max-length", "96"], "compared token by token"),
    ]
    for i, (args, says) in enumerate(cases):
        with pytest.raises(SystemExit) as refused:
            main(["train", *TINY, *args, "--output-dir", str(tmp_path / str(i))])  # (a case may override TINY)
        message = str(refused.value.code)
        assert says in message and "\n" not in message, message
        assert not (tmp_path / str(i)).exists()


def test_a_teacher_with_fewer_positions_reads_each_row_cut_to_them(teacher, tmp_path):
    config = json.loads((teacher / "config.json").read_text())
    out = tmp_path / "longer"
    longer = str(2 * config["max_position_embeddings"])  # the student reads twice what its teacher can
    args = ["train", *SPLITS, *TINY, "--max-length", longer, "--teacher", str(teacher), "--tokenizer",
            str(teacher / "tokenizer"), "--output-dir", str(out)]  # fmt: skip
    assert main(args) == 0  # (the teacher fed the student's rows whole would index past its positions)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"]["teacher"]["reads_tokens"] == config["max_position_embeddings"]
