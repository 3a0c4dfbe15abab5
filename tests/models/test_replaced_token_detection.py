"""FastformerForReplacedTokenDetection (ELECTRA): its loss and gradients equal the slow reference (full generator
logits, a loop that walks each cumulative distribution, per-token binary cross-entropies), its draws follow the
generator's distribution, the generator shares the word embeddings through save and load, and a classifier starts from
the discriminator's encoder."""

import pytest
import torch
from transformers import AutoModelForPreTraining

from fastformer.models.fastformer import (
    FastformerConfig,
    FastformerForReplacedTokenDetection,
    FastformerForSequenceClassification,
)
from fastformer.models.fastformer.modeling_replaced_token_detection import (
    replaced_token_detection_reference,
    sample_replacements,
)


def tiny_config(**overrides):
    fields = dict(
        vocab_size=40,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        layer_sharing=False,
    )
    return FastformerConfig.from_preset("paper", **{**fields, **overrides})


def masked_batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 40, (3, 10), generator=generator)
    mask = torch.ones_like(ids)
    mask[2, 6:] = 0  # a padded row
    ids[2, 6:] = 0
    labels = torch.full_like(ids, -100)
    for row, columns in ((0, [1, 4, 9]), (1, [0]), (2, [2, 5])):
        labels[row, columns] = ids[row, columns]
        ids[row, columns] = 4  # [MASK]
    return ids, mask, labels, torch.rand(ids.shape, generator=generator)


@pytest.mark.parametrize("attention_type", ["fastformer", "softmax"])
def test_loss_and_gradients_equal_the_reference(attention_type):
    torch.manual_seed(0)
    model = FastformerForReplacedTokenDetection(tiny_config(attention_type=attention_type)).double()
    ids, mask, labels, noise = masked_batch()
    out = model(ids, attention_mask=mask, labels=labels, replacement_noise=noise)
    assert out.logits.shape == ids.shape and out.replaced[2, 6:].eq(-100).all()
    assert out.replaced[labels == -100][mask[labels == -100].bool()].eq(0).all()  # unmasked tokens are originals
    reference = replaced_token_detection_reference(model, ids, mask, labels, noise)
    parameters = [p for p in model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(out.loss, parameters)
    grads_reference = torch.autograd.grad(reference, parameters)
    torch.testing.assert_close(out.loss, reference)
    for a, b in zip(grads, grads_reference, strict=True):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(out.loss, out.generator_loss + 50.0 * out.discriminator_loss)


def test_draws_follow_the_generator_distribution():
    logits = torch.tensor([[2.0, 0.0, -1.0, 1.0]]).repeat(40000, 1)
    noise = torch.rand(40000, generator=torch.Generator().manual_seed(1))
    drawn = sample_replacements(logits, noise)
    frequencies = torch.bincount(drawn, minlength=4).double() / 40000
    torch.testing.assert_close(frequencies, torch.softmax(logits[0].double(), -1), atol=0.01, rtol=0)
    assert int(sample_replacements(logits[:1], torch.tensor([0.99999999]))) == 3  # rounding at the top: the last
    assert torch.equal(sample_replacements(logits[:5], noise[:5]), sample_replacements(logits[:5], noise[:5]))


def test_generator_shares_the_embeddings_through_save_and_load_and_a_classifier_starts_from_it(tmp_path):
    model = FastformerForReplacedTokenDetection(tiny_config(generator_num_hidden_layers=1))
    embeddings = model.fastformer.word_embeddings.weight
    assert model.generator.word_embeddings.weight is embeddings
    assert model.generator_head.decoder.weight is embeddings
    assert len(model.generator.encoder.layers) == 1 and len(model.fastformer.encoder.layers) == 2
    model.save_pretrained(tmp_path)
    loaded = AutoModelForPreTraining.from_pretrained(tmp_path)
    assert type(loaded) is FastformerForReplacedTokenDetection
    assert loaded.generator_head.decoder.weight is loaded.fastformer.word_embeddings.weight
    ids, mask, labels, noise = masked_batch(1)
    torch.testing.assert_close(
        loaded.eval()(ids, mask, labels, noise).loss, model.eval()(ids, mask, labels, noise).loss
    )
    classifier = FastformerForSequenceClassification.from_pretrained(tmp_path, num_labels=2)
    source = model.state_dict()
    encoder = {k: v for k, v in classifier.state_dict().items() if k.startswith("fastformer.") and "pooler" not in k}
    assert encoder and all(torch.equal(v, source[k]) for k, v in encoder.items())


def test_refuses_a_causal_or_factorised_config():
    with pytest.raises(ValueError, match="causal"):
        FastformerForReplacedTokenDetection(tiny_config(causal=True))
    with pytest.raises(ValueError, match="embedding_size"):
        FastformerForReplacedTokenDetection(tiny_config(embedding_size=8))
