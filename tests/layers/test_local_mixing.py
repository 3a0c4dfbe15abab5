"""Local mixing (`local_mixing=K`, not in the paper): a depthwise convolution over K neighbouring tokens on q, k and v.
Identity at initialisation, padding never leaks into a real token, every implementation path equal, refused where it
cannot work, and a folder without it fine-tunes with it switched on, starting from the same outputs."""

from __future__ import annotations

import pytest
import torch

from fastformer.layers.attention import FastformerAttention
from fastformer.layers.short_convolution import ShortConvolution, short_convolution_reference
from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification, FastformerModel
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
    with pytest.raises(ValueError, match="local_mixing is for bidirectional layers"):
        FastformerAttention(24, 3, local_mixing=3, causal=True)
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
