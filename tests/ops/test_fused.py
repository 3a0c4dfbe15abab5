"""fastformer_attention_fused (token-major layout, hand-written backward) against the slow reference."""

import pytest
import torch

from fastformer.layers import FastformerAttention
from fastformer.ops import fastformer_attention, fastformer_attention_fused, fastformer_attention_reference
from fastformer.profiling import peak_memory_bytes
from tests.helpers import assert_rms_close, random_qkv, right_padding_mask

SHAPES = [(2, 1, 1, 4), (2, 3, 7, 5), (1, 4, 63, 16), (2, 2, 500, 8), (1, 16, 1000, 16)]


def tokens(t: torch.Tensor) -> torch.Tensor:  # (B, H, N, D) -> (B, N, H * D)
    B, H, N, D = t.shape
    return t.transpose(1, 2).reshape(B, N, H * D)


def fused_on_heads(q, k, v, w_q, w_k, mask=None, b_q=None, b_k=None, share_v=False):
    """The fused op called on (B, H, N, D) tensors, output back in (B, N, H * D)."""
    qt = tokens(q)
    return fastformer_attention_fused(
        qt, tokens(k), qt if share_v else tokens(v), w_q, w_k, mask, num_heads=q.shape[1], b_q=b_q, b_k=b_k
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_matches_reference(shape, dtype, scoring):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(*shape, dtype, scoring)
    B, _, N, _ = shape
    mask = right_padding_mask([N] + [max(1, N // 2)] * (B - 1), N)
    fast = fused_on_heads(q, k, v, w_q, w_k, mask, b_q, b_k)
    ref = fastformer_attention_reference(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)
    assert fast.dtype == dtype
    assert_rms_close(fast, tokens(ref), dtype, f"{shape} {scoring}")


@pytest.mark.parametrize("share_v", [False, True])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
@pytest.mark.parametrize("masked", [False, True])
def test_gradcheck_float64(scoring, share_v, masked):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(2, 3, 6, 4, torch.float64, scoring, requires_grad=True)
    mask = right_padding_mask([6, 4], 6) if masked else None

    def f(q, k, v, w_q, w_k, b_q, b_k):
        return fused_on_heads(q, k, v, w_q, w_k, mask, b_q, b_k, share_v)

    # every element of the Jacobian for the richest case; a random projection of it (fast_mode) for the others
    fast_mode = not (masked and scoring == "full" and not share_v)
    assert torch.autograd.gradcheck(f, (q, k, v, w_q, w_k, b_q, b_k), fast_mode=fast_mode)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("share_v", [False, True])
def test_gradients_match_reference(dtype, share_v):
    B, H, N, D = 2, 4, 63, 8
    mask = right_padding_mask([63, 30], N)
    inputs = random_qkv(B, H, N, D, dtype, "full", requires_grad=True)
    ref_inputs = [t.detach().double().requires_grad_() for t in inputs]
    grad_out = torch.randn(B, N, H * D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fast = fused_on_heads(*inputs[:5], mask, *inputs[5:], share_v=share_v)
    q, k, v, w_q, w_k, b_q, b_k = ref_inputs
    ref = tokens(fastformer_attention_reference(q, k, q if share_v else v, w_q, w_k, mask, b_q=b_q, b_k=b_k))
    (fast * grad_out.to(dtype)).sum().backward()
    (ref * grad_out).sum().backward()
    for name, a, b in zip(["q", "k", "v", "w_q", "w_k"], inputs, ref_inputs, strict=False):
        if name == "v" and share_v:
            assert a.grad is None
            continue
        assert_rms_close(a.grad, b.grad, dtype, f"grad {name}")
    for a, b in zip(inputs[5:], ref_inputs[5:], strict=True):  # biases: a constant shift, true gradient 0
        assert b.grad.abs().max() < 1e-10 and a.grad.abs().max() < 1e-2


def test_same_values_as_the_plain_op_with_padding_and_garbage():
    B, H, N, D = 3, 4, 40, 8
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(B, H, N, D, torch.float32, "per_head")
    mask = right_padding_mask([40, 17, 0], N)
    plain = tokens(fastformer_attention(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k))
    pad = ~mask[:, None, :, None]
    dirty = [t.masked_fill(pad, float("nan")) for t in (q, k, v)]
    fused = fused_on_heads(*dirty, w_q, w_k, mask, b_q, b_k)
    torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-6)
    assert torch.equal(fused[2], torch.zeros_like(fused[2]))  # a row with no real token
    assert torch.equal(fused[1, 17:], torch.zeros_like(fused[1, 17:]))  # padded tokens output 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_large_scores_stay_finite(dtype):
    q, k, v, w_q, w_k, *_ = random_qkv(2, 2, 256, 16, torch.float32)
    w_q, w_k = w_q * 5000, w_k * 5000  # raw scores beyond 1e4
    args = [t.to(dtype) for t in (q, k, v, w_q, w_k)]
    out = fused_on_heads(*args)
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert_rms_close(out, tokens(fastformer_attention_reference(*args)), dtype)


def test_bad_inputs_raise_clear_errors():
    q = torch.randn(1, 4, 8)
    with pytest.raises(ValueError, match="divisible"):
        fastformer_attention_fused(q, q, q, torch.randn(3, 2), torch.randn(3, 2), num_heads=3)
    with pytest.raises(ValueError, match="w_q"):
        fastformer_attention_fused(q, q, q, torch.randn(2, 3), torch.randn(2, 4), num_heads=2)
    with pytest.raises(ValueError, match="mask"):
        fastformer_attention_fused(q, q, q, torch.randn(2, 4), torch.randn(2, 4), torch.ones(1, 4), num_heads=2)
    with pytest.raises(ValueError, match="shape"):
        fastformer_attention_fused(q, q[:, :3], q, torch.randn(2, 4), torch.randn(2, 4), num_heads=2)


def test_fused_layer_uses_less_memory_than_plain_autograd_and_grows_linearly():
    H, D = 16, 16
    unit = lambda n: n * H * D * 4  # noqa: E731  (bytes of one N x C float32 activation)

    def step(n, fused):
        q, k = (torch.randn(1, n, H * D, requires_grad=True) for _ in range(2))
        w_q, w_k = torch.randn(H, D, requires_grad=True), torch.randn(H, D, requires_grad=True)
        if fused:
            return lambda: fastformer_attention_fused(q, k, q, w_q, w_k, num_heads=H).sum().backward()
        heads = lambda t: t.view(1, n, H, D).transpose(1, 2)  # noqa: E731
        return lambda: fastformer_attention(heads(q), heads(k), heads(q), w_q, w_k).sum().backward()

    fused_small, fused_large = peak_memory_bytes(step(2**14, True)), peak_memory_bytes(step(2**16, True))
    plain_large = peak_memory_bytes(step(2**16, False))
    assert fused_large < 4.5 * fused_small
    assert fused_large < plain_large
    # the two input gradients (2 units) plus the small (N, H) softmax buffers
    assert fused_large < 2.6 * unit(2**16), fused_large / unit(2**16)


def test_official_attention_layer_memory_budget():
    """Forward + backward of the notebook's attention block (4 projections, through the fused block) stays well under
    the 7 N x C activations of autograd around the fused op (tests/ops/test_fused_block.py pins 4.8)."""
    n, C = 2**15, 256
    layer = FastformerAttention(C, 16, scoring="full", output_dense=True)
    x = torch.randn(1, n, C, requires_grad=True)
    peak = peak_memory_bytes(lambda: layer(x).sum().backward())
    assert peak < 6.5 * n * C * 4, peak / (n * C * 4)


@pytest.mark.slow
def test_torch_compile_of_the_fused_layer_matches_eager():
    torch.manual_seed(0)
    layer = FastformerAttention(32, 4, scoring="full", output_dense=True)
    x = torch.randn(2, 19, 32, requires_grad=True)
    mask = right_padding_mask([19, 7], 19)
    eager = layer(x, mask)
    compiled = torch.compile(layer)(x, mask)
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
    g_eager = torch.autograd.grad(eager[mask].sum(), [x, layer.query_att.weight])
    g_comp = torch.autograd.grad(compiled[mask].sum(), [x, layer.query_att.weight])
    for a, b in zip(g_comp, g_eager, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("chunk_tokens", [1, 7, 64, 10_000])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
@pytest.mark.parametrize("share_v", [False, True])
def test_chunked_online_softmax_matches_reference(chunk_tokens, scoring, share_v):
    """Token chunks (N >= chunk: online softmax across chunks) and batch blocks (N < chunk) give the same values."""
    B, H, N, D = 3, 4, 50, 8
    inputs = random_qkv(B, H, N, D, torch.float64, scoring, requires_grad=True)
    q, k, v, w_q, w_k, b_q, b_k = inputs
    mask = right_padding_mask([50, 23, 0], N)
    v_used = q if share_v else v
    qt = tokens(q)
    fast = fastformer_attention_fused(
        qt,
        tokens(k),
        qt if share_v else tokens(v),
        w_q,
        w_k,
        mask,
        num_heads=H,
        b_q=b_q,
        b_k=b_k,
        chunk_tokens=chunk_tokens,
    )
    ref = tokens(fastformer_attention_reference(q, k, v_used, w_q, w_k, mask, b_q=b_q, b_k=b_k))
    torch.testing.assert_close(fast, ref, rtol=1e-12, atol=1e-12)
    grad_out = torch.randn_like(fast)
    wrt = [q, k, w_q, w_k] + ([] if share_v else [v])
    for a, b in zip(
        torch.autograd.grad((fast * grad_out).sum(), wrt), torch.autograd.grad((ref * grad_out).sum(), wrt), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
