"""Hugging Face models: FastformerModel and its task heads."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutputWithPooling, SequenceClassifierOutput
from transformers.utils import ModelOutput
from transformers.utils.deprecation import deprecate_kwarg

from fastformer.layers.attention import AdditiveAttention, FastformerAttention, PerHeadLinear
from fastformer.layers.encoder import FastformerEncoder
from fastformer.layers.pooling import AttentionPooling
from fastformer.layers.short_convolution import ShortConvolution
from fastformer.models.fastformer.cache import (
    FastformerCache,
    check_assisted_generation,
    columns_to_read,
    needs_recording_cache,
    real_token_positions,
)
from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.presets import encoder_kwargs


class FastformerPreTrainedModel(PreTrainedModel):
    config_class = FastformerConfig
    base_model_prefix = "fastformer"
    main_input_name = "input_ids"
    # forward takes **kwargs but its losses are means over the batch, not sums to be divided by the Trainer's
    # item count: without this, the Trainer rescales the loss under data parallelism.
    accepts_loss_kwargs = False
    # SDPA is what runs wherever a softmax is taken (the softmax control, cross-attention, the encoder-decoder's BART
    # decoder); only BART's decoder has an eager path as well, which from_pretrained(attn_implementation="eager")
    # selects. A Fastformer layer has no such choice to make.
    _supports_sdpa = True

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
        elif isinstance(module, ShortConvolution):  # identity: local mixing switched on changes nothing at first
            init.copy_(module.weight, module.identity())

    def get_input_embeddings(self) -> nn.Embedding:
        """The encoder's word embeddings: every head's `self.fastformer` (FastformerModel answers with its own)."""
        return self.fastformer.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.fastformer.word_embeddings = value


def padding_mask(
    config: FastformerConfig, input_ids: torch.Tensor | None, attention_mask: torch.Tensor | None
) -> torch.Tensor | None:
    """(B, N) bool, True = real token: the given attention_mask, else input_ids != pad_token_id, else None."""
    if attention_mask is not None:
        return attention_mask.bool()
    if input_ids is not None and config.pad_token_id is not None:
        return input_ids != config.pad_token_id
    return None


@dataclass
class FastformerModelOutput(BaseModelOutputWithPooling):
    """BaseModelOutputWithPooling plus, for causal models, the decoding state after these tokens, and with
    output_attentions=True each layer's additive-attention weights (`AdditiveAttention`: alpha and beta, each
    (B, heads, N)) in place of attention maps, which Fastformer does not form, and the pooler's weights
    `pooling_attentions` (B, N). Every row of weights is 0 at padding and sums to 1 over the real tokens; a causal
    model's are those of one position's prefix (`attention_step`)."""

    cache: FastformerCache | None = None
    additive_attentions: tuple[AdditiveAttention, ...] | None = None
    pooling_attentions: torch.Tensor | None = None


@dataclass
class FastformerSequenceClassifierOutput(SequenceClassifierOutput):
    """SequenceClassifierOutput plus `additive_attentions` and `pooling_attentions` (see FastformerModelOutput)."""

    additive_attentions: tuple[AdditiveAttention, ...] | None = None
    pooling_attentions: torch.Tensor | None = None


UNSUPPORTED = ("head_mask", "cross_attn_head_mask", "decoder_head_mask")


def refuse_unsupported(kwargs: dict) -> None:
    """A clear error for an argument of transformers' conventions that these models do not take (instead of
    swallowing it in **kwargs and computing something else)."""
    for name in UNSUPPORTED:
        if kwargs.get(name) is not None:
            raise ValueError(f"{name} is not supported by Fastformer models (its attention has no per-head map)")


def refuse_legacy_onnx_export() -> None:
    """The TorchScript-based ONNX exporter (`torch.onnx.export(..., dynamo=False)`) traces one input's shapes: the
    attention's length-dependent chunking and padding branches are frozen into the graph, and the exported model's
    logits drift from the model's on other lengths with no error (up to 1.0 measured). Refused with the way that
    works; the torch.export-based exporter (`dynamo=True`, the default since torch 2.9) keeps the shapes symbolic."""
    if torch.jit.is_tracing() and torch.onnx.is_in_onnx_export():
        raise RuntimeError(
            "Fastformer models cannot be exported by the TorchScript-based ONNX exporter (dynamo=False: "
            "its trace freezes the attention's length-dependent branches, and the logits come out "
            "wrong on other lengths); use torch.onnx.export(..., dynamo=True) or `fastformer export "
            "DIR OUT --onnx`"
        )


@dataclass
class FastformerCausalLMOutput(ModelOutput):
    """loss (next-token cross-entropy, when labels are given), logits (B, N, vocab), cache, hidden_states;
    output_attentions=True: `additive_attentions`, each layer's alpha and beta over the prefix of `attention_step`."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    cache: FastformerCache | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    additive_attentions: tuple[AdditiveAttention, ...] | None = None


