"""Layers: every switch builds, trains and respects padding; parameter counts match the paper's claims."""

import itertools

import pytest
import torch

from fastformer import AttentionPooling, FastformerAttention, FastformerEncoder, build_encoder
from fastformer.parameters import count_parameters, parameter_report
from fastformer.presets import PRESETS
from tests.helpers import right_padding_mask

TINY = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=48,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
)

# every switch of the attention and the encoder, each varied from the paper preset
VARIANTS = {
    "paper": {},
    "official": None,  # the official preset itself
    "no_sharing": dict(query_value_sharing=False, layer_sharing=False),
    "head_sharing": dict(head_sharing=True, scoring="per_head", transform="per_head"),
    "interaction_add": dict(interaction="add"),
    "interaction_concat": dict(interaction="concat"),
    "interaction_concat_head_sharing": dict(interaction="concat", head_sharing=True, transform="per_head"),
    "scoring_full": dict(scoring="full"),
    "transform_per_head": dict(transform="per_head"),
    "output_dense": dict(attention_output_dense=True),
    "pre_ln": dict(norm_position="pre"),
    "no_positions": dict(position_embedding_type="none", embedding_layer_norm=False),
    "relu": dict(hidden_act="relu"),
}


def make(variant: str, **extra) -> FastformerEncoder:
    if VARIANTS[variant] is None:
        return build_encoder("official", **{**TINY, **extra})
    return build_encoder("paper", **{**TINY, **VARIANTS[variant], **extra})


def zero_gradient_by_design(name: str) -> bool:
    # A per-head bias added to every token's score shifts the softmax's input by a constant: its gradient is 0.
    return name.endswith(("query_att.bias", "key_att.bias"))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_trains_one_step_and_every_parameter_gets_a_gradient(variant):
    torch.manual_seed(0)
    encoder = make(variant)
    x = torch.randn(3, 17, 32)
    mask = right_padding_mask([17, 9, 1], 17)
    target = torch.randn(3, 17, 32)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    before = {n: p.detach().clone() for n, p in encoder.named_parameters()}
    out, _ = encoder(x, mask)
    loss = ((out - target)[mask] ** 2).mean()
    loss.backward()
    for name, p in encoder.named_parameters():
        assert p.grad is not None, f"{variant}: {name} got no gradient"
        assert torch.isfinite(p.grad).all(), f"{variant}: {name} has a non-finite gradient"
        if not zero_gradient_by_design(name):
            assert p.grad.abs().sum() > 0, f"{variant}: {name} has an all-zero gradient"
    optimizer.step()
    changed = [n for n, p in encoder.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) >= len(before) - 2 * len(encoder.layers)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_sequence_alone_equals_same_sequence_in_padded_batch(variant):
    torch.manual_seed(1)
    encoder = make(variant).double().eval()
    short = torch.randn(1, 11, 32, dtype=torch.float64)
    batch = torch.cat(
        [
            torch.randn(1, 30, 32, dtype=torch.float64),
            torch.cat([short, 1e3 * torch.randn(1, 19, 32, dtype=torch.float64)], 1),
        ]
    )
    together, _ = encoder(batch, right_padding_mask([30, 11], 30))
    alone, _ = encoder(short)
    torch.testing.assert_close(together[1, :11], alone[0], rtol=1e-10, atol=1e-10)


def test_layer_sharing_reuses_one_layer():
    shared = make("paper", num_hidden_layers=4)
    separate = make("no_sharing", num_hidden_layers=4, query_value_sharing=True)
    assert len(shared.layers) == 1 and len(separate.layers) == 4
    assert (
        count_parameters(separate)["total"] - count_parameters(shared)["total"]
        == 3 * count_parameters(shared.layers[0])["total"]
    )
    hidden = []
    shared.layers[0].register_forward_hook(lambda m, i, o: hidden.append(o))
    shared(torch.randn(2, 5, 32))
    assert len(hidden) == 4  # applied at every depth


@pytest.mark.parametrize("D,H", [(256, 16), (64, 8), (32, 4)])
def test_parameter_counts_match_the_papers_claims(D, H):
    # Biases are counted apart from weights; LayerNorm gains/shifts apart from both.
    paper = parameter_report(build_encoder("paper", hidden_size=D, num_attention_heads=H))[0]["attention"]
    assert paper["weights"] == 3 * D * D + 2 * D  # Q (= V), K, transform; w_q, w_k
    assert paper["biases"] == 3 * D
    official = parameter_report(build_encoder("official", hidden_size=D, num_attention_heads=H))[0]
    assert official["attention"]["weights"] == 4 * D * D + 2 * D * H  # + output dense; Linear(D -> H) scorers
    assert official["attention"]["biases"] == 4 * D + 2 * H
    if (D, H) == (256, 16):  # PAPER.md: 271,904 per attention block of the notebook (with its LayerNorm)
        layer = build_encoder("official").layers[0]
        assert count_parameters(layer.attention)["total"] + count_parameters(layer.attention_norm)["total"] == 271_904


