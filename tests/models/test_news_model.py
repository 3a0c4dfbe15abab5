"""FastformerForNewsRecommendation: the hierarchical model against a direct computation, padding, empty histories,
both attention types, save / load."""

import pytest
import torch

from fastformer.models.fastformer import FastformerConfig, FastformerForNewsRecommendation

ATTENTION_TYPES = ["fastformer", "softmax"]


def make_model(attention_type="fastformer", **overrides):
    torch.manual_seed(0)
    config = FastformerConfig.from_preset(
        "paper",
        vocab_size=50,
        hidden_size=16,
        num_attention_heads=4,
        intermediate_size=16,
        num_hidden_layers=1,
        max_position_embeddings=12,
        max_history=6,
        attention_type=attention_type,
        hidden_dropout_prob=0.0,
        **overrides,
    )
    return FastformerForNewsRecommendation(config).double().eval()


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = [5, 12, 3, 7, 1, 9, 4]
    ids = torch.zeros(len(lengths), 12, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(1, 50, (n,), generator=g)
    history = torch.tensor([[0, 1, 2], [3, 4, -1], [-1, -1, -1]])
    candidates = torch.tensor([[4, 5, 6], [0, 1, 6], [2, 3, 5]])
    return ids, (ids != 0).long(), history, candidates


@pytest.mark.parametrize("attention_type", ATTENTION_TYPES)
def test_scores_equal_a_direct_computation(attention_type):
    model = make_model(attention_type)
    ids, mask, history, candidates = batch()
    out = model(news_input_ids=ids, news_attention_mask=mask, history_index=history, candidate_index=candidates)
    for b in range(3):
        # each news encoded alone, without padding; the user's history alone, without padding
        news = torch.cat([model.encode_news(ids[i : i + 1, : int(mask[i].sum())]) for i in range(len(ids))])
        h = [int(i) for i in history[b] if i >= 0]
        if h:
            user = model.encode_users(news[h][None], torch.ones(1, len(h), dtype=torch.bool))[0]
        else:
            user = torch.zeros(model.config.hidden_size, dtype=torch.float64)
        expected = news[candidates[b]] @ user
        torch.testing.assert_close(out.logits[b], expected, rtol=1e-10, atol=1e-10)
    assert torch.equal(out.logits[2], torch.zeros(3, dtype=torch.float64))  # empty history: zero user vector


@pytest.mark.parametrize("attention_type", ATTENTION_TYPES)
def test_loss_gradients_and_candidate_mask(attention_type):
    model = make_model(attention_type).train()
    ids, mask, history, candidates = batch()
    labels = torch.tensor([0, 2, 1])
    out = model(
        news_input_ids=ids, news_attention_mask=mask, history_index=history, candidate_index=candidates, labels=labels
    )
    torch.testing.assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits, labels))
    out.loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(torch.isfinite(g).all() for g in grads.values() if g is not None)
    assert grads["fastformer.word_embeddings.weight"].abs().sum() > 0
    assert any(g is not None and g.abs().sum() > 0 for n, g in grads.items() if n.startswith("user_encoder"))
    masked = model(
        news_input_ids=ids,
        news_attention_mask=mask,
        history_index=history,
        candidate_index=candidates,
        candidate_mask=torch.tensor([[True, True, False]] * 3),
    ).logits
    assert (masked[:, 2] == torch.finfo(masked.dtype).min).all()


def test_news_vectors_input_equals_tokens_and_gradcheck():
    model = make_model()
    ids, mask, history, candidates = batch()
    vectors = model.encode_news(ids, mask)
    a = model(news_input_ids=ids, news_attention_mask=mask, history_index=history, candidate_index=candidates)
    b = model(news_vectors=vectors, history_index=history, candidate_index=candidates)
    torch.testing.assert_close(a.logits, b.logits, rtol=0, atol=0)
    vectors = vectors.detach().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: model(news_vectors=v, history_index=history, candidate_index=candidates).logits, (vectors,)
    )
    with pytest.raises(ValueError, match="exactly one"):
        model(news_input_ids=ids, news_vectors=vectors, history_index=history, candidate_index=candidates)


def test_save_and_load(tmp_path):
    model = make_model("softmax", user_num_hidden_layers=2)
    model.save_pretrained(tmp_path)
    loaded = FastformerForNewsRecommendation.from_pretrained(tmp_path).double().eval()
    assert loaded.config.attention_type == "softmax" and loaded.config.user_num_hidden_layers == 2
    ids, mask, history, candidates = batch()
    kwargs = dict(news_input_ids=ids, news_attention_mask=mask, history_index=history, candidate_index=candidates)
    torch.testing.assert_close(loaded(**kwargs).logits, model(**kwargs).logits, rtol=0, atol=0)


def test_popularity_buckets_are_log_spaced_and_capped():
    from fastformer.models.fastformer.modeling_news import popularity_bucket

    clicks = torch.tensor([0, 1, 2, 3, 4, 7, 8, 15, 16, 1000])
    assert popularity_bucket(clicks, 8).tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 7]
    assert popularity_bucket(clicks, 3).max() == 2


def test_popularity_score_is_added_per_candidate_and_learns(tmp_path):
    """PP-Rec's popularity score: logits = user . news + one learned score per click-count bucket, 0 at start."""
    plain, popular = make_model(), make_model(popularity_buckets=4)
    missing, unexpected = popular.load_state_dict(plain.state_dict(), strict=False)
    assert missing == ["popularity.weight"] and not unexpected
    ids, mask, history, candidates = batch()
    kwargs = dict(news_input_ids=ids, news_attention_mask=mask, history_index=history, candidate_index=candidates)
    clicks = torch.tensor([[0, 1, 5], [2, 100, 0], [3, 0, 1]])
    start = popular(**kwargs, candidate_clicks=clicks)
    torch.testing.assert_close(start.logits, plain(**kwargs).logits, rtol=0, atol=0)  # starts as the paper's model
    with torch.no_grad():
        popular.popularity.weight.copy_(torch.tensor([[0.5], [-1.0], [2.0], [3.0]]))
    out = popular(**kwargs, candidate_clicks=clicks)
    expected = torch.tensor([[0.5, -1.0, 2.0], [-1.0, 3.0, 0.5], [2.0, 0.5, -1.0]], dtype=torch.float64)
    torch.testing.assert_close(out.popularity_scores, expected)
    torch.testing.assert_close(out.logits, plain(**kwargs).logits + expected)
    popular.train()(**kwargs, candidate_clicks=clicks, labels=torch.tensor([0, 1, 2])).loss.backward()
    assert popular.popularity.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="pass candidate_clicks"):
        popular(**kwargs)
    with pytest.raises(ValueError, match="no popularity score"):
        plain(**kwargs, candidate_clicks=clicks)
    popular.save_pretrained(tmp_path)
    loaded = FastformerForNewsRecommendation.from_pretrained(tmp_path).double().eval()
    assert loaded.config.popularity_buckets == 4
    torch.testing.assert_close(
        loaded.eval()(**kwargs, candidate_clicks=clicks).logits,
        popular.eval()(**kwargs, candidate_clicks=clicks).logits,
        rtol=0,
        atol=0,
    )
