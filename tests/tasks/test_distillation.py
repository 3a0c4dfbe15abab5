"""`fastformer train distill` on the real all-MiniLM-L6-v2 (converted both ways) and real reviews: the loss equals a
slow reference, a student that is its teacher has loss 0 in both stages, a killed run resumes to the same student,
mismatched folders are refused before anything is written."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from transformers import AutoModel

from fastformer.cli.main import main
from fastformer.engine.state_loss import reference_state_loss, state_loss, teacher_scales
from fastformer.tasks.distill.distillation import PaddingCollator, distillation_losses, total_loss
from tests.helpers import SHARED, teacher_zip

REVIEWS = SHARED / "data" / "amazon" / "amazon_review_full_condensed_test999.csv"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(teacher folder: the softmax form, student folder: the Fastformer form with 96 positions)."""
    root = tmp_path_factory.mktemp("converted")
    assert main(["convert-bert", str(teacher_zip()), str(root / "teacher"), "--attention", "softmax"]) == 0
    assert main(["convert-bert", str(teacher_zip()), str(root / "student"), "--max-positions", "96"]) == 0
    return root / "teacher", root / "student"


@pytest.fixture(scope="module")
def tiny_pair(converted, tmp_path_factory):
    """(teacher, student) of MiniLM's tokenizer and vocabulary but 2 layers of width 32 (random weights): the run's
    mechanics (resume, files) at a fraction of the real pair's cost; the real pair is tested above and below."""
    from fastformer.models.fastformer import FastformerConfig, FastformerModel

    root = tmp_path_factory.mktemp("tiny")
    teacher_folder, _ = converted
    models = {}
    for name, attention in (("teacher", "softmax"), ("student", "fastformer")):
        torch.manual_seed(0)
        config = FastformerConfig(
            vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=64, attention_type=attention, query_value_sharing=False, layer_sharing=False,
            query_residual=False,
        )  # fmt: skip
        models[name] = FastformerModel(config)
    # as convert-bert does: the student starts with the teacher's embeddings, norms and feed-forward layers
    shared = {k: v for k, v in models["teacher"].state_dict().items() if ".attention." not in k}
    models["student"].load_state_dict(shared, strict=False)
    for name, model in models.items():
        model.save_pretrained(root / name)
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(teacher_folder / file, root / name / file)
    return root / "teacher", root / "student"


def arguments(teacher, student, out, *extra):
    return [
        "train", "distill", "--teacher", str(teacher), "--init-from", str(student), "--train", str(REVIEWS),
        "--text-field", "input", "--max-train-texts", "24", "--max-eval-texts", "4", "--block-size", "32",
        "--batch-size", "4", "--max-steps", "4", "--evaluations", "2", "--no-progress", "--output-dir", str(out),
        *extra,
    ]  # fmt: skip


def test_state_loss_equals_the_slow_reference_and_scales_floor_at_the_median():
    torch.manual_seed(0)
    teacher = torch.randn(2, 5, 6) * torch.tensor([1.0, 1, 1, 1, 20, 1e-6])  # one huge and one dead dimension
    student = teacher + torch.randn(2, 5, 6)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    scales = teacher_scales((teacher,), mask)[0]
    rms = teacher[mask].pow(2).mean(0).sqrt()
    assert torch.allclose(scales, torch.maximum(rms, rms.median()))
    assert scales[5] == rms.median() and scales[4] == rms[4]  # the dead dimension is measured in median units
    assert torch.allclose(
        state_loss(student, teacher, scales, mask).double(), reference_state_loss(student, teacher, scales, mask)
    )


@pytest.mark.parametrize("stage", ["layerwise", "end-to-end"])
def test_a_student_that_is_its_teacher_has_loss_zero(converted, stage):
    teacher_folder, _ = converted
    teacher = AutoModel.from_pretrained(str(teacher_folder)).eval()
    student = AutoModel.from_pretrained(str(teacher_folder)).eval()
    collate = PaddingCollator(0)
    batch = collate([{"input_ids": [101, 2023, 2143, 2001, 2307, 102]}, {"input_ids": [101, 6659, 102]}])
    with torch.no_grad():
        states = teacher(**batch, output_hidden_states=True).hidden_states
    scales = teacher_scales(states, batch["attention_mask"].bool())
    losses = distillation_losses(student, teacher, batch, scales, stage)
    assert losses["layers"].shape == (6 if stage == "layerwise" else 7,)
    assert float(total_loss(losses, stage, 1.0).detach()) < 1e-10