def test_switch_validation():
    with pytest.raises(ValueError, match="head_sharing"):
        FastformerAttention(32, 4, head_sharing=True, transform="full")
    with pytest.raises(ValueError, match="interaction"):
        FastformerAttention(32, 4, interaction="mul")
    with pytest.raises(ValueError, match="divisible"):
        FastformerAttention(30, 4)
    with pytest.raises(ValueError, match="position_embedding_type"):
        build_encoder("paper", position_embedding_type="rotary")
    with pytest.raises(ValueError, match="preset"):
        build_encoder("bert")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        make("paper")(torch.randn(1, 65, 32))


def test_presets_differ_where_the_notebook_departs_from_the_paper():
    assert PRESETS["paper"]["scoring"] == "per_head" and PRESETS["official"]["scoring"] == "full"
    assert PRESETS["paper"]["layer_sharing"] and not PRESETS["official"]["layer_sharing"]
    assert PRESETS["official"]["attention_output_dense"] and not PRESETS["paper"]["attention_output_dense"]


def notebook_pooling(x, scores_fn, mask):
    """The authors' AttentionPooling formula, verbatim in math: exp without max, +1e-8."""
    alpha = torch.exp(scores_fn(x)) * mask.unsqueeze(2).to(x.dtype)
    alpha = alpha / (alpha.sum(1, keepdim=True) + 1e-8)
    return torch.bmm(x.permute(0, 2, 1), alpha).squeeze(-1)


def test_attention_pooling_matches_the_notebook_and_survives_fp16():
    torch.manual_seed(0)
    pool = AttentionPooling(16).double()
    x = torch.randn(3, 9, 16, dtype=torch.float64)
    mask = right_padding_mask([9, 4, 1], 9)
    ours = pool(x, mask)
    theirs = notebook_pooling(x, lambda t: pool.att_fc2(torch.tanh(pool.att_fc1(t))), mask)
    torch.testing.assert_close(ours, theirs, rtol=1e-7, atol=1e-9)
    # scores of a few hundred overflow exp() in fp16 without the max subtraction
    with torch.no_grad():
        pool.att_fc2.weight.mul_(1000.0)
    half = AttentionPooling(16).half()
    half.load_state_dict({k: v.half() for k, v in pool.state_dict().items()})
    out = half(x.half(), mask)
    assert torch.isfinite(out).all()
    notebook_half = notebook_pooling(x.half(), lambda t: half.att_fc2(torch.tanh(half.att_fc1(t))), mask)
    assert not torch.isfinite(notebook_half).all()  # what the max subtraction prevents
    zeros = pool(x, torch.zeros(3, 9, dtype=torch.bool))
    assert torch.equal(zeros, torch.zeros_like(zeros))


@pytest.mark.parametrize("scoring,transform", list(itertools.product(["per_head", "full"], ["per_head", "full"])))
def test_attention_module_uses_the_op_per_its_switches(scoring, transform):
    """FastformerAttention == projections + reference op + transform + query, written out by hand."""
    from fastformer.ops import fastformer_attention_reference

    torch.manual_seed(0)
    attn = FastformerAttention(24, 3, scoring=scoring, transform=transform, query_value_sharing=False).double()
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    mask = right_padding_mask([7, 5], 7)
    split = lambda t: t.view(2, 7, 3, 8).transpose(1, 2)  # noqa: E731
    q, k, v = split(attn.query(x)), split(attn.key(x)), split(attn.value(x))
    (w_q, b_q), (w_k, b_k) = attn.scoring_weights("query"), attn.scoring_weights("key")
    u = fastformer_attention_reference(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k)
    if transform == "full":
        r = attn.transform(u.transpose(1, 2).reshape(2, 7, 24))
    else:
        r = torch.einsum("bhni,hio->bnho", u, attn.transform.weight) + attn.transform.bias
        r = r.reshape(2, 7, 24)
    expected = r + attn.query(x)
    torch.testing.assert_close(attn(x, mask)[mask], expected[mask], rtol=1e-10, atol=1e-10)


