"""FastformerForConditionalGeneration: loss, padding, causality, cached decoding, generate(), save / load."""

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

from fastformer.models.fastformer import FastformerConfig, FastformerForConditionalGeneration

ATTENTION_TYPES = ["fastformer", "softmax"]


DECODER_TYPES = ["transformer", "fastformer"]


def make_model(attention_type="fastformer", decoder_type="transformer"):
    torch.manual_seed(0)
    config = FastformerConfig.from_preset(
        "paper",
        vocab_size=60,
        hidden_size=32,
        num_attention_heads=4,
        intermediate_size=64,
        num_hidden_layers=2,
        max_position_embeddings=40,
        max_target_positions=16,
        decoder_layers=2,
        hidden_dropout_prob=0.0,
        bos_token_id=2,
        eos_token_id=3,
        attention_type=attention_type,
        decoder_type=decoder_type,
    )
    return FastformerForConditionalGeneration(config).double().eval()


def source_batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (3, 30), generator=g)
    ids[1, 21:] = 0
    ids[2, 9:] = 0
    return ids, (ids != 0).long()


@pytest.mark.parametrize("decoder_type", DECODER_TYPES)
@pytest.mark.parametrize("attention_type", ATTENTION_TYPES)
def test_loss_ignores_padding_labels_and_padding_source(attention_type, decoder_type):
    model = make_model(attention_type, decoder_type)
    ids, mask = source_batch()
    labels = torch.randint(5, 60, (3, 6))
    labels[2, 4:] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    keep = labels != -100
    expected = torch.nn.functional.cross_entropy(out.logits[keep], labels[keep])
    torch.testing.assert_close(out.loss, expected)
    # the third document alone, unpadded, gives the same logits
    alone = model(input_ids=ids[2:, :9], labels=labels[2:])
    torch.testing.assert_close(alone.logits, out.logits[2:], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("decoder_type", DECODER_TYPES)
def test_decoder_is_causal_and_cached_decoding_equals_one_pass(decoder_type):
    model = make_model(decoder_type=decoder_type)
    ids, mask = source_batch()
    decoder_ids = torch.randint(5, 60, (3, 7))
    full = model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids).logits
    changed = decoder_ids.clone()
    changed[:, 4:] = 7
    partial = model(input_ids=ids, attention_mask=mask, decoder_input_ids=changed).logits
    torch.testing.assert_close(partial[:, :4], full[:, :4], rtol=0, atol=0)  # the future never changes the past
    encoder_outputs = model.get_encoder()(ids, mask, return_dict=True)
    cache, steps = None, []
    for t in range(decoder_ids.shape[1]):
        out = model(
            encoder_outputs=encoder_outputs,
            attention_mask=mask,
            decoder_input_ids=decoder_ids[:, t : t + 1],
            cache=cache,
            use_cache=True,
        )
        cache = out.cache
        steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("attention_type", "decoder_type"),
    [("fastformer", "transformer"), ("softmax", "transformer"), ("fastformer", "fastformer")],
)
def test_generate_greedy_and_beam_with_and_without_cache(attention_type, decoder_type):
    model = make_model(attention_type, decoder_type)
    ids, mask = source_batch()
    for settings in (dict(num_beams=1), dict(num_beams=4, length_penalty=2.0, no_repeat_ngram_size=2)):
        cached = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False, **settings)
        plain = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False, use_cache=False, **settings
        )
        assert torch.equal(cached, plain)
        assert (cached[:, 0] == model.config.decoder_start_token_id).all()
    # the last document alone generates what it generates in the padded batch
    alone = model.generate(input_ids=ids[2:, :9], max_new_tokens=8, num_beams=4)
    batch = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, num_beams=4)
    assert torch.equal(alone[0], batch[2][: alone.shape[1]])


@pytest.mark.parametrize("decoder_type", DECODER_TYPES)
def test_generation_continues_from_a_returned_cache(decoder_type):
    """The summary so far passed back with the returned cache gives what one call gives: neither decoder reads the
    prefix twice (transformers itself feeds the whole prefix again to a key/value cache without
    decoder_attention_mask, and to any recurrent state)."""
    model = make_model(decoder_type=decoder_type)
    ids, mask = source_batch()
    # no token twice (the untrained model would repeat one), which the processor checks over the whole summary
    settings = dict(input_ids=ids, attention_mask=mask, do_sample=False, eos_token_id=None, no_repeat_ngram_size=1)
    one_shot = model.generate(**settings, max_new_tokens=10)
    first = model.generate(**settings, max_new_tokens=4, return_dict_in_generate=True)
    continued = model.generate(**settings, decoder_input_ids=first.sequences, cache=first.cache, max_new_tokens=6)
    assert torch.equal(continued, one_shot)
    assert len(set(one_shot[0].tolist())) == 11


def test_fastformer_decoder_state_does_not_grow():
    model = make_model(decoder_type="fastformer")
    ids, mask = source_batch()
    encoder_outputs = model.get_encoder()(ids, mask, return_dict=True)
    cache, sizes = None, []
    for t in range(12):
        out = model(
            encoder_outputs=encoder_outputs,
            attention_mask=mask,
            decoder_input_ids=torch.full((3, 1), 5 + t),
            cache=cache,
            use_cache=True,
        )
        cache = out.cache
        sizes.append(cache.nbytes())
    assert len(set(sizes[1:])) == 1  # fixed-size self-attention state (the source's keys / values are apart)


