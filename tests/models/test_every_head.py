"""One test of every model head, each with a tiny config (in the spirit of transformers' ModelTesterMixin and
flash-linear-attention's tests/models/test_modeling_base.py): save / load round trip, a gradient for every parameter,
a padded batch equal to each sequence alone, cached decoding equal to a full forward (heads that decode), and a dtype
round trip. A new head is added to HEADS with the inputs it takes."""

from __future__ import annotations

import pytest
import torch

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.models.fastformer import (
    FastformerConfig,
    FastformerForCausalLM,
    FastformerForConditionalGeneration,
    FastformerForNewsRecommendation,
    FastformerForSequenceClassification,
    FastformerModel,
)

VOCAB, HIDDEN = 40, 16
BASE = dict(
    vocab_size=VOCAB,
    hidden_size=HIDDEN,
    num_attention_heads=2,
    intermediate_size=32,
    num_hidden_layers=2,
    max_position_embeddings=24,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    pad_token_id=0,
)


def _ids(lengths: list[int], seed: int = 0, left: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (left-padded if `left`) token ids (B, max length) of ids 1.. and their mask."""
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        span = slice(width - n, width) if left else slice(0, n)
        ids[row, span] = torch.randint(1, VOCAB, (n,), generator=g)
        mask[row, span] = 1
    return ids, mask


def encoder_inputs(lengths, seed=0):
    ids, mask = _ids(lengths, seed)
    return dict(input_ids=ids, attention_mask=mask)


def classification_inputs(lengths, seed=0):
    return dict(**encoder_inputs(lengths, seed), labels=torch.arange(len(lengths)) % 3)


def causal_inputs(lengths, seed=0):
    ids, mask = _ids(lengths, seed)
    return dict(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100))


def seq2seq_inputs(lengths, seed=0):
    ids, mask = _ids(lengths, seed)
    targets, target_mask = _ids([max(2, n // 2) for n in lengths], seed + 1)
    return dict(input_ids=ids, attention_mask=mask, labels=targets.masked_fill(target_mask == 0, -100))


def news_inputs(lengths, seed=0):
    """Each row of the batch: a user with two clicked news and two candidates, news of the given lengths. (Two
    clicks: the softmax of the user's pooling over one click has no gradient.)"""
    news_ids, news_mask = _ids(lengths * 4, seed)
    B = len(lengths)
    rows = torch.arange(B)
    return dict(
        news_input_ids=news_ids,
        news_attention_mask=news_mask,
        history_index=torch.stack([rows, rows + B], dim=1),
        candidate_index=torch.stack([rows + 2 * B, rows + 3 * B], dim=1),
        labels=torch.zeros(B, dtype=torch.long),
    )


def _select(inputs: dict, row: int, lengths: list[int]) -> dict:
    """The inputs of batch row `row` alone, unpadded."""
    n = lengths[row]
    if "news_input_ids" in inputs:
        return _news_row(inputs, row, len(lengths))
    out = {}
    for key, value in inputs.items():
        if key == "labels" and value.dim() == 1:
            out[key] = value[row : row + 1]
        elif key == "labels":
            kept = (value[row] != -100).sum()
            out[key] = value[row : row + 1, :kept]
        else:
            out[key] = value[row : row + 1, :n]
    return out


def _news_row(inputs: dict, row: int, B: int) -> dict:
    rows = [row, row + B, row + 2 * B, row + 3 * B]
    n = inputs["news_attention_mask"][rows].sum(-1).max()
    return dict(
        news_input_ids=inputs["news_input_ids"][rows, :n],
        news_attention_mask=inputs["news_attention_mask"][rows, :n],
        history_index=torch.tensor([[0, 1]]),
        candidate_index=torch.tensor([[2, 3]]),
        labels=torch.zeros(1, dtype=torch.long),
    )


# head -> (class, extra config fields, inputs, the output compared row by row, decodes)
HEADS = {
    "base": (FastformerModel, {}, encoder_inputs, "last_hidden_state", False),
    "sequence-classification": (
        FastformerForSequenceClassification,
        dict(num_labels=3),
        classification_inputs,
        "logits",
        False,
    ),
    "sequence-classification-softmax": (
        FastformerForSequenceClassification,
        dict(num_labels=3, attention_type="softmax"),
        classification_inputs,
        "logits",
        False,
    ),
    "causal-lm": (
        FastformerForCausalLM,
        dict(causal=True, norm_position="pre", bos_token_id=1, eos_token_id=2),
        causal_inputs,
        "logits",
        True,
    ),
    "seq2seq": (
        FastformerForConditionalGeneration,
        dict(max_target_positions=16, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
        seq2seq_inputs,
        "logits",
        True,
    ),
    "news": (FastformerForNewsRecommendation, dict(num_hidden_layers=1, max_history=4), news_inputs, "logits", False),
}
LENGTHS = [7, 3, 5]


def build(head: str, seed: int = 0, **overrides):
    cls, extra, make_inputs, output, decodes = HEADS[head]
    torch.manual_seed(seed)
    model = cls(FastformerConfig(**{**BASE, **extra, **overrides})).eval()
    return model, make_inputs, output


def _out(model, inputs, key):
    with torch.no_grad():
        return getattr(model(**inputs, return_dict=True), key)  # labels too: the seq2seq decoder reads them


@pytest.mark.parametrize("head", list(HEADS))
def test_save_and_load_round_trip(head, tmp_path):
    model, make_inputs, key = build(head)
    inputs = make_inputs(LENGTHS)
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path).eval()
    assert torch.equal(_out(model, inputs, key), _out(loaded, inputs, key))
    assert {**loaded.config.to_dict(), "_name_or_path": ""} == {**model.config.to_dict(), "_name_or_path": ""}


@pytest.mark.parametrize("head", list(HEADS))
def test_every_parameter_gets_a_gradient(head):
    model, make_inputs, _ = build(head)
    model.train()
    out = model(**make_inputs(LENGTHS), return_dict=True)
    if head == "base":  # no loss of its own: a random projection of every output (a plain sum of a layer norm's
        # output has no gradient)
        loss = (out.last_hidden_state * torch.randn_like(out.last_hidden_state)).sum()
        loss = (
            loss + (out.pooler_output * torch.randn_like(out.pooler_output)).sum()
            if out.pooler_output is not None
            else loss
        )
    else:
        loss = out.loss
    assert loss is not None and torch.isfinite(loss)
    loss.backward()
    # a bias added to every score of a softmax cancels out: its gradient is zero up to rounding (the pooling's
    # att_fc2.bias, kept for parity with the authors' notebook)
    missing = [
        name
        for name, p in model.named_parameters()
        if p.requires_grad and (p.grad is None or not p.grad.any()) and not name.endswith("att_fc2.bias")
    ]
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad), f"{head}: a parameter is unused"
    assert not missing, f"{head}: no gradient reaches {missing}"


@pytest.mark.parametrize("head", list(HEADS))
def test_a_padded_batch_equals_each_sequence_alone(head):
    model, make_inputs, key = build(head)
    inputs = make_inputs(LENGTHS)
    batched = _out(model, inputs, key).double()
    for row in range(len(LENGTHS)):
        alone = _out(model, _select(inputs, row, LENGTHS), key).double()[0]
        mine = batched[row]
        if key == "last_hidden_state" or (head == "causal-lm"):
            mine = mine[: LENGTHS[row]]  # real tokens only
        elif head == "seq2seq":
            mine = mine[: alone.shape[0]]
        torch.testing.assert_close(mine, alone, rtol=1e-4, atol=1e-5, msg=f"{head}: row {row}")


@pytest.mark.parametrize("head", [h for h, spec in HEADS.items() if spec[4]])
def test_cached_decoding_equals_a_full_forward(head):
    model, make_inputs, _ = build(head)
    ids, mask = _ids([6, 4], seed=3, left=True)  # generation pads on the left
    settings = dict(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        cached = model.generate(**settings, use_cache=True)
        full = model.generate(**settings, use_cache=False)
    assert torch.equal(cached, full)


@pytest.mark.parametrize("head", list(HEADS))
def test_dtype_round_trip(head, tmp_path):
    """float64 agrees with float32; a bfloat16 model saves and loads as bfloat16 with the same outputs."""
    model, make_inputs, key = build(head)
    inputs = make_inputs(LENGTHS)
    single = _out(model, inputs, key)
    double = _out(model.double(), inputs, key)
    torch.testing.assert_close(double.float(), single, rtol=1e-4, atol=1e-5)
    half = model.to(torch.bfloat16)
    half.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path, dtype=torch.bfloat16).eval()
    assert all(p.dtype == torch.bfloat16 for p in loaded.parameters())
    assert torch.equal(_out(half, inputs, key), _out(loaded, inputs, key))


@pytest.mark.parametrize("head", list(HEADS))
def test_building_a_head_leaves_the_config_it_was_given_unchanged(head):
    cls, extra, *_ = HEADS[head]
    config = FastformerConfig(**{**BASE, **extra})
    before = config.to_dict()
    cls(config)
    assert config.to_dict() == before
    # a causal LM's config, given to the bare model afterwards, does not make it causal
    plain = FastformerConfig(**BASE)
    FastformerForCausalLM(plain)
    assert not plain.causal and not FastformerModel(plain).config.causal


def test_decoder_sizes_resolve_to_numbers():
    config = FastformerConfig(**BASE)
    assert (config.decoder_attention_heads, config.decoder_ffn_dim) == (BASE["num_attention_heads"], 32)
    decoder = config.get_text_config(decoder=True)
    assert isinstance(decoder.decoder_attention_heads, int) and isinstance(decoder.decoder_ffn_dim, int)
    assert FastformerConfig(**BASE, decoder_attention_heads=4).decoder_attention_heads == 4


@pytest.mark.parametrize("head", ["base", "sequence-classification"])
def test_output_attentions_gives_each_layers_alpha_and_beta(head):
    model, make_inputs, _ = build(head)
    inputs = {k: v for k, v in make_inputs(LENGTHS).items() if k != "labels"}
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
        plain = model(**inputs)
    weights = out.additive_attentions
    assert plain.additive_attentions is None and len(weights) == BASE["num_hidden_layers"]
    for alpha, beta in weights:
        assert alpha.shape == beta.shape == (3, BASE["num_attention_heads"], max(LENGTHS))
        torch.testing.assert_close(alpha.sum(-1), torch.ones_like(alpha.sum(-1)))
        assert (alpha[1, :, LENGTHS[1] :] == 0).all()  # padding gets no weight
    with pytest.raises(ValueError, match="head_mask is not supported"):
        model(**inputs, head_mask=torch.ones(2, 2))


@pytest.mark.parametrize("head", list(HEADS))
def test_hidden_states_from_every_head(head):
    model, make_inputs, _ = build(head)
    with torch.no_grad():
        out = model(**make_inputs(LENGTHS), output_hidden_states=True, return_dict=True)
    layers = BASE["num_hidden_layers"]
    if head == "news":
        assert len(out.news_hidden_states) == model.config.num_hidden_layers + 1
        assert len(out.user_hidden_states) == model.config.user_num_hidden_layers + 1
    elif head == "seq2seq":
        assert len(out.encoder_hidden_states) == layers + 1
        assert len(out.decoder_hidden_states) == model.config.decoder_layers + 1
        assert out.decoder_hidden_states[-1].shape[-1] == HIDDEN
    else:
        assert len(out.hidden_states) == layers + 1 and out.hidden_states[0].shape[-1] == HIDDEN


DECODINGS = {"greedy": {}, "sample": dict(do_sample=True), "beam": dict(num_beams=3)}
DECODERS = {
    "lm": ("causal-lm", {}),
    "seq2seq": ("seq2seq", {}),
    "seq2seq-ff": ("seq2seq", dict(decoder_type="fastformer")),
}


@pytest.mark.parametrize("decoding", list(DECODINGS))
@pytest.mark.parametrize("decoder", list(DECODERS))
def test_generate_returns_dict_outputs_with_scores_and_hidden_states(decoder, decoding):
    head, extra = DECODERS[decoder]
    model, _, _ = build(head, **extra)
    ids, mask = _ids([6, 4], seed=3, left=head == "causal-lm")
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=3,
            pad_token_id=0,
            return_dict_in_generate=True,
            output_scores=True,
            output_hidden_states=True,
            **DECODINGS[decoding],
        )
    assert len(out.scores) == 3 and out.scores[0].shape[-1] == VOCAB
    hidden = out.decoder_hidden_states if head == "seq2seq" else out.hidden_states
    assert hidden is not None and len(hidden) == 3


