"""The token mixers' one table: its names are the torch-free list the command line offers, every task's
--architecture offers each of them, and a mixer added to the table is a layer's attention with no other edit."""

import dataclasses

import pytest
import torch
from torch import nn

from fastformer import presets
from fastformer.layers.layer import FastformerLayer
from fastformer.layers.mixers import MIXERS, Mixer
from fastformer.tasks.registry import TASKS


def test_the_table_and_the_torch_free_names_agree():
    assert tuple(MIXERS) == presets.MIXERS
    assert presets.mixer_of("softmax") == "softmax" and presets.mixer_of("tfidf") is None


def test_every_encoder_task_offers_every_mixer():
    for name, entry in TASKS.items():
        field = {f.name: f for f in dataclasses.fields(entry.config_class)}["architecture"]
        assert set(MIXERS) <= set(field.metadata["choices"]), name


def test_a_new_mixer_is_one_line_in_the_table(monkeypatch):
    class MeanMixer(nn.Module):  # every token gets the mean of the sequence
        def __init__(self, hidden_size, num_heads, **kwargs):
            super().__init__()
            self.proj = nn.Linear(hidden_size, hidden_size)

        def forward(self, x, mask=None):
            return self.proj(x.mean(1, keepdim=True).expand_as(x))

    monkeypatch.setitem(MIXERS, "mean", Mixer(MeanMixer))  # declares nothing it cannot do
    layer = FastformerLayer(16, 2, 32, attention_type="mean")
    assert isinstance(layer.attention, MeanMixer) and not layer.carries_state
    assert layer(torch.randn(2, 5, 16)).shape == (2, 5, 16)
    # what it does not declare is refused in one line, by the layer, not by the mixer
    causal = FastformerLayer(16, 2, 32, attention_type="mean", causal=True)
    assert not causal.carries_state
    with pytest.raises(ValueError, match="a mean layer has no additive-attention weights"):
        causal.pooling_weights(torch.randn(1, 3, 16))
    with pytest.raises(ValueError, match="the mean mixer does not take it"):
        FastformerLayer(16, 2, 32, attention_type="mean", local_mixing=3)


def test_the_decoder_takes_a_mixer_that_keeps_a_decoding_state_and_refuses_one_that_does_not():
    from fastformer.layers.decoder import FastformerDecoderLayer

    layer = FastformerDecoderLayer(16, 2, 32, self_attention_type="fastformer")
    assert layer.self_attention.causal
    with pytest.raises(ValueError, match="the softmax mixer keeps none"):
        FastformerDecoderLayer(16, 2, 32, self_attention_type="softmax")


def test_a_toy_mixer_runs_in_the_encoder_and_the_causal_model_its_cache_refused_in_one_line(monkeypatch):
    """One line in the table, nothing else edited: the encoder and a causal language model read with it, generate
    re-reads the prefix (it declares no decoding state, as the causal softmax control), and what needs a state (a
    cache) is refused in one line naming the mixer."""
    from fastformer.models.fastformer import FastformerConfig, FastformerForCausalLM, FastformerModel

    class CausalMeanMixer(nn.Module):  # every token gets the mean of itself and the tokens before it
        def __init__(self, hidden_size, num_heads, **switches):
            super().__init__()
            self.proj = nn.Linear(hidden_size, hidden_size)

        def forward(self, x, mask=None):
            steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)[None, :, None]
            return self.proj(x.cumsum(1) / steps)

    monkeypatch.setitem(MIXERS, "mean", Mixer(CausalMeanMixer))
    small = dict(vocab_size=40, hidden_size=16, num_attention_heads=2, intermediate_size=16, attention_type="mean")
    ids = torch.randint(4, 40, (2, 6))
    encoder = FastformerModel(FastformerConfig(**small)).eval()
    assert encoder(input_ids=ids).last_hidden_state.shape == (2, 6, 16)
    config = FastformerConfig(**small, causal=True, norm_position="pre", pad_token_id=0)
    model = FastformerForCausalLM(config).eval()
    assert not config.keeps_decoding_state
    out = model.generate(input_ids=ids, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert out.shape == (2, 9)
    with pytest.raises(ValueError, match="a causal mean model keeps no decoding state") as refused:
        model(input_ids=ids, use_cache=True)
    assert "\n" not in str(refused.value)
