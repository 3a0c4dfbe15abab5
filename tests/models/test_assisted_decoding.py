"""Assisted decoding (an assistant model, prompt lookup) with a Fastformer decoding state: `FastformerCache.crop`
rolls the running sums back past the draft tokens the model rejects, so the output is greedy decoding's."""

import pytest
import torch

from fastformer.models.fastformer.cache import FastformerCache
from tests.models.test_causal_lm import prompts, small_model
from tests.models.test_seq2seq import make_model, source_batch


@pytest.fixture
def rollbacks(monkeypatch):
    """Every crop that went back further than the length it was asked for ((columns before, columns after))."""
    seen = []
    crop = FastformerCache.crop

    def recording_crop(self, tokens_to_remove):
        before = self.columns_read
        crop(self, tokens_to_remove)
        if self.columns_read < before:
            seen.append((before, self.columns_read))

    monkeypatch.setattr(FastformerCache, "crop", recording_crop)
    return seen


@pytest.mark.parametrize("assistant", ["another model", "the same model", "prompt lookup"])
def test_assisted_decoding_gives_greedys_output(assistant, rollbacks):
    model = small_model()
    drafts = {
        "another model": dict(assistant_model=small_model(seed=1)),  # rejects most drafts: many rollbacks
        "the same model": dict(assistant_model=small_model()),  # accepts every draft
        "prompt lookup": dict(prompt_lookup_num_tokens=3),
    }[assistant]
    ids = prompts(1, 9)
    greedy = model.generate(ids, max_new_tokens=20, do_sample=False)
    assisted = model.generate(ids, max_new_tokens=20, do_sample=False, **drafts)
    assert torch.equal(assisted, greedy)
    assert len(set(greedy[0, 9:].tolist())) > 3  # a sequence that varies, so a wrong state would show
    if assistant != "the same model":
        assert rollbacks  # the test went through the rollback
    if assistant == "prompt lookup":  # each rollback stops where the last round's accepted tokens end: one draft back
        assert max(before - after for before, after in rollbacks) <= 3 + 1


def test_speculative_sampling_runs_and_its_cache_continues():
    model, assistant = small_model(), small_model(seed=1)
    ids = prompts(1, 9)
    torch.manual_seed(0)
    sampled = model.generate(ids, max_new_tokens=12, do_sample=True, assistant_model=assistant)
    assert sampled.shape == (1, 21)
    out = model.generate(
        ids, max_new_tokens=8, do_sample=False, assistant_model=assistant, return_dict_in_generate=True
    )
    continued = model.generate(out.sequences, cache=out.cache, max_new_tokens=6, do_sample=False)
    assert torch.equal(continued, model.generate(ids, max_new_tokens=14, do_sample=False))


def test_crop_rolls_back_to_the_state_of_the_shorter_sequence():
    model = small_model()
    ids = prompts(1, 16)
    with torch.no_grad():
        whole = model(ids).logits
        cache = FastformerCache(model.config.num_hidden_layers)
        cache.activate_past_recording()
        model(ids[:, :6], cache=cache, use_cache=True)
        model(ids[:, 6:11], cache=cache, use_cache=True)
        cache.crop(-3)  # keep 8 columns: the state after 6 (the start of the last forward) is what it can return to
        assert cache.get_seq_length() == 6 and cache.columns_behind() == 2
        assert torch.equal(cache.seen_tokens, torch.tensor([6]))
        # the next call reads columns 6-7 on their own, then the rest: the recorded start is at 8, where it was asked
        rest = model(ids[:, 6:], cache=cache, use_cache=True).logits
        assert cache.get_seq_length() == 16 and cache.columns_behind() == 0
        torch.testing.assert_close(rest, whole[:, 6:])
        cache.crop(-5)  # back to 11: the start of the second part of the last call (8), then 3 behind
        assert cache.get_seq_length() == 8 and cache.columns_behind() == 3
        torch.testing.assert_close(model(ids[:, 8:], cache=cache, use_cache=True).logits, whole[:, 8:])


def test_crop_without_recording_is_refused_and_crop_zero_keeps_the_state():
    model = small_model()
    cache = model(prompts(2, 9), use_cache=True).cache
    cache.crop(0)
    assert cache.get_seq_length() == 9
    with pytest.raises(NotImplementedError, match="cannot be cropped to 8 of its 9 columns"):
        cache.crop(-1)


def test_the_softmax_control_keeps_no_state_and_is_refused_in_one_line():
    model = small_model(attention_type="softmax")
    with pytest.raises(ValueError, match="needs a decoding state to roll back, and this FastformerForCausalLM keeps"):
        model.generate(prompts(1, 9), max_new_tokens=4, do_sample=False, prompt_lookup_num_tokens=3)


def test_the_fastformer_decoder_gives_greedys_output_with_an_assistant(rollbacks):
    model = make_model(decoder_type="fastformer")
    assistant = make_model(decoder_type="fastformer")
    with torch.no_grad():  # another assistant: its weights drawn after the model's
        for p in assistant.parameters():
            p.add_(0.3 * torch.randn_like(p))
    ids, mask = source_batch()
    # no token twice (the untrained model would repeat one): a varied summary, so a wrong state would show
    settings = dict(input_ids=ids[:1], do_sample=False, eos_token_id=None, max_new_tokens=12, no_repeat_ngram_size=1)
    greedy = model.generate(**settings)
    assert torch.equal(model.generate(**settings, assistant_model=assistant), greedy)
    assert torch.equal(model.generate(**settings, prompt_lookup_num_tokens=2), greedy)
    assert len(set(greedy[0].tolist())) == 13 and rollbacks
