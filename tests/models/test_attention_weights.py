"""The weights `output_attentions=True` returns (issue "see what the model reads"): each layer's alpha and beta equal
the slow reference's (`ops.naive.pooling_weights_reference`), bidirectional and causal; the pooling heads' weights
recompose their pooled vectors; every row is 0 at padding and sums to 1; and a text's weights do not change when it
is padded in a batch."""

from __future__ import annotations

import math

import pytest
import torch

from fastformer.layers.attention import FastformerAttention
from fastformer.models.fastformer import (
    FastformerConfig,
    FastformerForCausalLM,
    FastformerForNewsRecommendation,
    FastformerForSequenceClassification,
)
from fastformer.ops.naive import pooling_weights_reference

BASE = dict(
    vocab_size=40,
    hidden_size=16,
    num_attention_heads=2,
    intermediate_size=32,
    num_hidden_layers=2,
    max_position_embeddings=24,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    pad_token_id=0,
)


def _reference(layer: FastformerAttention, x: torch.Tensor, mask: torch.Tensor, steps=None):
    B, N, _ = x.shape
    heads = lambda t: t.view(B, N, layer.num_heads, layer.head_size).transpose(1, 2)  # noqa: E731
    (w_q, b_q), (w_k, b_k) = layer.scoring_weights("query"), layer.scoring_weights("key")
    return pooling_weights_reference(
        heads(layer.query(x)),
        heads(layer.key(x)),
        w_q,
        w_k,
        mask,
        b_q=b_q,
        b_k=b_k,
        scale=1 / math.sqrt(layer.head_size),
        interaction=layer.interaction,
        steps=steps,
    )


@pytest.mark.parametrize("interaction", ["product", "add"])
@pytest.mark.parametrize("scoring", ["per_head", "full"])
def test_layer_weights_equal_the_reference(interaction, scoring):
    torch.manual_seed(0)
    layer = FastformerAttention(16, 4, interaction=interaction, scoring=scoring, bias=True).double()
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    mask = torch.arange(7)[None] < torch.tensor([[7], [4], [1]])
    with torch.no_grad():
        alpha, beta = layer.pooling_weights(x, mask)
        ref_alpha, ref_beta = _reference(layer, x, mask)
    torch.testing.assert_close(alpha, ref_alpha)
    torch.testing.assert_close(beta, ref_beta)


@pytest.mark.parametrize("interaction", ["product", "add"])
def test_causal_layer_weights_of_a_step_equal_the_reference(interaction):
    torch.manual_seed(1)
    layer = FastformerAttention(16, 4, interaction=interaction, causal=True).double()
    x = torch.randn(3, 9, 16, dtype=torch.float64)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, :3] = False  # left padding
    mask[2, 6:] = False  # right padding
    with torch.no_grad():
        for steps in ([8, 8, 5], [0, 4, 2], [3, 3, 3]):
            alpha, beta = layer.pooling_weights(x, mask, torch.tensor(steps))
            ref_alpha, ref_beta = _reference(layer, x, mask, steps)
            torch.testing.assert_close(alpha, ref_alpha)
            torch.testing.assert_close(beta, ref_beta)
        # by default: each row's last real token
        default = layer.pooling_weights(x, mask)
        ref = _reference(layer, x, mask, [8, 8, 5])
    torch.testing.assert_close(default.query, ref[0])
    torch.testing.assert_close(default.key, ref[1])
    assert (default.query[1, :, :3] == 0).all() and (default.key[2, :, 6:] == 0).all()


def _classifier():
    torch.manual_seed(0)
    return FastformerForSequenceClassification(FastformerConfig(**BASE, num_labels=3)).eval()


def test_classifier_pooling_weights_recompose_its_pooled_vector():
    model = _classifier()
    ids = torch.randint(1, 40, (2, 6))
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    with torch.no_grad():
        out = model.fastformer(ids, mask, output_attentions=True, return_dict=True)
        logits = model(ids, mask, output_attentions=True).pooling_attentions
    weights = out.pooling_attentions  # (B, N)
    assert weights.shape == (2, 6) and (weights[1, 4:] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))
    torch.testing.assert_close(torch.einsum("bn,bnd->bd", weights, out.last_hidden_state), out.pooler_output)
    torch.testing.assert_close(logits, weights)  # the classifier returns the same weights
    assert model(ids, mask).pooling_attentions is None  # only when asked


