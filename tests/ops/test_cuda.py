"""The op, the fused op and a compiled layer on a CUDA device, against the reference. Skipped without a GPU."""

import pytest
import torch

from fastformer.layers import FastformerAttention
from fastformer.ops import fastformer_attention, fastformer_attention_fused, fastformer_attention_reference
from tests.helpers import assert_rms_close, random_qkv, right_padding_mask

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
@pytest.mark.parametrize("N", [63, 1000, 4097])
def test_ops_on_cuda_match_the_reference(dtype, scoring, N):
    B, H, D = 2, 8, 32
    q, k, v, w_q, w_k, b_q, b_k = random_qkv(B, H, N, D, dtype, scoring)
    mask = right_padding_mask([N, N // 2], N)
    ref = fastformer_attention_reference(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)
    cuda = [t.cuda() for t in (q, k, v, w_q, w_k, b_q, b_k)]
    plain = fastformer_attention(*cuda[:5], mask.cuda(), b_q=cuda[5], b_k=cuda[6])
    assert_rms_close(plain.cpu(), ref, dtype, "plain op")
    tok = [t.transpose(1, 2).reshape(B, N, H * D) for t in cuda[:3]]
    fused = fastformer_attention_fused(*tok, *cuda[3:5], mask.cuda(), num_heads=H, b_q=cuda[5], b_k=cuda[6])
    assert_rms_close(fused.cpu(), ref.transpose(1, 2).reshape(B, N, H * D), dtype, "fused op")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_layer_on_cuda_matches_eager(dtype):
    torch.manual_seed(0)
    layer = FastformerAttention(256, 16, scoring="full", output_dense=True).cuda().to(dtype)
    x = torch.randn(4, 1000, 256, device="cuda", dtype=dtype, requires_grad=True)
    mask = right_padding_mask([1000, 999, 500, 1], 1000).cuda()
    eager = layer(x, mask)
    compiled = torch.compile(layer)(x, mask)
    assert_rms_close(
        compiled.float().cpu(), eager.float().cpu(), torch.bfloat16 if dtype != torch.float32 else torch.float32
    )
    (g_eager,) = torch.autograd.grad(eager[mask].float().sum(), x)
    (g_comp,) = torch.autograd.grad(compiled[mask].float().sum(), x)
    assert_rms_close(g_comp.float().cpu(), g_eager.float().cpu(), torch.bfloat16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("output_dense", [False, True])
def test_fused_block_on_cuda_matches_the_reference(dtype, output_dense):
    from fastformer.ops import fastformer_block_fused, fastformer_block_reference
    from tests.ops.test_fused_block import NAMES, block_inputs, call

    t = block_inputs(2, 1000, 8, 32, dtype, "full", output_dense, requires_grad=True)
    mask = right_padding_mask([1000, 437], 1000)
    ref_t = {k: None if v is None else v.detach().double().requires_grad_() for k, v in t.items()}
    cuda_t = {k: None if v is None else v.detach().cuda().requires_grad_() for k, v in t.items()}
    fast = call(fastformer_block_fused, cuda_t, mask.cuda(), 8)
    ref = call(fastformer_block_reference, ref_t, mask, 8)
    assert_rms_close(fast.cpu(), ref, dtype, "output")
    grad = torch.randn_like(ref)
    (fast * grad.cuda().to(dtype)).sum().backward()
    (ref * grad).sum().backward()
    for name in NAMES[:-2]:
        if t[name] is not None:
            assert_rms_close(cuda_t[name].grad.cpu(), ref_t[name].grad, dtype, f"grad {name}")
