"""The distilled student shipped in the repository (pretrained/fastformer-minilm-l6-distilled/): all-MiniLM-L6-v2
converted into a Fastformer with local mixing and distilled from it, stored as bfloat16 shards. It is whole and within
the size limit, carries its teacher's licence, loads with the Auto classes (float32 when asked, bf16 by transformers'
default), still embeds sentences as its teacher does, and fine-tunes from the command line in float32 weights."""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModel, AutoTokenizer

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.cli.main import main
from fastformer.engine.state_loss import mean_pool
from tests.helpers import sst5_sentences, teacher_zip
from tests.tasks.test_pretraining import classify, reviews_csv  # noqa: F401  (the fixture: 100 real reviews)

STUDENT = Path(__file__).resolve().parents[2] / "pretrained" / "fastformer-minilm-l6-distilled"


def mean_pooled(model, batch) -> torch.Tensor:
    """The sentence embedding all-MiniLM-L6-v2 is used for: the mean of the last hidden states over real tokens."""
    with torch.no_grad():
        return mean_pool(model(**batch).last_hidden_state, batch["attention_mask"].bool())


def test_the_folder_is_whole_small_and_licensed():
    names = {p.name for p in STUDENT.iterdir()}
    assert {"config.json", "model.safetensors.index.json", "tokenizer.json", "README.md", "LICENSE", "NOTICE"} <= names
    assert "fine_tuning.json" in names  # the recipe --init-from takes
    assert all(p.stat().st_size <= 48_000_000 for p in STUDENT.iterdir())  # the repository's limit a file
    shards = set(json.loads((STUDENT / "model.safetensors.index.json").read_text())["weight_map"].values())
    assert len(shards) >= 2 and shards <= names
    for shard in shards:  # stored in bfloat16, every tensor
        with safe_open(str(STUDENT / shard), framework="pt") as f:
            assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
    config = json.loads((STUDENT / "config.json").read_text())
    form = (config["attention_type"], config["local_mixing"], config["max_position_embeddings"])
    assert form == ("fastformer", 3, 8192)
    assert AutoTokenizer.from_pretrained(STUDENT).model_max_length == 8192  # not the teacher's 256
    assert "Apache License" in (STUDENT / "LICENSE").read_text()
    assert "all-MiniLM-L6-v2" in (STUDENT / "NOTICE").read_text()


def test_it_loads_in_float32_or_bf16_with_the_same_outputs():
    tokenizer = AutoTokenizer.from_pretrained(STUDENT)
    batch = tokenizer(sst5_sentences(6), padding=True, return_tensors="pt")
    full = AutoModel.from_pretrained(STUDENT, dtype=torch.float32).eval()
    default = AutoModel.from_pretrained(STUDENT).eval()  # transformers' "auto": the stored bfloat16
    assert type(full).__name__ == "FastformerModel" and full.dtype == torch.float32
    assert default.dtype == torch.bfloat16
    cosine = torch.nn.functional.cosine_similarity(mean_pooled(full, batch), mean_pooled(default, batch))
    assert cosine.min() > 0.99


def test_it_embeds_sentences_as_its_teacher_does():
    """The distillation's point: the mean-pooled embedding of real sentences (SST-5 dev, padded) points where the
    teacher's does (cosine 0.87 on the distillation's held-out texts; a converted student before distillation: 0.13),
    and the student ranks pairs of sentences by similarity as the teacher does."""
    import tempfile

    from fastformer.convert_bert import convert_bert, read_bert

    sentences = sst5_sentences(16)
    tokenizer = AutoTokenizer.from_pretrained(STUDENT)
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with tempfile.TemporaryDirectory() as scratch:
        teacher = convert_bert(read_bert(teacher_zip(), Path(scratch)), "softmax")
    student = AutoModel.from_pretrained(STUDENT, dtype=torch.float32).eval()
    ours, theirs = mean_pooled(student, batch), mean_pooled(teacher, batch)
    assert torch.nn.functional.cosine_similarity(ours, theirs).mean() > 0.8

    def similarities(x):
        x = torch.nn.functional.normalize(x, dim=-1)
        pairs = torch.triu_indices(len(sentences), len(sentences), 1)
        return (x @ x.T)[pairs[0], pairs[1]]

    a, b = similarities(ours), similarities(theirs)
    ranks = [v.argsort().argsort().float() for v in (a, b)]
    assert torch.corrcoef(torch.stack(ranks))[0, 1] > 0.7  # Spearman's rho over the 120 pairs


@pytest.mark.slow
def test_it_fine_tunes_from_the_command_line_in_float32(reviews_csv, tmp_path):  # noqa: F811
    """`--init-from` the shipped bf16 folder on a user's CSV (100 real reviews), no recipe given: the folder's
    (fine_tuning.json: its learning rate, warm-up and bf16; the batch size given wins); a classifier with float32
    weights, the encoder moved by training, its local mixing kept."""
    out = tmp_path / "ft"
    args = [*classify(reviews_csv), "--init-from", str(STUDENT), "--batch-size", "16"]
    assert main([*args, "--output-dir", str(out)]) == 0
    recipe = json.loads((STUDENT / "fine_tuning.json").read_text())
    settings = json.loads((out / "run_config.json").read_text())
    assert (settings["learning_rate"], settings["warmup"], settings["bf16"], settings["batch_size"]) == (
        recipe["learning_rate"],
        recipe["warmup"],
        True,
        16,
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["init_from"]["architectures"] == ["FastformerModel"]
    assert 0 <= metrics["validation"]["accuracy"] <= 1
    tuned = AutoModel.from_pretrained(out)
    assert tuned.dtype == torch.float32 and tuned.config.local_mixing == 3
    shipped = AutoModel.from_pretrained(STUDENT, dtype=torch.float32)
    name = "encoder.layers.5.attention.value_conv.weight"
    assert not torch.equal(tuned.state_dict()[name], shipped.state_dict()[name])
