"""FastformerForCausalLM: cached decoding equals recomputation, generate() in every mode, padding, Auto classes."""

import copy

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.cache_utils import Cache, LinearAttentionLayer

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer import FastformerConfig, FastformerForCausalLM


def small_model(seed=0, **overrides) -> FastformerForCausalLM:
    torch.manual_seed(seed)
    fields = dict(
        vocab_size=61,
        hidden_size=32,
        num_attention_heads=4,
        intermediate_size=64,
        num_hidden_layers=2,
        layer_sharing=False,
        query_value_sharing=False,
        norm_position="pre",
        hidden_dropout_prob=0.0,
        max_position_embeddings=128,
        initializer_range=0.3,  # peaked logits: generated sequences differ from step to step
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=None,
    )
    return FastformerForCausalLM(FastformerConfig.from_preset("paper", **{**fields, **overrides})).eval()


def prompts(batch=3, length=12, seed=1):
    return torch.randint(3, 61, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("overrides", [{}, {"scoring": "full", "layer_sharing": True}, {"interaction": "add"}])
def test_decoding_with_the_state_equals_recomputing(overrides):
    model = small_model(**overrides).double()
    ids = prompts(2, 30)
    full = model(ids).logits
    out = model(ids[:, :11], use_cache=True)
    pieces, cache = [out.logits], out.cache
    for t in range(11, 30):  # one token at a time: the recurrent form
        out = model(ids[:, t : t + 1], cache=cache, use_cache=True)
        pieces.append(out.logits)
        cache = out.cache
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-10, atol=1e-10)
    # several tokens at once after a state (the parallel form continued from the state)
    first = model(ids[:, :7], use_cache=True)
    rest = model(ids[:, 7:], cache=first.cache, use_cache=True)
    torch.testing.assert_close(torch.cat([first.logits, rest.logits], dim=1), full, rtol=1e-10, atol=1e-10)


def test_logits_at_a_position_ignore_later_tokens():
    model = small_model()
    ids = prompts(1, 40)
    changed = ids.clone()
    changed[:, 25:] = torch.randint(3, 61, (1, 15))
    torch.testing.assert_close(model(changed).logits[:, :25], model(ids).logits[:, :25], rtol=0, atol=0)


@pytest.mark.parametrize(
    "mode",
    [dict(do_sample=False), dict(do_sample=True, top_k=20), dict(do_sample=False, num_beams=4, length_penalty=0.8)],
    ids=["greedy", "sample", "beam"],
)
def test_generate_with_the_state_equals_generate_without_cache(mode):
    model = small_model()
    ids = prompts()
    torch.manual_seed(0)
    cached = model.generate(ids, max_new_tokens=15, **mode)
    torch.manual_seed(0)
    recomputed = model.generate(ids, max_new_tokens=15, use_cache=False, **mode)
    assert cached.shape == (3, 27)
    assert torch.equal(cached, recomputed)
    assert len(set(cached[0, 12:].tolist())) > 2  # a real continuation, not one token repeated


def test_left_padded_batch_generates_as_each_prompt_alone():
    model = small_model()
    long, short = prompts(1, 12, seed=2), prompts(1, 5, seed=3)
    batch = torch.cat([long, torch.cat([torch.zeros(1, 7, dtype=torch.long), short], 1)])
    mask = (batch != 0).long()
    together = model.generate(batch, attention_mask=mask, max_new_tokens=10, do_sample=False)
    alone = model.generate(short, max_new_tokens=10, do_sample=False)
    assert torch.equal(together[1, 7:], alone[0])
    assert torch.equal(together[0], model.generate(long, max_new_tokens=10, do_sample=False)[0])


@pytest.mark.parametrize("mode", [dict(do_sample=False), dict(do_sample=True, top_k=20)], ids=["greedy", "sample"])
def test_generation_continues_from_a_returned_cache(mode):
    """transformers' convention: pass the whole sequence back with the cache (or only the new tokens with a mask over
    the whole sequence); the prefix the state has read is not read again. Left-padded batch, so the state's column
    count and real-token count differ."""
    model = small_model()
    long, short = prompts(1, 12, seed=2), prompts(1, 5, seed=3)
    batch = torch.cat([long, torch.cat([torch.zeros(1, 7, dtype=torch.long), short], 1)])
    mask = (batch != 0).long()
    torch.manual_seed(0)
    one_shot = model.generate(batch, attention_mask=mask, max_new_tokens=14, **mode)
    torch.manual_seed(0)
    first = model.generate(batch, attention_mask=mask, max_new_tokens=5, return_dict_in_generate=True, **mode)
    assert isinstance(first.cache, Cache) and all(first.cache.is_linear)
    assert first.cache.get_seq_length() == 12 + 4  # the last generated token is not read yet
    sequences, state = first.sequences, copy.deepcopy(first.cache)
    whole_mask = torch.cat([mask, torch.ones(2, 5, dtype=torch.long)], 1)
    continued = model.generate(sequences, attention_mask=whole_mask, cache=first.cache, max_new_tokens=9, **mode)
    if not mode["do_sample"]:  # (sampling draws differ from the one-shot run once the calls split)
        assert torch.equal(continued, one_shot)
        new_only = model.generate(sequences[:, -1:], attention_mask=whole_mask, cache=state, max_new_tokens=9, **mode)
        assert torch.equal(new_only, one_shot[:, 16:])
    assert len(set(continued[0, 17:].tolist())) > 2


