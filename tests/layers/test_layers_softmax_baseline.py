"""The softmax-attention baseline layer: the same FastformerLayer with SoftmaxAttention as its token mixer."""

import pytest
import torch

from fastformer import FastformerConfig, FastformerForSequenceClassification
from fastformer.layers import FastformerLayer, SoftmaxAttention


def test_softmax_layer_masks_padding_like_a_sequence_alone():
    torch.manual_seed(0)
    layer = FastformerLayer(32, 4, 64, attention_type="softmax").eval().double()
    assert isinstance(layer.attention, SoftmaxAttention)
    x = torch.randn(2, 10, 32, dtype=torch.float64)
    mask = torch.arange(10)[None] < torch.tensor([[10], [6]])
    batch = layer(x, mask)
    alone = layer(x[1:, :6])
    torch.testing.assert_close(batch[1:, :6], alone, rtol=1e-10, atol=1e-10)


def test_softmax_model_counts_the_standard_attention_parameters():
    fields = dict(vocab_size=100, hidden_size=32, num_attention_heads=4, intermediate_size=64)
    fast = FastformerForSequenceClassification(FastformerConfig.from_preset("paper", **fields))
    softmax_config = FastformerConfig.from_preset("paper", attention_type="softmax", **fields)
    soft = FastformerForSequenceClassification(softmax_config)
    D = 32
    # paper attention: Q, K, transform (3 D^2 + 3 D) + two scoring vectors (2 D); softmax: QKV + out (4 D^2 + 4 D)
    diff = sum(p.numel() for p in soft.parameters()) - sum(p.numel() for p in fast.parameters())
    assert diff == (4 * D * D + 4 * D) - (3 * D * D + 3 * D + 2 * D)  # one layer: the paper preset shares layers


def test_softmax_layer_is_not_causal():
    with pytest.raises(ValueError, match="bidirectional"):
        FastformerLayer(32, 4, 64, attention_type="softmax", causal=True)
    with pytest.raises(ValueError, match="attention_type"):
        FastformerLayer(32, 4, 64, attention_type="linear")
