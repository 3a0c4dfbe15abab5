"""The softmax-attention baseline layer: the same FastformerLayer with SoftmaxAttention as its token mixer."""

import pytest
import torch
from torch.nn import functional as F

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


def reference_causal_softmax_attention(attention: SoftmaxAttention, x, mask):
    """The slow, obvious form: for each query i, a softmax over the real keys j <= i, head by head."""
    B, N, hidden = x.shape
    H, D = attention.num_heads, attention.head_size
    q, k, v = attention.qkv(x).split(hidden, dim=-1)
    out = torch.zeros(B, N, hidden, dtype=x.dtype)
    for b in range(B):
        for i in range(N):
            keys = [j for j in range(i + 1) if mask[b, j]] or [i]
            for h in range(H):
                cols = slice(h * D, (h + 1) * D)
                scores = torch.stack([q[b, i, cols] @ k[b, j, cols] for j in keys]) / D**0.5
                weights = torch.softmax(scores, 0)
                out[b, i, cols] = sum(w * v[b, j, cols] for w, j in zip(weights, keys, strict=True))
    return attention.out(out)


def test_causal_softmax_attention_matches_the_reference_forward_and_backward():
    torch.manual_seed(0)
    attention = SoftmaxAttention(12, 3, causal=True).double()
    x = torch.randn(3, 7, 12, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, :3] = False  # left padding
    mask[2, 5:] = False  # right padding
    fast, slow = attention(x, mask), reference_causal_softmax_attention(attention, x, mask)
    # the real tokens' rows (a padding row is read by nobody: what it attends to is the layer's choice)
    torch.testing.assert_close(fast[mask], slow[mask], rtol=1e-10, atol=1e-10)
    g = torch.randn_like(fast) * mask[..., None]
    fast_grads = torch.autograd.grad(fast, (x, *attention.parameters()), g)
    slow_grads = torch.autograd.grad(slow, (x, *attention.parameters()), g)
    for a, b in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)
    # no mask: torch's own causal kernel, the same numbers
    torch.testing.assert_close(attention(x), reference_causal_softmax_attention(attention, x, torch.ones(3, 7) > 0))
    small = SoftmaxAttention(4, 2, causal=True).double()
    x = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(small, (x, mask[1:, :5]))


def test_causal_softmax_layer_never_reads_a_later_token_and_left_padding_changes_nothing():
    torch.manual_seed(0)
    layer = FastformerLayer(32, 4, 64, attention_type="softmax", causal=True).eval().double()
    assert not layer.carries_state  # no decoding state: a causal softmax model reads its prefix again
    x = torch.randn(1, 9, 32, dtype=torch.float64)
    later = x.clone()
    later[:, 6:] = torch.randn(1, 3, 32, dtype=torch.float64)
    torch.testing.assert_close(layer(x)[:, :6], layer(later)[:, :6], rtol=0, atol=0)
    padded = torch.cat([torch.randn(1, 4, 32, dtype=torch.float64), x], 1)
    mask = torch.arange(13)[None] >= 4
    torch.testing.assert_close(layer(padded, mask)[:, 4:], layer(x), rtol=1e-10, atol=1e-10)


def test_unknown_mixer_is_refused():
    with pytest.raises(ValueError, match="attention_type"):
        FastformerLayer(32, 4, 64, attention_type="linear")


@pytest.mark.parametrize("attention_type", ["softmax", "fastformer"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_batch_without_padding_takes_the_unmasked_path_with_the_same_outputs(attention_type, causal, monkeypatch):
    """An all-real mask is dropped before the layers (SDPA then gets no attn_mask: its fastest kernel); outputs and
    gradients equal those of the same batch given no mask, and a batch with one padded token still passes its mask."""
    torch.manual_seed(0)
    fields = dict(vocab_size=100, hidden_size=32, num_attention_heads=4, intermediate_size=64, causal=causal)
    model = FastformerForSequenceClassification(FastformerConfig(attention_type=attention_type, **fields)).double()
    model.eval()
    masks_seen = []
    sdpa = F.scaled_dot_product_attention

    def recording_sdpa(*args, attn_mask=None, **kwargs):
        masks_seen.append(attn_mask)
        return sdpa(*args, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording_sdpa)
    ids = torch.randint(5, 100, (3, 9))
    outputs = []
    for mask in (torch.ones(3, 9, dtype=torch.long), None):
        model.zero_grad()
        logits = model(input_ids=ids, attention_mask=mask).logits
        logits.sum().backward()
        outputs.append((logits, [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(outputs[0][0], outputs[1][0], rtol=0, atol=0)
    for a, b in zip(outputs[0][1], outputs[1][1], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    if attention_type == "softmax":
        assert masks_seen and all(m is None for m in masks_seen)
        masks_seen.clear()
        padded = torch.ones(3, 9, dtype=torch.long)
        padded[1, -1] = 0
        model(input_ids=ids, attention_mask=padded)
        assert masks_seen and all(m is not None for m in masks_seen)