def test_weights_do_not_change_when_a_text_is_padded_in_a_batch():
    model = _classifier()
    short, long_ = torch.randint(1, 40, (1, 4)), torch.randint(1, 40, (1, 9))
    batch = torch.zeros(2, 9, dtype=torch.long)
    batch[0, :4], batch[1] = short[0], long_[0]
    with torch.no_grad():
        alone = model(short, output_attentions=True)
        padded = model(batch, (batch != 0).long(), output_attentions=True)
    torch.testing.assert_close(padded.pooling_attentions[0, :4], alone.pooling_attentions[0])
    assert (padded.pooling_attentions[0, 4:] == 0).all()
    for (a, b), (pa, pb) in zip(alone.additive_attentions, padded.additive_attentions, strict=True):
        torch.testing.assert_close(pa[0, :, :4], a[0])
        torch.testing.assert_close(pb[0, :, :4], b[0])
        assert (pa[0, :, 4:] == 0).all() and (pb[0, :, 4:] == 0).all()


def test_causal_lm_returns_the_prefix_weights_of_the_step_asked_for():
    torch.manual_seed(0)
    model = FastformerForCausalLM(FastformerConfig(**BASE)).eval()
    ids = torch.randint(1, 40, (1, 7))
    left_padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)
    with torch.no_grad():
        last = model(ids, output_attentions=True).additive_attentions
        padded = model(left_padded, (left_padded != 0).long(), output_attentions=True).additive_attentions
        prefix = model(ids[:, :4], output_attentions=True).additive_attentions
        step3 = model(ids, output_attentions=True, attention_step=3).additive_attentions
        step_negative = model(ids, output_attentions=True, attention_step=-4).additive_attentions
    assert len(last) == BASE["num_hidden_layers"]
    for depth in range(BASE["num_hidden_layers"]):
        for which in range(2):
            torch.testing.assert_close(padded[depth][which][..., 3:], last[depth][which])  # left padding: same
            assert (padded[depth][which][..., :3] == 0).all()
            # the weights of step 3 are those of the 4-token prefix read alone (a causal model cannot see ahead)
            torch.testing.assert_close(step3[depth][which][..., :4], prefix[depth][which])
            assert (step3[depth][which][..., 4:] == 0).all()
            torch.testing.assert_close(step_negative[depth][which], step3[depth][which])
    with pytest.raises(ValueError, match="outside the sequence"):
        model(ids, output_attentions=True, attention_step=7)
    with torch.no_grad():
        cached = model(ids, use_cache=True).cache
    with pytest.raises(ValueError, match="whole prefix"):
        model(ids[:, :1], cache=cached, output_attentions=True)


def test_news_weights_explain_each_candidates_score_exactly():
    torch.manual_seed(0)
    model = FastformerForNewsRecommendation(FastformerConfig(**BASE, user_num_hidden_layers=1, max_history=4)).eval()
    news = torch.randint(1, 40, (5, 6))
    news_mask = torch.ones(5, 6, dtype=torch.long)
    news_mask[2, 3:] = 0
    news = news * news_mask
    history = torch.tensor([[0, 1, 2, -1]])
    candidates = torch.tensor([[3, 4]])
    with torch.no_grad():
        out = model(news, news_mask, history, candidates, output_attentions=True, return_dict=True)
    assert out.news_pooling_attentions.shape == (5, 6) and (out.news_pooling_attentions[2, 3:] == 0).all()
    torch.testing.assert_close(out.news_pooling_attentions.sum(-1), torch.ones(5))
    assert len(out.news_additive_attentions) == BASE["num_hidden_layers"]
    assert len(out.user_additive_attentions) == 1 and out.user_additive_attentions[0].query.shape == (1, 2, 4)
    clicks = out.user_pooling_attentions  # (B, H): each clicked news' weight in the user vector
    assert clicks[0, 3] == 0 and torch.isclose(clicks.sum(), torch.tensor(1.0))
    # each clicked news' share of each candidate's score: w_i (state_i . candidate); the shares sum to the score
    shares = torch.einsum("bh,bhd,bcd->bch", clicks, out.user_news_states, out.news_vectors[candidates])
    torch.testing.assert_close(shares.sum(-1), out.logits)