def factorised_embedding_size(config: FastformerConfig) -> int | None:
    """config.embedding_size when it differs from hidden_size (a projection follows the word embeddings), else None."""
    size = getattr(config, "embedding_size", None)
    if size is not None and size < 1:
        raise ValueError(f"embedding_size must be >= 1 or None, got {size}")
    return size if size is not None and size != config.hidden_size else None


class FastformerModel(FastformerPreTrainedModel):
    """Word embeddings [-> projection] -> FastformerEncoder -> (hidden states, attention-pooled vector).

    With `config.embedding_size` smaller than hidden_size (e.g. 50-d GloVe vectors), the word embeddings are
    (vocab, embedding_size) and `embedding_projection` maps them to hidden_size; `inputs_embeds` are then given in
    the embedding size too, as in ALBERT.
    """

    def __init__(self, config: FastformerConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        factorised = factorised_embedding_size(config)
        self.word_embeddings = nn.Embedding(
            config.vocab_size, factorised or config.hidden_size, padding_idx=config.pad_token_id
        )
        self.embedding_projection = nn.Linear(factorised, config.hidden_size) if factorised else None
        self.encoder = FastformerEncoder(**encoder_kwargs(config))
        self.pooler = AttentionPooling(config.hidden_size) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.word_embeddings = value

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")  # transformers 4's name, as its models
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: FastformerCache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        position_ids: torch.Tensor | None = None,
        attention_step: torch.Tensor | int | None = None,
        **kwargs,
    ) -> FastformerModelOutput | tuple:
        """input_ids (B, N) or inputs_embeds (B, N, hidden); attention_mask (B, N), 1 = real token.

        Causal models (config.causal) only: `cache` continues from earlier tokens (attention_mask may then cover
        the earlier tokens too, as generate() passes it: its last N columns are used); `use_cache` returns the
        state after these tokens (an encoder ignores it and refuses a cache). Positions count real tokens, so left
        padding does not shift them.
        output_attentions=True on a causal model returns the weights over the prefix of `attention_step` (an int
        for every row, negative counting from the end, or (B,) positions; default: each row's last real token).
        """
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        refuse_unsupported(kwargs)
        refuse_legacy_onnx_export()
        behind = 0 if cache is None else cache.columns_behind()
        if 0 < behind < (input_ids if input_ids is not None else inputs_embeds).shape[1]:
            # the cache rolled back past where the caller believes it is (assisted decoding): read up to there first
            whole = self._read_in_two(behind, input_ids, attention_mask, inputs_embeds, output_hidden_states, cache)
            return whole if return_dict is not False else whole.to_tuple()
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        causal = bool(getattr(self.config, "causal", False))
        if cache is not None and not causal:
            raise ValueError("a cache needs a causal model (config.causal = True)")
        # An encoder has no state to continue from: use_cache is ignored there, as BertModel ignores it (generic
        # callers such as transformers' common tests pass it to every model); the output's cache stays None.
        use_cache = bool(use_cache) and causal
        if (cache is not None or use_cache) and not self.config.keeps_decoding_state:
            raise ValueError(
                f"cache / use_cache: a causal {self.config.attention_type} model keeps no decoding state (pass "
                "use_cache=False: it reads the whole prefix at every step)"
            )
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)  # (B, N, embedding size)
        if self.embedding_projection is not None:
            inputs_embeds = self.embedding_projection(inputs_embeds)  # (B, N, hidden)
        B, N = inputs_embeds.shape[:2]
        if attention_mask is not None and attention_mask.shape[-1] > N:
            attention_mask = attention_mask[:, -N:]
        mask = padding_mask(self.config, input_ids, attention_mask)
        given_positions = position_ids  # (B, N) or (N,): used as given (absolute position embeddings)
        position_ids = None
        if causal and (cache is not None or use_cache):
            cache = cache if cache is not None else FastformerCache(self.config.num_hidden_layers)
            real = mask if mask is not None else torch.ones(B, N, dtype=torch.bool, device=inputs_embeds.device)
            position_ids = cache.advance(real)
        elif causal and mask is not None:
            position_ids = real_token_positions(mask)
        if given_positions is not None:
            if cache is not None and cache.states[0] is not None:
                raise ValueError("position_ids with a cache: the cache counts the positions itself")
            position_ids = given_positions
        if output_attentions is None:
            output_attentions = self.config.output_attentions
        weights = [] if output_attentions else None
        step = None
        if weights is not None and causal:
            if cache is not None and cache.states[0] is not None:
                raise ValueError(
                    "output_attentions with a cache of earlier tokens: the weights need the whole "
                    "prefix in one call (pass it without the cache)"
                )
            step = attention_positions(attention_step, B, N, inputs_embeds.device)
        elif attention_step is not None:
            raise ValueError("attention_step is for causal models with output_attentions=True")
        hidden, all_hidden = self.encoder(
            inputs_embeds,
            mask,
            output_hidden_states=bool(output_hidden_states),
            position_ids=position_ids,
            states=None if cache is None else cache.states,
            attention_weights=weights,
            attention_step=step,
        )
        pooled = pooling_weights = None
        if self.pooler is not None:
            pooled, pooling_weights = self.pooler.pool(hidden, mask)
        weights = tuple(weights) if weights is not None else None
        pooling_weights = pooling_weights if weights is not None else None
        output = FastformerModelOutput(
            last_hidden_state=hidden,
            pooler_output=pooled,
            hidden_states=all_hidden,
            cache=cache,
            additive_attentions=weights,
            pooling_attentions=pooling_weights,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)

    def _read_in_two(self, split, input_ids, attention_mask, inputs_embeds, output_hidden_states, cache):
        """Read the first `split` columns into the cache, then the rest: the outputs of one forward over all of them
        (causal: the same numbers), with the cache's recorded start at `split`."""
        n = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        cols = (slice(None, split), slice(split, None))
        masks = (
            (None, None)
            if attention_mask is None
            else (attention_mask[:, : attention_mask.shape[1] - (n - split)], attention_mask)
        )
        parts = [
            self(
                None if input_ids is None else input_ids[:, c],
                m,
                None if inputs_embeds is None else inputs_embeds[:, c],
                output_hidden_states=output_hidden_states,
                return_dict=True,
                cache=cache,
                use_cache=True,
            )
            for c, m in zip(cols, masks, strict=True)
        ]
        first, rest = parts
        hidden = torch.cat([first.last_hidden_state, rest.last_hidden_state], 1)
        all_hidden = None
        if rest.hidden_states is not None:
            all_hidden = tuple(torch.cat(pair, 1) for pair in zip(first.hidden_states, rest.hidden_states, strict=True))
        pooled = None
        if self.pooler is not None:
            mask = padding_mask(self.config, input_ids, None if attention_mask is None else attention_mask[:, -n:])
            pooled, _ = self.pooler.pool(hidden, mask)
        return FastformerModelOutput(
            last_hidden_state=hidden, pooler_output=pooled, hidden_states=all_hidden, cache=cache
        )


