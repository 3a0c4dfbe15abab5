"""Hugging Face models: shapes, losses, save/load, Auto classes, init, padding defaults."""

import json

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer import FastformerConfig, FastformerForSequenceClassification, FastformerModel
from fastformer.models.fastformer import FastformerCache, FastformerForCausalLM

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


def tiny_config(preset="paper", **overrides):
    return FastformerConfig.from_preset(preset, **{**TINY, **overrides})


def batch(B=3, N=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 99, (B, N), generator=g)
    lengths = torch.tensor([N, N // 2, 1])[:B]
    mask = torch.arange(N)[None] < lengths[:, None]
    return ids.masked_fill(~mask, 0), mask.long()


@pytest.mark.parametrize("preset", ["paper", "official"])
def test_base_model_shapes(preset):
    model = FastformerModel(tiny_config(preset)).eval()
    ids, mask = batch()
    out = model(ids, attention_mask=mask, output_hidden_states=True)
    assert out.last_hidden_state.shape == (3, 20, 32)
    assert out.pooler_output.shape == (3, 32)
    assert len(out.hidden_states) == 3
    assert torch.equal(model(ids).pooler_output, out.pooler_output)  # mask inferred from pad_token_id 0
    tuple_out = model(ids, attention_mask=mask, return_dict=False)
    assert torch.equal(tuple_out[0], out.last_hidden_state)


def test_inputs_embeds_and_argument_errors():
    model = FastformerModel(tiny_config()).eval()
    ids, mask = batch()
    embeds = model.get_input_embeddings()(ids)
    torch.testing.assert_close(
        model(inputs_embeds=embeds, attention_mask=mask).pooler_output, model(ids, attention_mask=mask).pooler_output
    )
    with pytest.raises(ValueError, match="exactly one"):
        model()


def test_an_encoder_ignores_use_cache_and_refuses_a_cache():
    """As BertModel: generic callers pass use_cache to every model; an encoder has no state to return, so it gives
    the same outputs and no cache. A cache object, which says the caller means to continue, is refused."""
    model = FastformerModel(tiny_config()).eval()
    ids, mask = batch()
    out = model(ids, attention_mask=mask, use_cache=True)
    assert out.cache is None
    torch.testing.assert_close(out.last_hidden_state, model(ids, attention_mask=mask).last_hidden_state)
    with pytest.raises(ValueError, match="a cache needs a causal model") as refused:
        model(ids, attention_mask=mask, cache=FastformerCache(2))
    assert "\n" not in str(refused.value)


def test_transformers_4_name_of_the_cache_is_taken_with_a_warning():
    """past_key_values (transformers 4's name) is read as `cache`, with transformers' deprecation warning."""
    model = FastformerForCausalLM(tiny_config(causal=True, pad_token_id=0)).eval()
    ids, mask = batch()
    with torch.no_grad():
        states = [model(ids[:, :5], attention_mask=mask[:, :5], use_cache=True).cache for _ in range(2)]
        with pytest.warns(FutureWarning, match="past_key_values"):
            old = model(ids[:, 5:6], attention_mask=mask[:, :6], past_key_values=states[0])
        new = model(ids[:, 5:6], attention_mask=mask[:, :6], cache=states[1])
    torch.testing.assert_close(old.logits, new.logits)


@pytest.mark.parametrize(
    "num_labels,labels,problem",
    [
        (4, torch.tensor([0, 3, 1]), "single_label_classification"),
        (1, torch.tensor([0.5, -1.0, 2.0]), "regression"),
        (3, torch.tensor([[1.0, 0, 1], [0, 0, 0], [0, 1, 0]]), "multi_label_classification"),
    ],
)
def test_sequence_classification_loss(num_labels, labels, problem):
    model = FastformerForSequenceClassification(tiny_config(num_labels=num_labels))
    ids, mask = batch()
    out = model(ids, attention_mask=mask, labels=labels)
    assert out.logits.shape == (3, num_labels)
    assert model.config.problem_type == problem
    assert out.loss.ndim == 0 and torch.isfinite(out.loss)
    out.loss.backward()
    assert model(ids, attention_mask=mask).loss is None


@pytest.mark.parametrize("preset", ["paper", "official"])
def test_save_pretrained_round_trip_is_bit_identical(preset, tmp_path):
    torch.manual_seed(0)
    model = FastformerForSequenceClassification(tiny_config(preset, num_labels=5)).eval()
    model.save_pretrained(tmp_path)
    assert (tmp_path / "config.json").is_file() and (tmp_path / "model.safetensors").is_file()
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "fastformer" and config["scoring"] == PRESET_SCORING[preset]
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert type(loaded) is FastformerForSequenceClassification
    original, reloaded = model.state_dict(), loaded.state_dict()
    assert original.keys() == reloaded.keys()
    for name in original:
        assert torch.equal(original[name], reloaded[name]), name
    ids, mask = batch()
    assert torch.equal(model(ids, attention_mask=mask).logits, loaded(ids, attention_mask=mask).logits)


PRESET_SCORING = {"paper": "per_head", "official": "full"}


def test_auto_classes_resolve():
    config = AutoConfig.for_model("fastformer", **TINY)
    assert isinstance(config, FastformerConfig)
    assert type(AutoModel.from_config(config)) is FastformerModel
    assert type(AutoModelForSequenceClassification.from_config(config)) is FastformerForSequenceClassification


def test_initialisation_follows_the_notebook():
    model = FastformerForSequenceClassification(tiny_config("paper", hidden_size=256, num_attention_heads=8))
    attn = model.fastformer.encoder.layers[0].attention
    for weight in (attn.query.weight, attn.transform.weight, attn.query_att, model.classifier.weight):
        assert abs(weight.std().item() - 0.02) < 0.004
    assert torch.equal(attn.query.bias, torch.zeros_like(attn.query.bias))
    assert torch.equal(model.fastformer.word_embeddings.weight[0], torch.zeros(256))  # padding row
    norm = model.fastformer.encoder.layers[0].attention_norm
    assert torch.equal(norm.weight, torch.ones(256)) and torch.equal(norm.bias, torch.zeros(256))


def test_from_preset_rejects_unknown_names():
    with pytest.raises(ValueError, match="preset"):
        FastformerConfig.from_preset("bert")


def test_factorised_embedding_saves_reloads_and_takes_inputs_embeds_in_its_width(tmp_path):
    """embedding_size < hidden_size: (vocab, E) word vectors and a Linear(E, hidden), as ALBERT."""
    model = FastformerForSequenceClassification(tiny_config(embedding_size=8, num_labels=3)).eval()
    assert model.fastformer.word_embeddings.weight.shape == (99, 8)
    assert model.fastformer.embedding_projection.weight.shape == (32, 8)
    ids, mask = batch()
    logits = model(input_ids=ids, attention_mask=mask).logits
    embeds = model.fastformer.word_embeddings(ids)  # (B, N, 8): inputs_embeds are given in the embedding width
    torch.testing.assert_close(model(inputs_embeds=embeds, attention_mask=mask).logits, logits)
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert reloaded.config.embedding_size == 8
    torch.testing.assert_close(reloaded(input_ids=ids, attention_mask=mask).logits, logits, rtol=0, atol=0)
    same = FastformerModel(tiny_config(embedding_size=32))
    assert same.embedding_projection is None  # equal to hidden_size: no projection


def test_tied_heads_refuse_a_factorised_embedding():
    from fastformer import FastformerForCausalLM, FastformerForConditionalGeneration

    with pytest.raises(ValueError, match="embedding_size must equal hidden_size"):
        FastformerForCausalLM(tiny_config(embedding_size=8))
    with pytest.raises(ValueError, match="embedding_size must equal hidden_size"):
        FastformerForConditionalGeneration(tiny_config(embedding_size=8))
    with pytest.raises(ValueError, match="embedding_size must be >= 1"):
        FastformerModel(tiny_config(embedding_size=0))
