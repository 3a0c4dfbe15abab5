"""The pretrained models shipped in the repository: the Fastformer (pretrained/fastformer-imdb-clm/) and its control,
the softmax Transformer pretrained the same way (pretrained/softmax-imdb-clm-control/). Each is there, within the
size limit, loads with the Auto classes, is a language model of reviews (perplexity far below an untrained model's),
and fine-tunes from the command line with --init-from on a user's CSV; the control differs from the Fastformer in its
attention and nothing else."""

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.cli.main import main
from tests.tasks.test_pretraining import classify, reviews_csv  # noqa: F401  (the fixture: 100 real reviews)

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
SHIPPED = PRETRAINED / "fastformer-imdb-clm"
CONTROL = PRETRAINED / "softmax-imdb-clm-control"
BOTH = pytest.mark.parametrize(("folder", "attention"), [(SHIPPED, "fastformer"), (CONTROL, "softmax")], ids=str)


@BOTH
def test_the_shipped_folder_is_complete_and_small(folder, attention):
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} <= names
    assert json.loads((folder / "fine_tuning.json").read_text())["learning_rate"] == 5e-4  # the card's recipe
    assert all(p.stat().st_size <= 15 * 2**20 for p in folder.iterdir())
    assert json.loads((folder / "config.json").read_text())["attention_type"] == attention


def test_the_control_differs_from_the_fastformer_in_its_attention_alone():
    """Same tokenizer (the same vocabulary, token for token), same encoder fields but the attention type, same
    pretraining settings but --architecture."""
    from fastformer.engine.init_from import ENCODER_FIELDS

    assert (CONTROL / "tokenizer.json").read_bytes() == (SHIPPED / "tokenizer.json").read_bytes()
    ours, control = (json.loads((f / "config.json").read_text()) for f in (SHIPPED, CONTROL))
    assert {k for k in ENCODER_FIELDS if ours.get(k) != control.get(k)} == {"attention_type"}
    ours, control = (json.loads((f / "run_config.json").read_text()) for f in (SHIPPED, CONTROL))
    differ = {k for k in ours.keys() | control.keys() if ours.get(k) != control.get(k)}
    # (logging_steps: how often the training loss was logged, 50 and 20; it does not shape the weights)
    assert differ <= {"architecture", "tokenizer", "output_dir", "logging_steps"} and "architecture" in differ


@BOTH
def test_it_loads_and_models_reviews(folder, attention):
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == "FastformerForCausalLM" and model.config.causal
    assert model.config.attention_type == attention
    text = "this movie was one of the worst films i have ever seen . the acting was terrible and the plot made no sense"
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        trained = model(ids, labels=ids).loss.exp().item()
        untrained = AutoModelForCausalLM.from_config(model.config)(ids, labels=ids).loss.exp().item()
    assert trained < 0.2 * untrained  # an untrained model is near the vocabulary size (8,000)


@BOTH
def test_it_fine_tunes_from_the_command_line(reviews_csv, tmp_path, folder, attention):  # noqa: F811
    out = tmp_path / "ft"
    args = [*classify(reviews_csv), "--init-from", str(folder), "--architecture", attention]
    assert main([*args, "--output-dir", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["init_from"]["architectures"] == ["FastformerForCausalLM"]
    assert metrics["validation"]["examples"] > 0 and 0 <= metrics["validation"]["accuracy"] <= 1
    assert json.loads((out / "config.json").read_text())["causal"]  # the classifier keeps the pretrained attention


def test_it_fine_tunes_with_a_rate_per_layer(reviews_csv, tmp_path):  # noqa: F811
    """--layer-lr-decay 0.5 on the shipped 2-layer model: the optimizer the run saved holds the head at the full rate,
    the top layer at half, the bottom at a quarter and the embeddings at an eighth; biases and norms without decay."""
    out = tmp_path / "ft"
    args = [*classify(reviews_csv), "--init-from", str(SHIPPED), "--layer-lr-decay", "0.5", "--weight-decay", "0.01"]
    assert main([*args, "--learning-rate", "1e-3", "--output-dir", str(out)]) == 0
    assert json.loads((out / "run_config.json").read_text())["layer_lr_decay"] == 0.5
    checkpoint = next((out / "checkpoints").glob("checkpoint-*"))
    groups = torch.load(checkpoint / "optimizer.pt", weights_only=True)["param_groups"]
    rates = {(round(g["initial_lr"], 9), g["weight_decay"]) for g in groups}
    assert rates == {(r, wd) for r in (1e-3, 5e-4, 2.5e-4, 1.25e-4) for wd in (0.0, 0.01)}
    assert all(g["lr"] / g["initial_lr"] == groups[0]["lr"] / groups[0]["initial_lr"] for g in groups)  # one schedule


@BOTH
def test_it_continues_pretraining_on_a_users_text(reviews_csv, tmp_path, folder, attention):  # noqa: F811
    """`train lm --init-from` on a user's CSV column (domain-adaptive pretraining): the run starts from the shipped
    language model, so after two small steps its held-out perplexity is that of a model of reviews, far below an
    untrained one's (~the 8,000-token vocabulary)."""
    out = tmp_path / "continued"
    args = ["train", "lm", "--train", str(reviews_csv), "--text-field", "review", "--max-eval-texts", "5"]
    args += ["--max-steps", "2", "--evaluations", "1", "--block-size", "64", "--batch-size", "4", "--no-progress"]
    args += ["--learning-rate", "1e-4", "--architecture", attention, "--init-from", str(folder)]
    assert main([*args, "--output-dir", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["init_from"]["architectures"] == ["FastformerForCausalLM"]
    assert metrics["validation"]["perplexity"] < 800
    assert AutoModelForCausalLM.from_pretrained(out).config.max_position_embeddings == 1024  # the folder's own