@pytest.mark.parametrize("head", ["causal-lm", "seq2seq"])
def test_forward_honours_the_configs_use_cache(head):
    for use_cache in (True, False):
        model, make_inputs, _ = build(head, use_cache=use_cache)
        inputs = {k: v for k, v in make_inputs(LENGTHS).items() if head == "seq2seq" or k != "labels"}
        if head == "seq2seq":  # decoder inputs without labels (labels turn the cache off: training)
            inputs["decoder_input_ids"] = model.prepare_decoder_input_ids_from_labels(inputs.pop("labels").clamp_min(0))
        with torch.no_grad():
            out = model(**inputs, return_dict=True)
        assert (out.cache is not None) == use_cache


@pytest.mark.parametrize("decoder", ["seq2seq", "seq2seq-ff"])
def test_seq2seq_takes_embeddings_and_assisted_decoding_gives_greedys_output(decoder):
    head, extra = DECODERS[decoder]
    model, _, _ = build(head, **extra)
    ids, mask = _ids([6, 4], seed=5)
    targets = torch.tensor([[1, 7, 8], [1, 9, 3]])
    embed = model.get_input_embeddings()
    with torch.no_grad():
        by_ids = model(input_ids=ids, attention_mask=mask, decoder_input_ids=targets).logits
        by_embeds = model(inputs_embeds=embed(ids), attention_mask=mask, decoder_inputs_embeds=embed(targets)).logits
    torch.testing.assert_close(by_embeds, by_ids)
    settings = dict(input_ids=ids[:1], max_new_tokens=4, do_sample=False)
    assistant, _, _ = build(head, seed=1, **extra)
    # the Transformer decoder crops its key/value cache; the Fastformer decoder rolls its state back
    # (tests/models/test_assisted_decoding.py)
    with torch.no_grad():
        assert torch.equal(model.generate(**settings, assistant_model=assistant), model.generate(**settings))