def test_the_attention_path_is_one_explicit_validated_setting():
    """ "auto" resolves to the fastest path the configuration allows; every path gives the same values; a path that
    does not fit is an error naming what it needs."""
    from fastformer.layers.attention import FastformerAttention

    assert FastformerAttention(32, 4).implementation == "fused_block"
    assert FastformerAttention(32, 4, query_value_sharing=False).implementation == "fused"
    assert FastformerAttention(32, 4, interaction="add").implementation == "eager"
    assert FastformerAttention(32, 4, causal=True).implementation == "eager"
    torch.manual_seed(0)
    x, mask = torch.randn(2, 7, 32, dtype=torch.float64), torch.arange(7)[None] < torch.tensor([[7], [4]])
    outputs = []
    for path in ("fused_block", "fused", "eager"):
        torch.manual_seed(1)
        layer = FastformerAttention(32, 4, implementation=path).double()
        assert layer.implementation == path
        outputs.append(layer(x, mask)[mask])
    for other in outputs[1:]:
        torch.testing.assert_close(other, outputs[0])
    with pytest.raises(ValueError, match="implementation 'fused_block' needs query_value_sharing=True"):
        FastformerAttention(32, 4, query_value_sharing=False, implementation="fused_block")
    with pytest.raises(ValueError, match="implementation 'fused' needs interaction='product'"):
        FastformerAttention(32, 4, interaction="add", implementation="fused")
    with pytest.raises(ValueError, match="implementation must be one of"):
        FastformerAttention(32, 4, implementation="flash")


def test_without_the_query_residual_every_path_returns_the_transform_alone():
    """query_residual=False (models converted from BERT): the block is transform(u), the same on every path that takes
    it (fused, eager, causal eager), forward and backward in float64; the fused block, which adds q inside its
    kernel, refuses it in one line; "auto" then picks the fused pooling op."""
    from fastformer.layers.attention import FastformerAttention

    torch.manual_seed(0)
    x = torch.randn(2, 7, 24, dtype=torch.float64, requires_grad=True)
    mask = right_padding_mask([7, 5], 7)
    outputs, grads = [], []
    for path in ("fused", "eager"):
        torch.manual_seed(1)
        attn = FastformerAttention(24, 3, query_value_sharing=False, query_residual=False, implementation=path).double()
        with_q = FastformerAttention(24, 3, query_value_sharing=False, implementation=path).double()
        with_q.load_state_dict(attn.state_dict())
        out = attn(x, mask)
        torch.testing.assert_close(out[mask], (with_q(x, mask) - attn.query(x))[mask])
        outputs.append(out[mask])
        grads.append(torch.autograd.grad(out[mask].square().sum(), x)[0])
    torch.testing.assert_close(outputs[0], outputs[1])
    torch.testing.assert_close(grads[0], grads[1])
    causal = FastformerAttention(24, 3, query_value_sharing=False, query_residual=False, causal=True).double()
    causal_q = FastformerAttention(24, 3, query_value_sharing=False, causal=True).double()
    causal_q.load_state_dict(causal.state_dict())
    torch.testing.assert_close(causal(x, mask)[0][mask], (causal_q(x, mask)[0] - causal.query(x))[mask])
    assert FastformerAttention(24, 3, query_residual=False).implementation == "fused"
    with pytest.raises(ValueError, match="implementation 'fused_block' needs query_residual=True"):
        FastformerAttention(24, 3, query_residual=False, implementation="fused_block")
    small = FastformerAttention(8, 2, query_residual=False, query_value_sharing=False).double()
    assert torch.autograd.gradcheck(
        lambda t: small(t, mask[:, :5]), (torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True),)
    )


@pytest.mark.parametrize("interaction", ["product", "add", "concat"])
def test_pooling_weights_recompose_the_layers_output(interaction):
    """alpha and beta (AdditiveAttention) are the weights the layer pools with: summing with them by hand gives the
    layer's own output; each sums to 1 over the real tokens and is 0 at padding."""
    from fastformer.layers.attention import FastformerAttention

    torch.manual_seed(0)
    layer = FastformerAttention(16, 4, interaction=interaction, query_value_sharing=False).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    mask = torch.arange(6)[None] < torch.tensor([[6], [4]])
    alpha, beta = layer.pooling_weights(x, mask)
    assert alpha.shape == beta.shape == (2, 4, 6)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 4, dtype=torch.float64))
    assert (alpha[1, :, 4:] == 0).all() and (beta[1, :, 4:] == 0).all()
    heads = lambda t: t.view(2, 6, 4, 4).transpose(1, 2)  # noqa: E731
    q, k, v = heads(layer.query(x)), heads(layer.key(x)), heads(layer.value(x))
    q_global = torch.einsum("bhn,bhnd->bhd", alpha, q)
    if interaction == "concat":
        p, mix = layer.key_interaction(q_global, k), layer.value_interaction
    else:
        p = q_global[:, :, None] * k if interaction == "product" else q_global[:, :, None] + k
        mix = (lambda g, t: g[:, :, None] * t) if interaction == "product" else (lambda g, t: g[:, :, None] + t)
    k_global = torch.einsum("bhn,bhnd->bhd", beta, p)
    u = mix(k_global, v).masked_fill(~mask[:, None, :, None], 0).transpose(1, 2).reshape(2, 6, 16)
    expected = layer.transform(u) + layer.query(x)
    torch.testing.assert_close(expected[mask], layer(x, mask)[mask])