def attention_positions(step, batch: int, length: int, device) -> torch.Tensor | None:
    """(B,) long positions for `attention_step`, an int (negative from the end) or a (B,) tensor of positions,
    checked to lie inside the sequence; None stays None (the layers' default: each row's last real token)."""
    if step is None:
        return None
    positions = torch.as_tensor(step, device=device).long().expand(batch)
    positions = torch.where(positions < 0, positions + length, positions)
    if positions.numel() and (positions.min() < 0 or positions.max() >= length):
        raise ValueError(f"attention_step {step} is outside the sequence of {length} tokens")
    return positions


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
        output_attentions: bool | None = None,
        position_ids: torch.Tensor | None = None,
        **kwargs,
    ) -> FastformerSequenceClassifierOutput | tuple:
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unsupported(kwargs)
        outputs = self.fastformer(
            input_ids,
            attention_mask,
            inputs_embeds,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            position_ids=position_ids,
            return_dict=True,
        )
        logits = self.classifier(self.dropout(outputs.pooler_output))  # (B, num_labels)
        loss = None if labels is None else self._loss(logits, labels)
        output = FastformerSequenceClassifierOutput(
            loss=loss,
            logits=logits,
            hidden_states=outputs.hidden_states,
            additive_attentions=outputs.additive_attentions,
            pooling_attentions=outputs.pooling_attentions,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)

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


