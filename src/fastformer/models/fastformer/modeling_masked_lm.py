"""FastformerForMaskedLM: the encoder pretrained by masked-token prediction (BERT's objective), for fine-tuning.

Not in the paper, which trains every model from scratch. The head is BERT's (dense -> GELU -> LayerNorm -> output
layer tied to the input embeddings, with a bias). With labels, logits are computed at the masked positions only: at a
16k-30k vocabulary the (B, N, vocab) product over every position is most of a step's cost, and only ~15 % of it is
read by the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.utils import ModelOutput

from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerModel,
    FastformerPreTrainedModel,
    factorised_embedding_size,
    refuse_unsupported,
)


@dataclass
class FastformerMaskedLMOutput(ModelOutput):
    """loss: cross-entropy over the masked positions (labels != -100), when labels are given.
    logits: (B, N, vocab) without labels (what `pipeline("fill-mask")` reads); with labels, (M, vocab) for the M
    masked positions in row-major order (`labels[labels != -100]` are their targets), unless
    `return_all_logits=True`. hidden_states: per layer, when asked."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None


class MaskedLMHead(nn.Module):
    """hidden (..., C) -> vocabulary logits (..., V): dense + activation + LayerNorm, then the (tied) decoder."""

    def __init__(self, config: FastformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.hidden_act]
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.layer_norm(self.activation(self.dense(hidden))))


def masked_lm_loss_reference(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The slow, obvious loss: cross-entropy of the full (B, N, V) logits over the positions with labels != -100.
    FastformerForMaskedLM's loss (head on the masked positions only) equals it; the tests compare the two."""
    return nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100
    )


class FastformerForMaskedLM(FastformerPreTrainedModel):
    """Fastformer encoder (no pooler) + masked-LM head whose output layer is the word embeddings (tied).

    Its encoder weights are `fastformer.*`, the prefix every head of the `fastformer` model type uses, so
    `FastformerForSequenceClassification.from_pretrained(folder)` starts from them (a fresh pooler and classifier)
    and `fastformer train --init-from folder` fine-tunes it.
    """

    _tied_weights_keys = {"lm_head.decoder.weight": "fastformer.word_embeddings.weight"}
    # the Trainer passes num_items_in_batch, the masked tokens of the whole batch (all processes, all accumulation
    # steps): the loss is then their exact mean however the batch is split
    accepts_loss_kwargs = True

    def __init__(self, config: FastformerConfig):
        if factorised_embedding_size(config):
            raise ValueError(
                "FastformerForMaskedLM ties its output layer to the word embeddings: embedding_size "
                "must equal hidden_size (or be None)"
            )
        if getattr(config, "causal", False):
            raise ValueError("a masked language model reads both sides of a token: config.causal must be False")
        super().__init__(config)
        self.fastformer = FastformerModel(config, add_pooling_layer=False)
        self.lm_head = MaskedLMHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head.decoder

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head.decoder = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        return_all_logits: bool = False,
        position_ids: torch.Tensor | None = None,
        **kwargs,
    ) -> FastformerMaskedLMOutput | tuple:
        """input_ids (B, N) with the tokenizer's mask token where a word is hidden; attention_mask (B, N);
        labels (B, N): the original token at a masked position, -100 elsewhere."""
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)
        refuse_unsupported(kwargs)
        outputs = self.fastformer(
            input_ids,
            attention_mask,
            inputs_embeds,
            output_hidden_states=output_hidden_states,
            position_ids=position_ids,
            return_dict=True,
        )
        hidden = outputs.last_hidden_state  # (B, N, C)
        loss = None
        if labels is None or return_all_logits:
            logits = self.lm_head(hidden)  # (B, N, V)
            if labels is not None:
                loss = masked_lm_loss_reference(logits, labels.to(logits.device))
        else:
            labels = labels.to(hidden.device)
            selected = labels != -100  # (B, N)
            logits = self.lm_head(hidden[selected])  # (M, V): the head only where the loss reads it
            targets = labels[selected]
            if not targets.numel():  # no masked position in the batch: a zero that keeps every parameter in the graph
                loss = logits.sum() * 0.0
            elif num_items_in_batch is not None:  # the sum over the whole batch's count (see accepts_loss_kwargs)
                total = nn.functional.cross_entropy(logits.float(), targets, reduction="sum")
                loss = total / torch.as_tensor(num_items_in_batch, device=total.device, dtype=total.dtype)
            else:
                loss = nn.functional.cross_entropy(logits.float(), targets)
        output = FastformerMaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)
