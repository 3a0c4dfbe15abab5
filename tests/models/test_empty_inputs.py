"""A length-0 input (an empty text) has a defined output at every level of the stack: ops, layers, models, the CLI."""

import json

import pytest
import torch

from fastformer.layers import FastformerAttention, FastformerEncoder, SoftmaxAttention
from fastformer.ops import (
    causal_fastformer_attention,
    fastformer_attention,
    fastformer_attention_fused,
    fastformer_block_fused,
)
from tests.helpers import TINY_CLASSIFIER


def test_ops_give_an_empty_output_for_no_tokens():
    q = torch.randn(2, 3, 0, 4, requires_grad=True)
    w = torch.randn(3, 4)
    assert fastformer_attention(q, q, q, w, w).shape == (2, 3, 0, 4)
    u, state = causal_fastformer_attention(q, q, q, w, w)
    assert u.shape == (2, 3, 0, 4) and state.query_lse.shape == (2, 3) and torch.isinf(state.query_lse).all()
    x = torch.randn(2, 0, 12, requires_grad=True)
    assert fastformer_attention_fused(x, x, x, w, w, num_heads=3).shape == (2, 0, 12)
    weight, bias = torch.randn(12, 12, requires_grad=True), torch.randn(12)
    y = fastformer_block_fused(x, weight, bias, weight, bias, w, w, weight, bias, num_heads=3)
    assert y.shape == (2, 0, 12)
    y.sum().backward()
    assert weight.grad is not None and not weight.grad.any()  # in the graph, with a zero gradient


@pytest.mark.parametrize("implementation", ["fused_block", "fused", "eager"])
def test_layers_give_an_empty_output_for_no_tokens(implementation):
    x, mask = torch.randn(2, 0, 16), torch.zeros(2, 0, dtype=torch.bool)
    assert FastformerAttention(16, 4, implementation=implementation)(x, mask).shape == (2, 0, 16)
    assert SoftmaxAttention(16, 4)(x, mask).shape == (2, 0, 16)
    out, state = FastformerAttention(16, 4, causal=True)(x, mask)
    assert out.shape == (2, 0, 16)
    hidden, _ = FastformerEncoder(16, 2, 4, 32)(x, mask)
    assert hidden.shape == (2, 0, 16)


@pytest.mark.parametrize("implementation", ["fused_block", "fused", "eager"])
def test_a_classifier_on_empty_texts_gives_its_bias_and_a_finite_loss(implementation):
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

    config = FastformerConfig(
        vocab_size=30,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=16,
        num_labels=3,
        fastformer_implementation=implementation,
    )
    model = FastformerForSequenceClassification(config)
    empty = torch.zeros(2, 0, dtype=torch.long)
    out = model(input_ids=empty, attention_mask=empty, labels=torch.tensor([0, 2]))
    assert out.logits.shape == (2, 3) and torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    out.loss.backward()
    # an empty row beside a real one: the same output as alone
    ids, mask = torch.tensor([[0, 0, 0], [4, 5, 6]]), torch.tensor([[0, 0, 0], [1, 1, 1]])
    with torch.no_grad():
        both = model.eval()(input_ids=ids, attention_mask=mask).logits
        alone = model(input_ids=empty[:1], attention_mask=empty[:1]).logits
    torch.testing.assert_close(both[0], alone[0])


def test_predict_an_empty_text_from_the_command_line(tmp_path, capsys):
    from fastformer.cli.main import main

    out = tmp_path / "run"
    tiny = TINY_CLASSIFIER
    assert main(["train", "--output-dir", str(out), *tiny]) == 0
    capsys.readouterr()
    assert main(["predict", str(out), "", "w1 w2"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert rows[0] == {"argument": 1, "blank": True}  # an empty text: marked, in its place
    assert rows[1]["argument"] == 2 and abs(sum(rows[1]["probabilities"].values()) - 1) < 1e-3
    # a text of no known token (nothing the tokenizer keeps) goes through the model as a length-0 row
    from fastformer.tasks.classification.classifier import Classifier

    (row,) = Classifier(out)(["\u200b"])
    assert abs(sum(row["probabilities"].values()) - 1) < 1e-3
