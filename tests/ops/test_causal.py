"""Causal Fastformer attention: parallel form vs slow reference, causality, recurrent form, state size, padding."""

import pytest
import torch

from fastformer.ops.causal import (
    CausalPoolState,
    causal_additive_pool,
    causal_fastformer_attention,
    causal_fastformer_step,
)
from fastformer.ops.naive import causal_fastformer_attention_reference
from fastformer.profiling import peak_memory_bytes
from tests.helpers import assert_rms_close, random_qkv, right_padding_mask


def left_padding_mask(lengths: list[int], N: int) -> torch.Tensor:
    return torch.arange(N)[None, :] >= N - torch.tensor(lengths)[:, None]


def run_both(B, H, N, D, dtype, scoring, interaction="product", mask=None, chunk=4, seed=0):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(B, H, N, D, dtype, scoring, seed)
    kw = dict(b_q=b_q, b_k=b_k, interaction=interaction)
    fast = causal_fastformer_attention(q, k, v, w_q, w_k, mask, chunk_tokens=chunk, **kw)[0]
    return fast, causal_fastformer_attention_reference(q, k, v, w_q, w_k, mask, **kw)


# chunk 4 at N up to 70 exercises three levels of the chunk recursion, a ragged tail and a single block
@pytest.mark.parametrize("shape", [(2, 1, 1, 4), (2, 3, 7, 5), (1, 4, 70, 8), (2, 2, 17, 3)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_matches_reference(shape, dtype, scoring):
    fast, ref = run_both(*shape, dtype, scoring)
    assert fast.dtype == dtype
    assert_rms_close(fast, ref, dtype, f"{shape} {scoring}")


@pytest.mark.parametrize("chunk", [2, 3, 4, 16, 32, 1000])
def test_every_chunk_size_gives_the_same_values(chunk):
    fast, ref = run_both(2, 2, 45, 4, torch.float64, "per_head", chunk=chunk)
    assert_rms_close(fast, ref, torch.float64, f"chunk {chunk}")


@pytest.mark.parametrize("interaction", ["product", "add"])
def test_masks_left_right_holes_and_empty_rows(interaction):
    N = 23
    mask = torch.stack(
        [
            left_padding_mask([23], N)[0],
            left_padding_mask([9], N)[0],
            right_padding_mask([5], N)[0],
            torch.zeros(N, dtype=torch.bool),
            torch.rand(N, generator=torch.Generator().manual_seed(3)) > 0.4,
        ]
    )
    fast, ref = run_both(5, 3, N, 4, torch.float64, "full", interaction, mask=mask)
    assert_rms_close(fast, ref, torch.float64, interaction)
    assert torch.equal(fast[3], torch.zeros_like(fast[3]))
    padded = ~mask[:, None, :].expand(-1, 3, -1)
    assert torch.equal(fast[padded], torch.zeros_like(fast[padded]))


@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_gradcheck_float64(scoring):
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(2, 2, 9, 3, torch.float64, scoring, requires_grad=True)
    mask = left_padding_mask([9, 6], 9)

    def f(q, k, v, w_q, w_k, b_q, b_k):
        return causal_fastformer_attention(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k, chunk_tokens=2)[0]

    # every element of the Jacobian for the full scoring; a random projection of it (fast_mode) for per-head
    assert torch.autograd.gradcheck(f, (q, k, v, w_q, w_k, b_q, b_k), fast_mode=scoring != "full")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_gradients_match_reference(dtype):
    B, H, N, D = 2, 3, 37, 8
    mask = left_padding_mask([37, 20], N)
    inputs = random_qkv(B, H, N, D, dtype, "full", requires_grad=True)
    ref_inputs = [t.detach().double().requires_grad_() for t in inputs]
    grad_out = torch.randn(B, H, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    fast = causal_fastformer_attention(*inputs[:5], mask, b_q=inputs[5], b_k=inputs[6], chunk_tokens=4)[0]
    ref = causal_fastformer_attention_reference(*ref_inputs[:5], mask, b_q=ref_inputs[5], b_k=ref_inputs[6])
    (fast * grad_out.to(dtype)).sum().backward()
    (ref * grad_out).sum().backward()
    for name, a, b in zip(["q", "k", "v", "w_q", "w_k"], inputs, ref_inputs[:5], strict=False):
        assert torch.isfinite(a.grad).all(), name
        assert_rms_close(a.grad, b.grad, dtype, f"grad {name}")


def test_future_tokens_never_change_the_past():
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(1, 4, 64, 8, torch.float64, "full")
    before = causal_fastformer_attention(q, k, v, w_q, w_k, b_q=b_q, b_k=b_k, chunk_tokens=8)[0]
    for t in (0, 13, 40, 63):
        q2, k2, v2 = (x.clone() for x in (q, k, v))
        for x in (q2, k2, v2):
            x[:, :, t + 1 :] = torch.randn_like(x[:, :, t + 1 :]) * 100
        after = causal_fastformer_attention(q2, k2, v2, w_q, w_k, b_q=b_q, b_k=b_k, chunk_tokens=8)[0]
        assert torch.equal(after[:, :, : t + 1], before[:, :, : t + 1]), f"outputs up to {t} changed"


@pytest.mark.parametrize("interaction", ["product", "add"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_stepping_equals_parallel_form(interaction, dtype):
    B, H, N, D = 3, 4, 50, 8
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(B, H, N, D, dtype, "full")
    mask = left_padding_mask([50, 31, 1], N)
    kw = dict(b_q=b_q, b_k=b_k, interaction=interaction)
    parallel, final = causal_fastformer_attention(q, k, v, w_q, w_k, mask, **kw)
    state = CausalPoolState.empty(B, H, D, dtype=torch.promote_types(dtype, torch.float32))
    steps = []
    for t in range(N):
        u, state = causal_fastformer_step(
            q[:, :, t : t + 1], k[:, :, t : t + 1], v[:, :, t : t + 1], w_q, w_k, state, mask[:, t : t + 1], **kw
        )
        steps.append(u)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(torch.cat(steps, dim=2), parallel, rtol=tol, atol=tol)
    for a, b in zip(state, final, strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_prefill_then_continue_equals_one_pass():
    q, k, v, w_q, w_k, *_ = random_qkv(2, 2, 41, 4, torch.float64)
    whole = causal_fastformer_attention(q, k, v, w_q, w_k, chunk_tokens=4)[0]
    first, state = causal_fastformer_attention(q[:, :, :17], k[:, :, :17], v[:, :, :17], w_q, w_k)
    rest = causal_fastformer_attention(q[:, :, 17:], k[:, :, 17:], v[:, :, 17:], w_q, w_k, state=state, chunk_tokens=4)[
        0
    ]
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole, rtol=1e-12, atol=1e-12)


def test_state_size_does_not_grow_with_the_sequence():
    H, D = 4, 8
    q, k, v, w_q, w_k, *_ = random_qkv(1, H, 600, D, torch.float32)

    def state_after(n):
        state = CausalPoolState.empty(1, H, D)
        for t in range(n):
            token = [x[:, :, t : t + 1] for x in (q, k, v)]
            _, state = causal_fastformer_step(*token, w_q, w_k, state)
        return state

    short, long = state_after(3), state_after(600)
    nbytes = [sum(t.numel() * t.element_size() for t in s.tensors()) for s in (short, long)]
    assert nbytes[0] == nbytes[1] == 2 * H * (D + 1) * 4
    _, parallel_state = causal_fastformer_attention(q, k, v, w_q, w_k)
    assert [t.shape for t in parallel_state.tensors()] == [t.shape for t in long.tensors()]


def test_left_padded_sequence_equals_the_sequence_alone():
    H, D = 2, 4
    long, short = (random_qkv(1, H, n, D, torch.float64, "full", seed=s) for n, s in ((30, 1), (12, 2)))
    _, _, _, w_q, w_k, b_q, b_k = long
    padded = [torch.cat([long[i], torch.cat([torch.randn(1, H, 18, D) * 1e3, short[i]], 2)]) for i in range(3)]
    batch = causal_fastformer_attention(*padded, w_q, w_k, left_padding_mask([30, 12], 30), b_q=b_q, b_k=b_k)[0]
    alone = causal_fastformer_attention(*short[:3], w_q, w_k, b_q=b_q, b_k=b_k)[0]
    torch.testing.assert_close(batch[1:, :, 18:], alone, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_large_scores_and_long_sequences_stay_finite(dtype):
    B, H, N, D = 1, 2, 3000, 8
    q, k, v, w_q, w_k, *_ = random_qkv(B, H, N, D, torch.float32)
    w_q, w_k = w_q * 3000, w_k * 3000  # raw scores around 1e4: exp overflows any dtype without the log-sum-exp
    scores = torch.einsum("bhnd,hd->bhn", q, w_q) / D**0.5
    assert scores.abs().max() > 1e4
    inputs = [t.to(dtype) for t in (q, k, v, w_q, w_k)]
    out = causal_fastformer_attention(*inputs)[0]
    assert out.dtype == dtype and torch.isfinite(out).all()
    sl = slice(0, 300)  # the loop reference is O(N^2): check a prefix (causal: it is the same computation)
    ref = causal_fastformer_attention_reference(*(t[:, :, sl] for t in inputs[:3]), *inputs[3:])
    assert_rms_close(out[:, :, sl], ref, dtype)


def test_pool_of_constant_scores_is_the_running_mean():
    x = torch.randn(1, 1, 100, 3, dtype=torch.float64)
    y, lse = causal_additive_pool(x, torch.zeros(1, 1, 100, dtype=torch.float64), chunk_tokens=8)
    running_mean = x.cumsum(2) / torch.arange(1, 101, dtype=torch.float64)[None, None, :, None]
    torch.testing.assert_close(y, running_mean, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lse[0, 0], torch.log(torch.arange(1, 101, dtype=torch.float64)))


def test_memory_grows_linearly_in_sequence_length():
    def train_step(N, H=4, D=16):
        q, k, v = (torch.randn(1, H, N, D, requires_grad=True) for _ in range(3))
        w_q, w_k = torch.randn(H, D, requires_grad=True), torch.randn(H, D, requires_grad=True)
        return lambda: causal_fastformer_attention(q, k, v, w_q, w_k)[0].sum().backward()

    small, large = peak_memory_bytes(train_step(2**13)), peak_memory_bytes(train_step(2**15))
    assert large < 4.5 * small, f"peak {large / 2**20:.0f} MiB at 2^15 vs {small / 2**20:.0f} MiB at 2^13"


def test_bad_inputs_raise_clear_errors():
    q, k, v, w_q, w_k, *_ = random_qkv(1, 2, 4, 3, torch.float32)
    with pytest.raises(ValueError, match="interaction"):
        causal_fastformer_attention(q, k, v, w_q, w_k, interaction="concat")[0]
    with pytest.raises(ValueError, match="one token"):
        causal_fastformer_step(q, k, v, w_q, w_k, CausalPoolState.empty(1, 2, 3))
    with pytest.raises(ValueError, match="chunk_tokens"):
        causal_fastformer_attention(q, k, v, w_q, w_k, chunk_tokens=1)[0]
