"""FastformerForMaskedLM: the loss on the masked positions only equals the full-logits reference (values and
gradients), the output layer is tied, the Auto class and the fill-mask pipeline work on a saved folder, and a
classifier starts from its encoder."""

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, pipeline

from fastformer.data.tokenizer import train_tokenizer
from fastformer.models.fastformer import FastformerConfig, FastformerForMaskedLM, FastformerForSequenceClassification
from fastformer.models.fastformer.modeling_masked_lm import masked_lm_loss_reference


def tiny_config(**overrides):
    fields = dict(
        vocab_size=60,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
    )
    return FastformerConfig.from_preset("paper", **{**fields, **overrides})


@pytest.mark.parametrize("attention_type", ["fastformer", "softmax"])
def test_masked_positions_loss_equals_the_full_logits_reference(attention_type):
    torch.manual_seed(0)
    model = FastformerForMaskedLM(tiny_config(attention_type=attention_type)).double()
    ids = torch.randint(5, 60, (3, 11))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0  # a padded row
    labels = torch.full_like(ids, -100)
    labels[0, [1, 4]] = ids[0, [1, 4]]
    labels[1, 3] = 9
    labels[2, 10] = ids[2, 10]
    fast = model(ids, attention_mask=mask, labels=labels)
    assert fast.logits.shape == (4, 60)  # the head ran at the 4 masked positions only
    grads_fast = torch.autograd.grad(fast.loss, list(model.parameters()))
    full_logits = model(ids, attention_mask=mask).logits  # (B, N, V)
    reference = masked_lm_loss_reference(full_logits, labels)
    grads_reference = torch.autograd.grad(reference, list(model.parameters()))
    torch.testing.assert_close(fast.loss, reference)
    torch.testing.assert_close(fast.logits, full_logits[labels != -100])
    for a, b in zip(grads_fast, grads_reference, strict=True):
        torch.testing.assert_close(a, b)


def test_a_batch_split_between_processes_has_the_loss_of_the_whole_batch():
    """With num_items_in_batch (the Trainer's count of masked tokens over all processes), each slice's loss is its
    sum over that count, so the slices' losses add up to the whole batch's mean (torchrun == one process)."""
    torch.manual_seed(0)
    model = FastformerForMaskedLM(tiny_config()).double().eval()
    ids = torch.randint(5, 60, (4, 9))
    labels = torch.full_like(ids, -100)
    labels[0, [1, 2, 3]] = ids[0, [1, 2, 3]]
    labels[2, 5] = ids[2, 5]
    labels[3, [0, 8]] = ids[3, [0, 8]]
    whole = model(ids, labels=labels).loss
    count = int((labels != -100).sum())
    halves = [
        model(ids[rows], labels=labels[rows], num_items_in_batch=count).loss for rows in (slice(0, 2), slice(2, 4))
    ]
    torch.testing.assert_close(sum(halves), whole)
    assert model.accepts_loss_kwargs


def test_no_masked_position_gives_a_zero_loss_with_every_parameter_in_the_graph():
    model = FastformerForMaskedLM(tiny_config())
    out = model(torch.randint(5, 60, (2, 6)), labels=torch.full((2, 6), -100))
    assert float(out.loss) == 0.0
    out.loss.backward()  # no error: the graph reaches the parameters


def test_output_layer_is_tied_and_stays_tied_through_save_and_load(tmp_path):
    model = FastformerForMaskedLM(tiny_config())
    assert model.lm_head.decoder.weight is model.fastformer.word_embeddings.weight
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(loaded) is FastformerForMaskedLM
    assert loaded.lm_head.decoder.weight is loaded.fastformer.word_embeddings.weight
    ids = torch.randint(5, 60, (2, 9))
    torch.testing.assert_close(loaded.eval()(ids).logits, model.eval()(ids).logits)


def test_refuses_a_causal_or_factorised_config():
    with pytest.raises(ValueError, match="causal must be False"):
        FastformerForMaskedLM(tiny_config(causal=True))
    with pytest.raises(ValueError, match="embedding_size"):
        FastformerForMaskedLM(tiny_config(embedding_size=8))


def test_fill_mask_pipeline_and_a_classifier_from_a_saved_folder(tmp_path):
    texts = ["the film was great and the cast was great", "the plot was dull and the film was long"] * 20
    tokenizer = train_tokenizer(texts, vocab_size=80)
    model = FastformerForMaskedLM(tiny_config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    fill = pipeline("fill-mask", model=str(tmp_path), tokenizer=AutoTokenizer.from_pretrained(tmp_path))
    guesses = fill("the film was [MASK]", top_k=3)
    assert len(guesses) == 3 and all("token_str" in g and 0 <= g["score"] <= 1 for g in guesses)
    classifier = FastformerForSequenceClassification.from_pretrained(tmp_path, num_labels=3)
    for name, tensor in model.fastformer.state_dict().items():
        torch.testing.assert_close(classifier.fastformer.state_dict()[name], tensor, rtol=0, atol=0)


def test_bf16_autocast_runs_every_attention_path():
    # the fused block and the fused op are autograd Functions that autocast does not reach: they used to crash with
    # "Expected out tensor to have dtype float, but got BFloat16"
    torch.manual_seed(0)
    ids = torch.randint(5, 60, (2, 13))
    labels = torch.where(torch.rand(2, 13) < 0.3, ids, -100)
    labels[0, 0] = ids[0, 0]
    losses = {}
    for implementation in ("fused_block", "fused", "eager"):
        torch.manual_seed(1)
        model = FastformerForMaskedLM(tiny_config(fastformer_implementation=implementation))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(ids, labels=labels)
        out.loss.backward()
        assert torch.isfinite(out.loss)
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
        losses[implementation] = float(out.loss)
        with torch.no_grad():
            full = float(model(ids, labels=labels).loss)
        assert abs(losses[implementation] - full) < 0.05 * abs(full)  # bf16 against float32
    assert max(losses.values()) - min(losses.values()) < 0.05 * abs(losses["eager"])