def test_a_killed_distillation_resumes_to_the_same_student(tiny_pair, tmp_path):
    teacher, student = tiny_pair
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main(arguments(teacher, student, whole)) == 0
    metrics = json.loads((whole / "metrics.json").read_text())
    validation = metrics["validation"]
    assert len(validation["layerwise_loss_per_layer"]) == 2 and len(validation["end_to_end_loss_per_depth"]) == 3
    assert validation["end_to_end_loss_per_depth"][0] == 0  # the embeddings are the teacher's, untouched
    assert 0 < validation["pooled_cosine"] <= 1 and metrics["stage"] == "layerwise"
    assert json.loads((whole / "run_complete.json").read_text())["task"] == "distill"
    assert "fine_tuning.json" in json.loads((whole / "run_complete.json").read_text())["files"]  # the student's recipe
    shutil.copytree(whole / "tokenizer", cut / "tokenizer")
    shutil.copy(whole / ".fastformer-run", cut / ".fastformer-run")
    shutil.copytree(whole / "checkpoints" / "checkpoint-2", cut / "checkpoints" / "checkpoint-2")
    assert main([*arguments(teacher, student, cut), "--resume"]) == 0
    assert json.loads((cut / "metrics.json").read_text())["train"]["resumed_from"].endswith("checkpoint-2")
    resumed = AutoModel.from_pretrained(str(cut)).state_dict()
    for name, tensor in AutoModel.from_pretrained(str(whole)).state_dict().items():
        assert torch.equal(resumed[name], tensor), name
    started = AutoModel.from_pretrained(str(student)).state_dict()
    assert any(not torch.equal(started[name], tensor) for name, tensor in resumed.items())  # it did train


def test_mismatched_folders_are_refused_before_anything_is_written(converted, tmp_path):
    teacher, student = converted
    from fastformer.models.fastformer import FastformerConfig, FastformerModel

    small = tmp_path / "small"
    FastformerModel(FastformerConfig(vocab_size=30522, hidden_size=16, num_attention_heads=2)).save_pretrained(small)
    shutil.copy(student / "tokenizer.json", small)
    shutil.copy(student / "tokenizer_config.json", small)
    cases = [
        (arguments(teacher, small, tmp_path / "a"), "has num_hidden_layers=2, --teacher"),
        (arguments(teacher, student, tmp_path / "b", "--block-size", "128"), "--block-size 128: --init-from has 96"),
        (arguments(teacher, student, tmp_path / "c", "--model", "hidden_size=8"), "takes local_mixing=K alone"),
    ]
    for args, says in cases:
        with pytest.raises(SystemExit) as refused:
            main(args)
        assert says in str(refused.value.code) and "\n" not in str(refused.value.code), refused.value.code
    assert not any((tmp_path / name).exists() for name in "abc")


def test_local_mixing_switched_on_for_a_student_starts_from_its_outputs(tiny_pair, tmp_path):
    """`--model local_mixing=3` on a student folder without it: identity convolutions, so the distillation starts
    where the folder's student is; the saved student has them."""
    teacher, student = tiny_pair
    out = tmp_path / "mixed"
    assert main([*arguments(teacher, student, out, "--max-steps", "2", "--evaluations", "1"), "--model",
                 "local_mixing=3"]) == 0  # fmt: skip
    saved = AutoModel.from_pretrained(str(out))
    assert saved.config.local_mixing == 3 and saved.encoder.layers[0].attention.query_conv is not None
    from fastformer.tasks.distill.distillation import load_fastformer

    plain, mixed = load_fastformer("s", student).eval(), load_fastformer("s", student, local_mixing=3).eval()
    ids = torch.tensor([[101, 2023, 2143, 2001, 102, 0]])
    with torch.no_grad():
        torch.testing.assert_close(mixed(ids).last_hidden_state[:, :5], plain(ids).last_hidden_state[:, :5])
