"""The token mixers' one table: its names are the torch-free list the command line offers, every task's
--architecture offers each of them, and a mixer added to the table is a layer's attention with no other edit."""

import dataclasses
from typing import NamedTuple

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


class MeanState(NamedTuple):
    """The toy mixer's decoding state: what a running mean needs."""

    total: torch.Tensor  # (B, hidden): the sum of the real tokens read
    count: torch.Tensor  # (B, 1): how many


class RunningMeanMixer(nn.Module):
    """Every token gets the mean of the real tokens (causal: of those up to it, its state the running sum)."""

    def __init__(self, hidden_size, num_heads, causal=False, **switches):
        super().__init__()
        self.proj, self.causal = nn.Linear(hidden_size, hidden_size), causal

    def forward(self, x, mask=None, state=None):
        real = (torch.ones(x.shape[:2], dtype=torch.bool) if mask is None else mask)[..., None].to(x.dtype)
        if not self.causal:
            return self.proj((x * real).sum(1, keepdim=True).expand_as(x) / real.sum(1, keepdim=True).clamp(min=1))
        start = state or MeanState(x.new_zeros(x.shape[0], x.shape[2]), x.new_zeros(x.shape[0], 1))
        totals = start.total[:, None] + (x * real).cumsum(1)  # (B, N, hidden)
        counts = start.count[:, None] + real.cumsum(1)  # (B, N, 1)
        return self.proj(totals / counts.clamp(min=1)), MeanState(totals[:, -1], counts[:, -1])


def test_a_toy_mixer_with_a_decoding_state_of_its_own_decodes_caches_and_exports(monkeypatch):
    """One line in the table (its state class declared), nothing else edited: a causal language model with it keeps
    that state in its cache, generate() with the state equals re-reading the prefix (greedy and beam search, left
    padding), and the exported prefill / decode programs carry the state's fields, named after them."""
    from fastformer.models.fastformer import FastformerConfig, FastformerForCausalLM, FastformerModel
    from fastformer.models.fastformer.exportable import export_causal_lm, greedy_decode, state_names, template_cache

    monkeypatch.setitem(MIXERS, "running-mean", Mixer(RunningMeanMixer, state=MeanState))
    small = dict(vocab_size=40, hidden_size=16, num_attention_heads=2, intermediate_size=16)
    ids = torch.randint(4, 40, (2, 6), generator=torch.Generator().manual_seed(0))
    encoder = FastformerModel(FastformerConfig(**small, attention_type="running-mean")).eval()
    assert encoder(input_ids=ids).last_hidden_state.shape == (2, 6, 16)
    config = FastformerConfig(**small, attention_type="running-mean", causal=True, norm_position="pre", pad_token_id=0)
    torch.manual_seed(0)
    model = FastformerForCausalLM(config).eval()
    assert config.keeps_decoding_state
    cached = model(input_ids=ids, use_cache=True).cache
    assert isinstance(cached.states[0], MeanState)
    assert cached.nbytes() == 2 * 8 + 2 * 2 * 4 * (16 + 1)  # the token counts, then 2 depths of 2 rows
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # left padding
    for settings in (dict(do_sample=False), dict(do_sample=False, num_beams=3)):
        with_state = model.generate(ids, attention_mask=mask, max_new_tokens=5, pad_token_id=0, **settings)
        without = model.generate(
            ids, attention_mask=mask, max_new_tokens=5, pad_token_id=0, use_cache=False, **settings
        )
        assert torch.equal(with_state, without), settings
    assert state_names(template_cache(model)) == ["seen_tokens", "total_0", "count_0", "total_1", "count_1"]
    prefill, decode = export_causal_lm(model)
    exported = greedy_decode(prefill.module(), decode.module(), ids, torch.ones_like(ids), max_new_tokens=5)
    assert torch.equal(exported, model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=0))