def test_the_cache_is_a_transformers_cache_of_recurrent_state_layers():
    model = small_model()
    cache = model(prompts(2, 9), use_cache=True).cache
    assert isinstance(cache, Cache) and len(cache) == model.config.num_hidden_layers
    assert all(isinstance(layer, LinearAttentionLayer) for layer in cache.layers) and all(cache.is_linear)
    query_lse, query_global, key_lse, key_global = (cache.get_recurrent_state(0, i) for i in range(4))
    heads, size = model.config.num_attention_heads, model.config.hidden_size // model.config.num_attention_heads
    assert query_lse.shape == key_lse.shape == (2, heads) and query_global.shape == key_global.shape == (2, heads, size)
    before = [t.clone() for t in cache.states[1].tensors()]
    seen = cache.seen_tokens.clone()
    cache.reorder_cache(torch.tensor([1, 0]))  # beam search's reordering moves every tensor and the token count
    for moved, original in zip(cache.states[1].tensors(), before, strict=True):
        torch.testing.assert_close(moved, original.flip(0))
    assert torch.equal(cache.seen_tokens, seen.flip(0))
    with pytest.raises(NotImplementedError, match="cannot be cropped"):
        cache.crop(-1)
    # nothing beyond what the cache has read (transformers 5.25 would read the whole sequence again): refused,
    # with or without an attention mask of the input's length
    for mask in ({}, {"attention_mask": torch.ones(2, 9, dtype=torch.long)}):
        with pytest.raises(ValueError, match="whole sequence so far plus at least one new token"):
            model.generate(prompts(2, 9), cache=cache, max_new_tokens=2, **mask)


def test_state_size_is_fixed_whatever_the_context():
    model = small_model(max_position_embeddings=1024)
    sizes = [model(prompts(1, n), use_cache=True).cache.nbytes() for n in (4, 100, 1000)]
    assert sizes[0] == sizes[1] == sizes[2]
    cfg = model.config
    per_layer = 2 * cfg.num_attention_heads * (cfg.hidden_size // cfg.num_attention_heads + 1) * 4
    assert sizes[0] == cfg.num_hidden_layers * per_layer + 8  # + one int64 token count per sequence
    # and the memory behind it: the state is not a view that keeps every position's tensors of the prefill alive
    cache = model(prompts(1, 1000), use_cache=True).cache
    assert sum(t.untyped_storage().nbytes() for state in cache.states for t in state.tensors()) + 8 == sizes[0]


def test_loss_is_shifted_next_token_cross_entropy_ignoring_minus_100():
    model = small_model()
    ids = prompts(2, 9)
    labels = ids.clone()
    labels[1, :4] = -100
    out = model(ids, labels=labels)
    logits = out.logits[:, :-1].reshape(-1, 61)
    target = labels[:, 1:].reshape(-1)
    keep = target != -100
    expected = torch.nn.functional.cross_entropy(logits[keep], target[keep])
    torch.testing.assert_close(out.loss, expected)


def test_save_and_load_with_the_auto_classes(tmp_path):
    model = small_model()
    model.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).causal is True
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, FastformerForCausalLM)
    assert loaded.lm_head.weight.data_ptr() == loaded.fastformer.word_embeddings.weight.data_ptr()  # tied
    ids = prompts()
    torch.testing.assert_close(loaded(ids).logits, model(ids).logits, rtol=0, atol=0)
    assert torch.equal(loaded.generate(ids, max_new_tokens=5), model.generate(ids, max_new_tokens=5))


def test_positions_beyond_the_table_are_a_clear_error():
    model = small_model(max_position_embeddings=16)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(prompts(1, 17))


@pytest.mark.parametrize("attention_type", ["fastformer", "softmax"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_config_says_which_layers_carry_a_decoding_state(attention_type, causal):
    """config.keeps_decoding_state (what the model's use_cache checks and the LM's generate default read) agrees with
    the layers the model builds: only a causal Fastformer carries a state."""
    from fastformer import FastformerModel

    config = small_model().config
    config.causal, config.attention_type = causal, attention_type
    model = FastformerModel(config, add_pooling_layer=False)
    layers = [m for m in model.modules() if hasattr(m, "carries_state")]
    assert layers and all(layer.carries_state == config.keeps_decoding_state for layer in layers)
    assert config.keeps_decoding_state == (causal and attention_type == "fastformer")
