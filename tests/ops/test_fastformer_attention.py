"""fastformer_attention against its slow reference: values, gradients, masks, dtypes, stability, memory."""

import pytest
import torch

from fastformer.ops import fastformer_attention, fastformer_attention_reference, masked_softmax
from fastformer.profiling import peak_memory_bytes
from tests.helpers import assert_rms_close, random_qkv, right_padding_mask

SHAPES = [  # (B, H, N, D): odd lengths, several heads and head sizes
    (2, 1, 1, 4),
    (2, 3, 7, 5),
    (1, 4, 63, 16),
    (2, 2, 500, 8),
    (1, 16, 1000, 16),
]


def run_both(B, H, N, D, dtype, scoring, interaction="product", lengths=None, seed=0):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(B, H, N, D, dtype, scoring, seed)
    mask = None if lengths is None else right_padding_mask(lengths, N)
    kw = dict(b_q=b_q, b_k=b_k, interaction=interaction)
    return fastformer_attention(q, k, v, w_q, w_k, mask, **kw), fastformer_attention_reference(
        q, k, v, w_q, w_k, mask, **kw
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_matches_reference(shape, dtype, scoring):
    fast, ref = run_both(*shape, dtype, scoring)
    assert fast.dtype == dtype
    assert_rms_close(fast, ref, dtype, f"{shape} {scoring}")


@pytest.mark.parametrize("interaction", ["product", "add"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_interactions_match_reference_with_padding(interaction, dtype):
    fast, ref = run_both(3, 4, 63, 8, dtype, "per_head", interaction, lengths=[63, 20, 1])
    assert_rms_close(fast, ref, dtype, interaction)


@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_gradcheck_float64(scoring):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(2, 3, 5, 4, torch.float64, scoring, requires_grad=True)
    mask = right_padding_mask([5, 3], 5)

    def f(q, k, v, w_q, w_k, b_q, b_k):
        return fastformer_attention(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)

    assert torch.autograd.gradcheck(f, (q, k, v, w_q, w_k, b_q, b_k))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_gradients_match_reference(dtype, scoring):
    B, H, N, D = 2, 4, 63, 8
    mask = right_padding_mask([63, 30], N)
    inputs = random_qkv(B, H, N, D, dtype, scoring, requires_grad=True)
    ref_inputs = [t.detach().double().requires_grad_() for t in inputs]
    grad_out = torch.randn(B, H, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fast = fastformer_attention(*inputs[:5], mask, b_q=inputs[5], b_k=inputs[6])
    ref = fastformer_attention_reference(*ref_inputs[:5], mask, b_q=ref_inputs[5], b_k=ref_inputs[6])
    # only real positions carry meaning downstream; the loss reads those
    keep = mask[:, None, :, None]
    (fast * grad_out.to(dtype) * keep).sum().backward()
    (ref * grad_out * keep).sum().backward()
    names = ["q", "k", "v", "w_q", "w_k", "b_q", "b_k"]
    for name, a, b in zip(names, inputs, ref_inputs, strict=True):
        if name in ("b_q", "b_k"):  # a per-head constant shift: its true gradient is 0
            assert b.grad.abs().max() < 1e-10
            assert a.grad.abs().max() < (1e-10 if dtype == torch.float64 else 1e-2)
            continue
        assert_rms_close(a.grad, b.grad, dtype, f"grad {name}")


def test_padding_never_changes_real_outputs_even_with_garbage():
    B, H, N, D = 3, 2, 40, 8
    q, k, v, w_q, w_k, *_ = random_qkv(B, H, N, D, torch.float32)
    mask = right_padding_mask([40, 17, 5], N)
    clean = fastformer_attention(q, k, v, w_q, w_k, mask)
    for garbage in (1e30, float("inf"), float("nan")):
        pad = ~mask[:, None, :, None]
        q2, k2 = q.masked_fill(pad, garbage), k.masked_fill(pad, -garbage)
        dirty = fastformer_attention(q2, k2, v, w_q, w_k, mask)
        real = mask[:, None, :, None].expand_as(clean)
        assert torch.equal(dirty[real], clean[real]), f"garbage {garbage} leaked into real tokens"


@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_sequence_alone_equals_same_sequence_in_padded_batch(scoring):
    H, D = 4, 8
    long, short = (random_qkv(1, H, n, D, torch.float64, scoring, seed=s) for n, s in ((50, 1), (13, 2)))
    _, _, _, w_q, w_k, b_q, b_k = long
    padded = [torch.cat([long[i], torch.cat([short[i], torch.randn(1, H, 37, D)], 2)]) for i in range(3)]
    batch = fastformer_attention(*padded, w_q, w_k, right_padding_mask([50, 13], 50), b_q=b_q, b_k=b_k)
    alone = fastformer_attention(*short[:3], w_q, w_k, b_q=b_q, b_k=b_k)
    torch.testing.assert_close(batch[1:, :, :13], alone, rtol=1e-12, atol=1e-12)


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v, w_q, w_k, *_ = random_qkv(2, 2, 6, 4, torch.float32, requires_grad=True)
    mask = right_padding_mask([6, 0], 6)
    out = fastformer_attention(q, k, v, w_q, w_k, mask)
    assert torch.isfinite(out).all()
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v, w_q, w_k))
    w = masked_softmax(torch.randn(2, 5), torch.zeros(2, 5, dtype=torch.bool))
    assert torch.equal(w, torch.zeros(2, 5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_large_scores_stay_finite(dtype):
    B, H, N, D = 2, 2, 256, 16
    q, k, v, w_q, w_k, *_ = random_qkv(B, H, N, D, torch.float32)
    # scale inputs so that raw scores reach ~1e4 in magnitude (exp would overflow fp16 and fp32 naively)
    w_q, w_k = w_q * 5000, w_k * 5000
    scores = torch.einsum("bhnd,hd->bhn", q, w_q) / 4
    assert scores.abs().max() > 1e4
    out = fastformer_attention(q.to(dtype), k.to(dtype), v.to(dtype), w_q.to(dtype), w_k.to(dtype))
    ref = fastformer_attention_reference(q.to(dtype), k.to(dtype), v.to(dtype), w_q.to(dtype), w_k.to(dtype))
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert_rms_close(out, ref, dtype)


def test_bad_inputs_raise_clear_errors():
    q, k, v, w_q, w_k, *_ = random_qkv(1, 2, 4, 3, torch.float32)
    with pytest.raises(ValueError, match="shape"):
        fastformer_attention(q, k[:, :, :3], v, w_q, w_k)
    with pytest.raises(ValueError, match="w_q"):
        fastformer_attention(q, k, v, w_q[:1], w_k)
    with pytest.raises(TypeError, match="bool"):
        fastformer_attention(q, k, v, w_q, w_k, torch.ones(1, 4))
    with pytest.raises(ValueError, match="mask"):
        fastformer_attention(q, k, v, w_q, w_k, torch.ones(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="interaction"):
        fastformer_attention(q, k, v, w_q, w_k, interaction="concat")


def test_torch_compile_matches_eager():
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(2, 4, 37, 8, torch.float32, "full", requires_grad=True)
    mask = right_padding_mask([37, 20], 37)
    compiled = torch.compile(fastformer_attention, fullgraph=True)
    eager = fastformer_attention(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)
    fast = compiled(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)
    torch.testing.assert_close(fast, eager, rtol=1e-5, atol=1e-5)
    grads_eager = torch.autograd.grad(eager.sum(), (q, k, w_q))
    grads_fast = torch.autograd.grad(fast.sum(), (q, k, w_q))
    for a, b in zip(grads_fast, grads_eager, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_memory_grows_linearly_in_sequence_length():
    def train_step(N, H=4, D=16):
        q, k, v = (torch.randn(1, H, N, D, requires_grad=True) for _ in range(3))
        w_q, w_k = torch.randn(H, D, requires_grad=True), torch.randn(H, D, requires_grad=True)
        return lambda: fastformer_attention(q, k, v, w_q, w_k).sum().backward()

    small, large = peak_memory_bytes(train_step(2**15)), peak_memory_bytes(train_step(2**17))
    assert large < 4.5 * small, f"peak {large / 2**20:.0f} MiB at 2^17 vs {small / 2**20:.0f} MiB at 2^15"
    # and no N x N buffer: the peak stays within a few N x D activations (2^17 x 64 x 4 bytes = 32 MiB each)
    assert large < 12 * 2**17 * 64 * 4