def test_no_repeat_ngram_blocks_repeats():
    model = make_model()
    ids, mask = source_batch()
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=15, num_beams=3, no_repeat_ngram_size=2)
    for row in out.tolist():
        bigrams = list(zip(row, row[1:], strict=False))
        assert len(bigrams) == len(set(bigrams))


@pytest.mark.parametrize("decoder_type", DECODER_TYPES)
def test_save_pretrained_and_auto_class(tmp_path, decoder_type):
    model = make_model("softmax", decoder_type)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).double().eval()
    assert type(loaded) is FastformerForConditionalGeneration and loaded.config.attention_type == "softmax"
    assert type(loaded.decoder) is type(model.decoder) and loaded.config.decoder_type == decoder_type
    assert loaded.lm_head.weight is loaded.fastformer.word_embeddings.weight
    if decoder_type == "transformer":
        assert loaded.decoder.embed_tokens.weight is loaded.fastformer.word_embeddings.weight  # one parameter
    ids, mask = source_batch()
    decoder_ids = torch.randint(5, 60, (3, 5))
    kwargs = dict(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids)
    torch.testing.assert_close(loaded(**kwargs).logits, model(**kwargs).logits, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("decoder_type", ["transformer", "fastformer"])
def test_an_untied_output_layer_is_saved_and_loaded(decoder_type, tmp_path):
    """With tie_word_embeddings=False the output layer is a weight of its own: it must survive save / load (it was
    left out of the file, and reloaded at random)."""
    from fastformer.models.fastformer import FastformerConfig, FastformerForConditionalGeneration

    torch.manual_seed(0)
    config = FastformerConfig(
        vocab_size=40,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=16,
        decoder_layers=1,
        max_target_positions=16,
        bos_token_id=1,
        eos_token_id=2,
        decoder_type=decoder_type,
        tie_word_embeddings=False,
    )
    model = FastformerForConditionalGeneration(config).eval()
    assert model.lm_head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    model.save_pretrained(tmp_path)
    loaded = FastformerForConditionalGeneration.from_pretrained(tmp_path).eval()
    ids, labels = torch.randint(3, 40, (2, 7)), torch.randint(3, 40, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(input_ids=ids, labels=labels).logits, model(input_ids=ids, labels=labels).logits
        )
    torch.testing.assert_close(loaded.lm_head.weight, model.lm_head.weight)


def test_a_checkpoint_without_the_shared_embeddings_reports_them_missing(tmp_path):
    """The decoder's table is tied to the word embeddings as transformers declares tied keys (not a module alias that
    hid it): saved once, re-tied on load, and reported missing when the checkpoint lacks it."""
    from safetensors.torch import load_file, save_file

    from fastformer.models.fastformer import FastformerConfig, FastformerForConditionalGeneration

    config = FastformerConfig(
        vocab_size=40,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=16,
        decoder_layers=1,
        max_target_positions=16,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = FastformerForConditionalGeneration(config)
    shared = model.fastformer.word_embeddings.weight
    assert model.decoder.embed_tokens.weight is shared and model.lm_head.weight is shared
    model.save_pretrained(tmp_path)
    saved = load_file(tmp_path / "model.safetensors")
    assert "fastformer.word_embeddings.weight" in saved and "decoder.embed_tokens.weight" not in saved
    reloaded = FastformerForConditionalGeneration.from_pretrained(tmp_path)
    assert reloaded.decoder.embed_tokens.weight is reloaded.fastformer.word_embeddings.weight
    del saved["fastformer.word_embeddings.weight"]
    save_file(saved, tmp_path / "model.safetensors", metadata={"format": "pt"})
    _, info = FastformerForConditionalGeneration.from_pretrained(tmp_path, output_loading_info=True)
    assert "fastformer.word_embeddings.weight" in info["missing_keys"]


def test_the_transformer_decoder_takes_the_attention_implementation_asked_for(tmp_path):
    """BART's decoder has eager and SDPA attention; the one asked for (from_pretrained's attn_implementation) is the
    one it runs, SDPA by default, and the two give the same outputs."""
    model = make_model()
    assert model.decoder.config._attn_implementation == "sdpa"
    model.save_pretrained(tmp_path)
    eager = FastformerForConditionalGeneration.from_pretrained(tmp_path, attn_implementation="eager").double().eval()
    assert eager.decoder.config._attn_implementation == "eager"
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    inputs = dict(input_ids=ids, attention_mask=(ids != 0).long(), decoder_input_ids=torch.tensor([[2, 5], [2, 9]]))
    torch.testing.assert_close(eager(**inputs).logits, model(**inputs).logits)


def test_the_summarizer_with_local_mixing_exports_its_decoding_pair():
    """With local mixing the decoder's state carries the convolutions' tails too: the exported prefill / decode
    programs summarize what generate() does (greedy, a padded batch)."""
    from fastformer.models.fastformer.exportable import export_summarizer, greedy_summarize

    torch.manual_seed(0)
    config = make_model(decoder_type="fastformer").config
    config.local_mixing = 3
    model = FastformerForConditionalGeneration(config).eval()
    for name, p in model.named_parameters():  # off the identity start, so the tails matter
        if name.endswith("_conv.weight"):
            p.data.normal_(0, 0.3)
    ids = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 0, 0]])
    mask = (ids != 0).long()
    prefill, decode = export_summarizer(model)
    got = greedy_summarize(prefill.module(), decode.module(), ids, mask, 5, config.decoder_start_token_id)
    settings = dict(max_new_tokens=5, num_beams=1, do_sample=False, eos_token_id=None, no_repeat_ngram_size=0)
    assert torch.equal(got, model.generate(input_ids=ids, attention_mask=mask, min_length=0, **settings))