@pytest.mark.parametrize("head", ["base", "sequence-classification"])
def test_position_ids_are_accepted_and_used(head):
    model, make_inputs, key = build(head)
    inputs = {k: v for k, v in make_inputs(LENGTHS).items() if k != "labels"}
    N = inputs["input_ids"].shape[1]
    with torch.no_grad():
        default = getattr(model(**inputs), key)
        explicit = getattr(model(**inputs, position_ids=torch.arange(N)[None].expand(3, N)), key)
        shifted = getattr(model(**inputs, position_ids=torch.arange(N)[None].expand(3, N) + 2), key)
    torch.testing.assert_close(explicit, default)
    assert not torch.allclose(shifted, default)


def test_the_seq2seq_encoders_additive_attentions():
    model, make_inputs, _ = build("seq2seq")
    with torch.no_grad():
        out = model(**make_inputs(LENGTHS), output_attentions=True)
    assert len(out.encoder_additive_attentions) == BASE["num_hidden_layers"]
    alpha, beta = out.encoder_additive_attentions[0]
    assert alpha.shape == beta.shape == (3, BASE["num_attention_heads"], max(LENGTHS))


@pytest.mark.parametrize("head", list(HEADS))
def test_return_dict_false_is_the_dicts_tuple(head):
    """transformers' convention: return_dict=False gives the output's fields in order, None left out (the seq2seq
    head used to put a None cache in and leave the hidden states out)."""

    def flat(value):
        if isinstance(value, torch.Tensor):
            return [value]
        if isinstance(value, (tuple, list)):
            return [t for v in value for t in flat(v)]
        return [value]

    model, make_inputs, _ = build(head)
    inputs = make_inputs(LENGTHS)
    for options in ({}, {"output_hidden_states": True}):
        with torch.no_grad():
            as_dict = model(**inputs, **options, return_dict=True)
            as_tuple = model(**inputs, **options, return_dict=False)
        assert isinstance(as_tuple, tuple) and len(as_tuple) == len(as_dict.to_tuple())
        for a, b in zip(flat(as_tuple), flat(as_dict.to_tuple()), strict=True):
            assert torch.equal(a, b) if isinstance(a, torch.Tensor) else type(a) is type(b)
