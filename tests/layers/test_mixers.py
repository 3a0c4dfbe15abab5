"""The token mixers' one table: its names are the torch-free list the command line offers, every task's
--architecture offers each of them, and a mixer added to the table is a layer's attention with no other edit."""

import dataclasses

import torch
from torch import nn

from fastformer import presets
from fastformer.layers.layer import FastformerLayer
from fastformer.layers.mixers import MIXERS
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

    monkeypatch.setitem(MIXERS, "mean", MeanMixer)
    layer = FastformerLayer(16, 2, 32, attention_type="mean")
    assert isinstance(layer.attention, MeanMixer) and not layer.carries_state
    assert layer(torch.randn(2, 5, 16)).shape == (2, 5, 16)
