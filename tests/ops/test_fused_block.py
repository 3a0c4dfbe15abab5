"""fastformer_block_fused (the whole attention block in one autograd Function) against the slow reference block."""

import pytest
import torch

from fastformer.layers import FastformerAttention
from fastformer.ops.fused_block import fastformer_block_fused
from fastformer.ops.naive import fastformer_block_reference
from fastformer.profiling import peak_memory_bytes
from tests.helpers import assert_rms_close, right_padding_mask

NAMES = [
    "x",
    "w_query",
    "b_query",
    "w_key",
    "b_key",
    "w_q",
    "w_k",
    "w_transform",
    "b_transform",
    "w_out",
    "b_out",
    "b_q",
    "b_k",
]


def block_inputs(B, N, H, D, dtype, scoring="full", output_dense=True, seed=0, requires_grad=False):
    """x and every weight of the block, as a dict of NAMES (w_out, b_out None without the output dense)."""
    g = torch.Generator().manual_seed(seed)
    C = H * D

    def rand(*shape, std=1.0):
        return (std * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype).requires_grad_(requires_grad)

    w_shape = (H, D) if scoring == "per_head" else (H, H, D)
    t = dict(
        x=rand(B, N, C),
        w_query=rand(C, C, std=C**-0.5),
        b_query=rand(C),
        w_key=rand(C, C, std=C**-0.5),
        b_key=rand(C),
        w_q=rand(*w_shape),
        w_k=rand(*w_shape),
        w_transform=rand(C, C, std=C**-0.5),
        b_transform=rand(C),
        w_out=rand(C, C, std=C**-0.5),
        b_out=rand(C),
        b_q=rand(H),
        b_k=rand(H),
    )
    if not output_dense:
        t["w_out"] = t["b_out"] = None
    return t


def call(fn, t, mask, H, **kw):
    weights = [t[name] for name in NAMES[1:11]]
    return fn(t["x"], *weights, mask, num_heads=H, b_q=t["b_q"], b_k=t["b_k"], **kw)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
@pytest.mark.parametrize("output_dense", [False, True])
@pytest.mark.parametrize("chunk_tokens", [None, 16])
def test_forward_and_gradients_match_reference(dtype, scoring, output_dense, chunk_tokens):
    B, N, H, D = 3, 37, 4, 8  # odd length; one sequence half padded, one fully padded
    mask = right_padding_mask([37, 18, 0], N)
    t = block_inputs(B, N, H, D, dtype, scoring, output_dense, requires_grad=True)
    ref_t = {k: None if v is None else v.detach().double().requires_grad_() for k, v in t.items()}
    fast = call(fastformer_block_fused, t, mask, H, chunk_tokens=chunk_tokens)
    ref = call(fastformer_block_reference, ref_t, mask, H)
    assert fast.dtype == dtype
    assert_rms_close(fast, ref, dtype, "output")
    grad = torch.randn(B, N, H * D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (fast * grad.to(dtype)).sum().backward()
    (ref * grad).sum().backward()
    for name in NAMES[:-2]:
        if t[name] is not None:
            assert_rms_close(t[name].grad, ref_t[name].grad, dtype, f"grad {name}")
    for name in ("b_q", "b_k"):  # a constant shift of the scores: true gradient 0
        assert ref_t[name].grad.abs().max() < 1e-10 and t[name].grad.abs().max() < 5e-2


@pytest.mark.parametrize("scoring", ["per_head", "full"])
@pytest.mark.parametrize("output_dense", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_gradcheck_float64(scoring, output_dense, masked):
    B, N, H, D = 2, 6, 2, 3
    mask = right_padding_mask([6, 4], N) if masked else None
    t = block_inputs(B, N, H, D, torch.float64, scoring, output_dense, requires_grad=True)
    names = [n for n in NAMES if t[n] is not None]

    def f(*tensors):
        return call(fastformer_block_fused, {**t, **dict(zip(names, tensors, strict=True))}, mask, H, chunk_tokens=4)

    # every element of the Jacobian for the richest case; a random projection of it (fast_mode) for the others
    fast_mode = not (masked and output_dense and scoring == "full")
    assert torch.autograd.gradcheck(f, tuple(t[n] for n in names), fast_mode=fast_mode)


def test_input_without_grad_still_trains_the_weights():
    t = block_inputs(2, 9, 2, 4, torch.float64, requires_grad=True)
    t["x"] = t["x"].detach()
    call(fastformer_block_fused, t, None, 2).sum().backward()
    assert t["w_query"].grad is not None and t["w_query"].grad.abs().sum() > 0


@pytest.mark.parametrize("preset", ["official", "paper"])
def test_layer_fused_equals_unfused(preset):
    """FastformerAttention routes the shared-QV product block through the fused block: same values and gradients."""
    from fastformer.presets import PRESETS, attention_kwargs

    torch.manual_seed(0)
    kwargs = attention_kwargs(PRESETS[preset])
    fused = FastformerAttention(32, 4, **kwargs).double()
    assert fused.implementation == "fused_block"
    plain = FastformerAttention(32, 4, **{**kwargs, "implementation": "eager"}).double()
    plain.load_state_dict(fused.state_dict())
    x = torch.randn(3, 21, 32, dtype=torch.float64, requires_grad=True)
    mask = right_padding_mask([21, 9, 1], 21)
    a, b = fused(x, mask), plain(x, mask)
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    grad = torch.randn_like(a)
    ga = torch.autograd.grad(a, [x, *fused.parameters()], grad)
    gb = torch.autograd.grad(b, [x, *plain.parameters()], grad)
    for p, q in zip(ga, gb, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("output_dense", [True, False])
def test_peak_training_memory_in_activations(output_dense):
    """Forward + backward of the block keeps about 4.4 N x C activations at its peak (the output and dL/dx
    included): q, o (reused for dL/do), dL/dx, the output and the (N, H) scores; k is never formed. The unfused
    block needs about 7 with the fused op and 10 with plain autograd."""
    n, C = 2**15, 256
    layer = FastformerAttention(C, 16, scoring="full", output_dense=output_dense)
    x = torch.randn(1, n, C, requires_grad=True)
    grad = torch.randn(1, n, C)
    unit = n * C * 4

    def step():
        layer(x).backward(grad)

    peak = peak_memory_bytes(step) / unit
    assert peak < 4.8, peak


def test_two_backward_passes_through_one_graph():
    """retain_graph: the first backward reuses o's buffer for dL/do; a second one rebuilds o and agrees."""
    t = block_inputs(2, 11, 2, 4, torch.float64, requires_grad=True)
    y = call(fastformer_block_fused, t, right_padding_mask([11, 5], 11), 2, chunk_tokens=4)
    first = torch.autograd.grad(y.sum(), [t["x"], t["w_out"], t["w_query"]], retain_graph=True)
    second = torch.autograd.grad(y.sum(), [t["x"], t["w_out"], t["w_query"]])
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
