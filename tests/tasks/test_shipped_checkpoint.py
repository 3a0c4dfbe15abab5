"""The pretrained Fastformer shipped in the repository (pretrained/fastformer-imdb-clm/): it is there, within the
size limit, loads with the Auto classes, is a language model of reviews (held-out perplexity far below an untrained
model's), and fine-tunes from the command line with --init-from on a user's CSV."""

import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.cli.main import main
from tests.tasks.test_pretraining import classify, reviews_csv  # noqa: F401  (the fixture: 100 real reviews)

SHIPPED = Path(__file__).resolve().parents[2] / "pretrained" / "fastformer-imdb-clm"


def test_the_shipped_folder_is_complete_and_small():
    names = {p.name for p in SHIPPED.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} <= names
    assert all(p.stat().st_size <= 15 * 2**20 for p in SHIPPED.iterdir())


def test_it_loads_and_models_reviews():
    model = AutoModelForCausalLM.from_pretrained(SHIPPED).eval()
    tokenizer = AutoTokenizer.from_pretrained(SHIPPED)
    assert type(model).__name__ == "FastformerForCausalLM" and model.config.causal
    text = "this movie was one of the worst films i have ever seen . the acting was terrible and the plot made no sense"
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        trained = model(ids, labels=ids).loss.exp().item()
        untrained = AutoModelForCausalLM.from_config(model.config)(ids, labels=ids).loss.exp().item()
    assert trained < 0.2 * untrained  # an untrained model is near the vocabulary size (8,000)


def test_it_fine_tunes_from_the_command_line(reviews_csv, tmp_path):  # noqa: F811
    out = tmp_path / "ft"
    assert main([*classify(reviews_csv), "--init-from", str(SHIPPED), "--output-dir", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["init_from"]["architectures"] == ["FastformerForCausalLM"]
    assert metrics["validation"]["examples"] > 0 and 0 <= metrics["validation"]["accuracy"] <= 1
    assert json.loads((out / "config.json").read_text())["causal"]  # the classifier keeps the pretrained attention
