"""Hugging Face models: FastformerModel and its task heads."""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutputWithPooling, SequenceClassifierOutput

from fastformer.layers.attention import FastformerAttention, PerHeadLinear
from fastformer.layers.encoder import FastformerEncoder
from fastformer.layers.pooling import AttentionPooling
from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.presets import encoder_kwargs


class FastformerPreTrainedModel(PreTrainedModel):
    config_class = FastformerConfig
    base_model_prefix = "fastformer"
    main_input_name = "input_ids"
    # forward takes **kwargs but its losses are means over the batch, not sums to be divided by the Trainer's
    # item count: without this, the Trainer rescales the loss under data parallelism.
    accepts_loss_kwargs = False

    def _init_weights(self, module: nn.Module) -> None:
        # Linear / Embedding N(0, initializer_range) with zero bias and zero padding row, LayerNorm 1 / 0: as the
        # notebook. The parameters that are not inside a Linear are initialised the same way here.
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, PerHeadLinear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, FastformerAttention) and module.scoring == "per_head":
            init.normal_(module.query_att, mean=0.0, std=std)
            init.normal_(module.key_att, mean=0.0, std=std)


def padding_mask(
    config: FastformerConfig, input_ids: torch.Tensor | None, attention_mask: torch.Tensor | None
) -> torch.Tensor | None:
    """(B, N) bool, True = real token: the given attention_mask, else input_ids != pad_token_id, else None."""
    if attention_mask is not None:
        return attention_mask.bool()
    if input_ids is not None and config.pad_token_id is not None:
        return input_ids != config.pad_token_id
    return None


class FastformerModel(FastformerPreTrainedModel):
    """Word embeddings -> FastformerEncoder -> (hidden states, attention-pooled vector)."""

    def __init__(self, config: FastformerConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.encoder = FastformerEncoder(**encoder_kwargs(config))
        self.pooler = AttentionPooling(config.hidden_size) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.word_embeddings = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """input_ids (B, N) or inputs_embeds (B, N, hidden); attention_mask (B, N), 1 = real token."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        mask = padding_mask(self.config, input_ids, attention_mask)
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)  # (B, N, hidden)
        hidden, all_hidden = self.encoder(inputs_embeds, mask, output_hidden_states=bool(output_hidden_states))
        pooled = self.pooler(hidden, mask) if self.pooler is not None else None
        if not return_dict:
            return tuple(t for t in (hidden, pooled, all_hidden) if t is not None)
        return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=pooled, hidden_states=all_hidden)


class FastformerForSequenceClassification(FastformerPreTrainedModel):
    """Attention-pooled Fastformer encoding -> dropout -> Linear(hidden, num_labels), as the paper's classifier.

    Loss when `labels` are given: cross-entropy (single-label), MSE (num_labels == 1) or BCE (multi-label),
    following `config.problem_type` as Hugging Face's other models do.
    """

    def __init__(self, config: FastformerConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.fastformer = FastformerModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout or 0.0)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput | tuple:
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        outputs = self.fastformer(
            input_ids, attention_mask, inputs_embeds, output_hidden_states=output_hidden_states, return_dict=True
        )
        logits = self.classifier(self.dropout(outputs.pooler_output))  # (B, num_labels)
        loss = None if labels is None else self._loss(logits, labels)
        if not return_dict:
            out = (logits,) + ((outputs.hidden_states,) if outputs.hidden_states is not None else ())
            return ((loss,) + out) if loss is not None else out
        return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.config.problem_type is None:
            if self.num_labels == 1:
                self.config.problem_type = "regression"
            elif labels.dtype in (torch.long, torch.int):
                self.config.problem_type = "single_label_classification"
            else:
                self.config.problem_type = "multi_label_classification"
        if self.config.problem_type == "regression":
            return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
        if self.config.problem_type == "single_label_classification":
            return nn.functional.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
