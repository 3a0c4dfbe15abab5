"""Local mixing (`local_mixing=K`, not in the paper): a depthwise convolution over K neighbouring tokens on q, k and v.
Identity at initialisation, padding never leaks into a real token, every implementation path equal, refused where it
cannot work, and a folder without it fine-tunes with it switched on, starting from the same outputs."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from fastformer.layers.attention import FastformerAttention
from fastformer.layers.short_convolution import ShortConvolution, depthwise_over_tokens, short_convolution_reference
from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification, FastformerModel
from fastformer.precision import cpu_multiplies_bf16
from tests.helpers import right_padding_mask


def randomised(module: torch.nn.Module) -> torch.nn.Module:
    torch.manual_seed(3)
    for conv in (m for m in module.modules() if isinstance(m, ShortConvolution)):
        with torch.no_grad():
            conv.weight.normal_()
    return module


def test_short_convolution_equals_the_loop_reference_and_is_identity_at_init():
    torch.manual_seed(0)
    x = torch.randn(3, 8, 6, dtype=torch.float64)
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3, [0] * 2 + [1] * 6], dtype=torch.bool)  # right and left padding
    conv = ShortConvolution(6, 3).double()
    assert torch.equal(conv(x, mask)[mask], x[mask])
    randomised(conv)
    torch.testing.assert_close(conv(x, mask)[mask], short_convolution_reference(x, conv.weight, mask)[mask])
    assert torch.autograd.gradcheck(lambda t: conv(t, mask), (x.clone().requires_grad_(),))
    with pytest.raises(ValueError, match="odd kernel size >= 3"):
        ShortConvolution(6, 4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize(  # (one column takes padding: the centred kernel's; the causal step pads before it)
    "shape, padding",
    [((4, 37, 24), 1), ((4, 37, 24), 0), ((1, 5, 6), 1), ((1, 5, 6), 0), ((3, 1, 8), 1), ((2, 9, 1), 0)],
)
def test_the_channels_last_convolution_equals_conv1d_forward_and_backward(dtype, shape, padding):
    """`depthwise_over_tokens` (conv2d on the tokens-major tensor as it lies) against the obvious conv1d on its
    (B, C, N) transpose: values and gradients (input and weight) to the bit in bfloat16 (what autocast trains in) on a
    CPU with bfloat16 kernels, to rounding in float32 and float64 (another summation order); float64 gradcheck too.
    On a CPU without them (AVX2 only) conv1d's input gradient rounds differently (by up to one bfloat16 step of its
    largest value, 0.0625 at 9.3): there bfloat16 is compared within that step."""
    generator = torch.Generator().manual_seed(sum(shape) + padding)
    x = torch.randn(*shape, generator=generator).to(dtype).requires_grad_()
    weight = torch.randn(shape[-1], 1, 3, generator=generator).to(dtype).requires_grad_()
    ours = depthwise_over_tokens(x, weight, padding)
    obvious = F.conv1d(x.transpose(1, 2), weight, padding=padding, groups=shape[-1]).transpose(1, 2)
    upstream = torch.randn(obvious.shape, generator=generator).to(dtype)
    ours_grads = torch.autograd.grad(ours, (x, weight), upstream)
    obvious_grads = torch.autograd.grad(obvious, (x, weight), upstream)
    for a, b in zip((ours, *ours_grads), (obvious, *obvious_grads), strict=True):
        if dtype == torch.bfloat16 and cpu_multiplies_bf16():
            assert torch.equal(a, b)
        elif dtype == torch.bfloat16:  # within one bfloat16 step of the largest value (sums of 3 rounded otherwise)
            torch.testing.assert_close(a, b, rtol=0, atol=2**-7 * b.abs().max().item())
        else:
            torch.testing.assert_close(a, b)
    if dtype == torch.float64:  # on a few channels: gradcheck's cost grows with the inputs' size
        small = (x[:2, :, :4].detach().requires_grad_(), weight[:4].detach().requires_grad_())
        assert torch.autograd.gradcheck(lambda t, w: depthwise_over_tokens(t, w, padding), small)


def test_padding_never_leaks_into_a_real_token():
    attention = randomised(FastformerAttention(24, 3, query_value_sharing=False, local_mixing=3).double())
    torch.manual_seed(1)
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    mask = right_padding_mask([7, 4], 7)
    padded = attention(x, mask)
    alone = attention(x[1:, :4], None)
    torch.testing.assert_close(padded[1, :4], alone[0])
    x[1, 4:] = 1e6  # whatever the padding holds
    torch.testing.assert_close(attention(x, mask)[1, :4], alone[0])


@pytest.mark.parametrize("sharing", [True, False])
def test_every_path_gives_the_same_values_forward_and_backward(sharing):
    torch.manual_seed(2)
    x = torch.randn(2, 9, 24, dtype=torch.float64, requires_grad=True)
    mask = right_padding_mask([9, 6], 9)
    outputs, grads = [], []
    for path in ("fused", "eager"):
        torch.manual_seed(5)  # the same projections for both
        attention = randomised(
            FastformerAttention(24, 3, query_value_sharing=sharing, local_mixing=5, implementation=path).double()
        )
        out = attention(x, mask)[mask]
        outputs.append(out)
        grads.append(torch.autograd.grad(out.square().sum(), x)[0])
    torch.testing.assert_close(outputs[0], outputs[1])
    torch.testing.assert_close(grads[0], grads[1])
    assert FastformerAttention(24, 3, local_mixing=3).implementation == "fused"  # "auto" leaves the fused block
    with pytest.raises(ValueError, match="implementation 'fused_block' needs local_mixing=0"):
        FastformerAttention(24, 3, local_mixing=3, implementation="fused_block")


def test_refused_where_it_cannot_work():
    config = FastformerConfig(vocab_size=50, hidden_size=16, num_attention_heads=2, local_mixing=3)
    config.attention_type = "softmax"
    with pytest.raises(ValueError, match="the softmax mixer does not take it"):
        FastformerModel(config)


def test_a_folder_without_it_fine_tunes_with_it_from_the_same_outputs(tmp_path):
    from fastformer.engine.init_from import load_encoder

    torch.manual_seed(4)
    fields = dict(vocab_size=50, hidden_size=16, num_attention_heads=2, intermediate_size=16, num_labels=2)
    FastformerForSequenceClassification(FastformerConfig(**fields)).save_pretrained(tmp_path)
    before = FastformerForSequenceClassification.from_pretrained(tmp_path).eval()
    config = FastformerConfig(**fields, local_mixing=3)
    after, fresh = load_encoder(FastformerForSequenceClassification, tmp_path, config)
    assert any("query_conv" in name for name in fresh)
    ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(after.eval()(ids).logits, before(ids).logits)


def test_the_causal_convolution_equals_its_reference_and_reads_in_pieces_as_in_one():
    """Causal: a token mixes itself and the kernel - 1 before it (identity: the last tap); `step` carries the last
    inputs, so a sequence read in pieces (1, 3 and 4 columns) gives what it gives in one piece, padding included."""
    torch.manual_seed(0)
    x = torch.randn(3, 8, 6, dtype=torch.float64)
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3, [0] * 2 + [1] * 6], dtype=torch.bool)
    conv = ShortConvolution(6, 3, causal=True).double()
    assert torch.equal(conv(x, mask)[mask], x[mask])
    randomised(conv)
    whole = conv(x, mask)
    reference = short_convolution_reference(x, conv.weight, mask, causal=True)
    torch.testing.assert_close(whole[mask], reference[mask])
    tail, pieces = None, []
    for start, end in ((0, 1), (1, 4), (4, 8)):
        y, tail = conv.step(x[:, start:end], mask[:, start:end], tail)
        pieces.append(y)
    torch.testing.assert_close(torch.cat(pieces, 1)[mask], whole[mask])
    assert torch.autograd.gradcheck(lambda t: conv(t, mask), (x.clone().requires_grad_(),))


def _causal_lm(local_mixing: int, seed: int = 0):
    from fastformer import FastformerForCausalLM

    torch.manual_seed(seed)
    config = FastformerConfig(
        vocab_size=61, hidden_size=32, num_attention_heads=4, intermediate_size=64, num_hidden_layers=2,
        layer_sharing=False, query_value_sharing=False, norm_position="pre", hidden_dropout_prob=0.0,
        max_position_embeddings=128, initializer_range=0.3, pad_token_id=0, bos_token_id=1, eos_token_id=None,
        causal=True, local_mixing=local_mixing,
    )  # fmt: skip
    return FastformerForCausalLM(config).eval()


@pytest.mark.parametrize("mode", [dict(do_sample=False), dict(do_sample=False, num_beams=3)], ids=["greedy", "beam"])
def test_a_causal_language_model_with_local_mixing_decodes_through_its_state(mode):
    """The decoding state carries the convolutions' last inputs: generate() with the state equals generate() that
    re-reads the whole prefix every step (greedy, beam search: the tails follow their rows), and a left-padded row
    generates what it generates alone. At initialisation the model equals the same one without local mixing."""
    plain, mixed = _causal_lm(0), _causal_lm(3)
    mixed.load_state_dict(plain.state_dict(), strict=False)  # the same weights, identity convolutions
    ids = torch.randint(3, 61, (2, 9), generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(mixed(ids).logits, plain(ids).logits, rtol=0, atol=0)
    randomised(mixed)
    cached = mixed.generate(ids, max_new_tokens=12, **mode)
    recomputed = mixed.generate(ids, max_new_tokens=12, use_cache=False, **mode)
    assert torch.equal(cached, recomputed)
    short = ids[1:, 4:]
    batch = torch.cat([ids[:1], torch.cat([torch.zeros(1, 4, dtype=torch.long), short], 1)])
    together = mixed.generate(batch, attention_mask=(batch != 0).long(), max_new_tokens=8, do_sample=False)
    assert torch.equal(together[1, 4:], mixed.generate(short, max_new_tokens=8, do_sample=False)[0])


def test_a_causal_language_model_with_local_mixing_exports_with_its_state():
    """The exported prefill / decode programs carry the tails as state tensors (`conv_tails_I_D`) and decode what
    generate() does; the registered pytree carries them too."""
    from fastformer.models.fastformer.exportable import export_causal_lm, greedy_decode, state_names, template_cache

    model = randomised(_causal_lm(3))
    names = state_names(template_cache(model))
    assert len(names) == 1 + 2 * (4 + 3) and "conv_tails_2_1" in names  # seen_tokens; 4 pooled + 3 tails a depth
    prompt = torch.randint(3, 61, (2, 7), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(prompt)
    prefill, decode = export_causal_lm(model)
    exported = greedy_decode(prefill.module(), decode.module(), prompt, mask, max_new_tokens=6)
    assert torch.equal(exported, model.generate(prompt, attention_mask=mask, max_new_tokens=6, do_sample=False))
    import torch.utils._pytree as pytree

    from fastformer.models.fastformer.cache import FastformerCache

    out = model(prompt, attention_mask=mask, cache=FastformerCache(2), use_cache=True)
    leaves, spec = pytree.tree_flatten(out.cache)
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert len(leaves) == 1 + 2 * (4 + 3)  # seen_tokens, then per depth the pooled four and three tails
    assert all(
        torch.equal(a, b) for a, b in zip(rebuilt.states[1].conv_tails, out.cache.states[1].conv_tails, strict=True)
    )