class FastformerForCausalLM(FastformerPreTrainedModel, GenerationMixin):
    """Causal Fastformer language model: word embeddings -> causal FastformerEncoder -> tied output embeddings.

    Not in the paper: every attention pools only the current and earlier tokens (`fastformer.ops.causal`), so the
    model decodes with a fixed-size state (`FastformerCache`) instead of a key/value cache that grows with the
    context. `generate()` (greedy, sampling, beam search) uses that state; prompts are padded on the left.
    Loss when `labels` are given: next-token cross-entropy (labels are shifted inside; -100 is ignored).
    """

    _tied_weights_keys = {"lm_head.weight": "fastformer.word_embeddings.weight"}

    def __init__(self, config: FastformerConfig):
        config = copy.deepcopy(config)  # the caller's config stays as it was (a FastformerModel built from it later
        config.causal = True  # must not become causal)
        if factorised_embedding_size(config):
            raise ValueError(
                "FastformerForCausalLM ties its output layer to the word embeddings: embedding_size must "
                "equal hidden_size (or be None)"
            )
        if not config.keeps_decoding_state:
            config.use_cache = False  # the softmax control keeps no state: generate() reads the whole prefix each step
        super().__init__(config)
        self.fastformer = FastformerModel(config, add_pooling_layer=False)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # our state is made by forward on the first call (use_cache=True), not a DynamicCache

    def _validate_generation_mode(self, generation_mode, *args, **kwargs):
        check_assisted_generation(self, generation_mode, self.config.keeps_decoding_state)
        return super()._validate_generation_mode(generation_mode, *args, **kwargs)

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, generation_mode, *args, **kwargs):
        if self.config.keeps_decoding_state and needs_recording_cache(generation_config, model_kwargs, generation_mode):
            model_kwargs["cache"] = FastformerCache(self.config.num_hidden_layers)
            model_kwargs["cache"].activate_past_recording()
            return
        return super()._prepare_cache_for_generation(generation_config, model_kwargs, generation_mode, *args, **kwargs)

    def prepare_inputs_for_generation(self, input_ids, next_sequence_length=None, cache=None, **kwargs):
        next_sequence_length = columns_to_read(input_ids, next_sequence_length, cache, kwargs.get("attention_mask"))
        return super().prepare_inputs_for_generation(input_ids, next_sequence_length, cache, **kwargs)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")  # transformers 4's name, as its models
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        cache: FastformerCache | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        output_attentions: bool | None = None,
        attention_step: torch.Tensor | int | None = None,
        **kwargs,
    ) -> FastformerCausalLMOutput | tuple:
        """input_ids (B, N); attention_mask (B, N) or, with a cache, (B, tokens so far); labels (B, N).

        logits_to_keep: compute logits for the last this-many positions only (0 = all), as generate() asks.
        Positions count the real tokens (so left padding does not shift them); generate()'s `position_ids` are not
        needed and are ignored.
        use_cache (default: config.use_cache, when no labels are given) returns the decoding state in `cache`.
        output_attentions / attention_step: each layer's alpha and beta over one position's prefix (FastformerModel).
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unsupported(kwargs)
        if use_cache is None:
            use_cache = bool(getattr(self.config, "use_cache", False)) and labels is None
        outputs = self.fastformer(
            input_ids,
            attention_mask,
            inputs_embeds,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            cache=cache,
            use_cache=use_cache,
            output_attentions=output_attentions,
            attention_step=attention_step,
        )
        hidden = outputs.last_hidden_state
        if logits_to_keep:
            hidden = hidden[:, -logits_to_keep:]
        logits = self.lm_head(hidden)  # (B, N, vocab)
        loss = None
        if labels is not None:
            shifted = logits[:, :-1].reshape(-1, logits.shape[-1]).float()
            loss = nn.functional.cross_entropy(shifted, labels[:, 1:].reshape(-1).to(logits.device), ignore_index=-100)
        output = FastformerCausalLMOutput(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            hidden_states=outputs.hidden_states,
            additive_attentions=outputs.additive_attentions,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)
