"""FastformerForConditionalGeneration: a Fastformer encoder with a Transformer decoder, for summarization (Table 6)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn
from transformers import BartConfig, GenerationMixin
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput
from transformers.models.bart.modeling_bart import BartDecoder, shift_tokens_right
from transformers.utils.deprecation import deprecate_kwarg

from fastformer.layers.decoder import FastformerDecoder
from fastformer.models.fastformer.cache import (
    FastformerCache,
    columns_to_read,
    needs_recording_cache,
    register_decoding_state,
)
from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerModel,
    FastformerPreTrainedModel,
    factorised_embedding_size,
    refuse_unsupported,
)
from fastformer.presets import attention_kwargs

DECODER_TYPES = ("transformer", "fastformer")


def decoder_config(config: FastformerConfig) -> BartConfig:
    """The BartConfig of the decoder that a FastformerConfig describes (sizes, dropout, special tokens)."""
    bart = BartConfig(
        vocab_size=config.vocab_size,
        d_model=config.hidden_size,
        decoder_layers=config.decoder_layers,
        decoder_attention_heads=config.decoder_attention_heads or config.num_attention_heads,
        decoder_ffn_dim=config.decoder_ffn_dim or config.intermediate_size,
        max_position_embeddings=config.max_target_positions,
        dropout=config.hidden_dropout_prob,
        attention_dropout=0.0,
        activation_dropout=0.0,
        activation_function=config.hidden_act,
        init_std=config.initializer_range,
        scale_embedding=False,
        decoder_layerdrop=0.0,
        pad_token_id=config.pad_token_id,
        bos_token_id=getattr(config, "bos_token_id", None),
        eos_token_id=getattr(config, "eos_token_id", None),
        decoder_start_token_id=getattr(config, "decoder_start_token_id", None),
        is_encoder_decoder=True,
    )
    # the model's choice (SDPA unless from_pretrained(attn_implementation="eager") asks: see _supports_sdpa)
    bart._attn_implementation = config._attn_implementation or "sdpa"
    return bart


class FastformerSeq2SeqCache(FastformerCache):
    """The causal Fastformer decoder's decoding state: per layer a fixed-size CausalPoolState (FastformerCache) and
    the cross-attention keys / values of the source, projected once."""

    def __init__(self, num_layers: int):
        super().__init__(num_layers)
        self.memory_kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    def map_rows(self, fn) -> None:  # (reorder, repeat, select: the source's keys / values follow their rows)
        super().map_rows(fn)
        if self.memory_kv is not None:
            self.memory_kv = [(fn(k), fn(v)) for k, v in self.memory_kv]

    def reset(self) -> None:
        super().reset()
        self.memory_kv = None


register_decoding_state(FastformerSeq2SeqCache, extra=("memory_kv",))


def fastformer_decoder(config: FastformerConfig) -> FastformerDecoder:
    """The causal Fastformer decoder that a FastformerConfig describes (the encoder's attention switches)."""
    return FastformerDecoder(
        config.hidden_size,
        config.decoder_layers,
        config.decoder_attention_heads or config.num_attention_heads,
        config.decoder_ffn_dim or config.intermediate_size,
        max_position_embeddings=config.max_target_positions,
        dropout=config.hidden_dropout_prob,
        layer_norm_eps=config.layer_norm_eps,
        activation=config.hidden_act,
        **attention_kwargs(config),
    )


@dataclass
class FastformerSeq2SeqLMOutput(Seq2SeqLMOutput):
    """Seq2SeqLMOutput plus, with output_attentions=True, the encoder's additive-attention weights per layer
    (`AdditiveAttention`: alpha and beta, (batch, heads, N)); the decoder's softmax attentions are not returned."""

    encoder_additive_attentions: tuple | None = None


class FastformerForConditionalGeneration(FastformerPreTrainedModel, GenerationMixin):
    """Source tokens -> Fastformer encoder (config.attention_type "softmax" for the Transformer baseline) -> a
    standard causal Transformer decoder with cross-attention and a key/value cache (transformers' BartDecoder:
    post-LN, learned positions, SDPA) -> output layer tied to the one word embedding table that encoder and decoder
    share.

    The paper gives the encoder (hidden 256, 16 heads, 4 layers for CNN/DailyMail, 2 for PubMed) and a 4-layer
    decoder, but not the decoder's kind; this is the standard choice. `generate()` gives greedy and beam search,
    length penalty, no-repeat n-grams and length limits with the encoder run once.

    `config.decoder_type = "fastformer"` replaces the decoder by a causal Fastformer stack with cross-attention
    (`fastformer.layers.decoder`; not in the paper): its self-attention state has a fixed size, so decoding cost per
    token does not grow with the summary's length.
    Loss when `labels` (B, T) are given: token cross-entropy, -100 ignored; decoder inputs default to the labels
    shifted right after `decoder_start_token_id`.
    """

    _tied_weights_keys = {
        "lm_head.weight": "fastformer.word_embeddings.weight",
        "decoder.embed_tokens.weight": "fastformer.word_embeddings.weight",
    }
    # saved once, as the word embeddings; the Trainer's best-model reload then re-ties instead of warning
    _keys_to_ignore_on_save = ["decoder.embed_tokens.weight", "lm_head.weight"]

    def __init__(self, config: FastformerConfig):
        config = copy.deepcopy(config)  # the caller's config stays as it was
        config.is_encoder_decoder = True
        if getattr(config, "decoder_start_token_id", None) is None:
            config.decoder_start_token_id = getattr(config, "bos_token_id", None)
        decoder_type = getattr(config, "decoder_type", "transformer")
        if decoder_type not in DECODER_TYPES:
            raise ValueError(f"decoder_type must be one of {DECODER_TYPES}, got {decoder_type!r}")
        if factorised_embedding_size(config):
            raise ValueError(
                "FastformerForConditionalGeneration shares one embedding table between source, target "
                "and output layer: embedding_size must equal hidden_size (or be None)"
            )
        super().__init__(config)
        self.fastformer = FastformerModel(config, add_pooling_layer=False)
        if decoder_type == "fastformer":
            self.decoder = fastformer_decoder(config)
            # no decoder embedding table of its own: only the output layer is tied to the word embeddings
            self._tied_weights_keys = {"lm_head.weight": "fastformer.word_embeddings.weight"}
            self._keys_to_ignore_on_save = ["lm_head.weight"]
        else:
            # its own Embedding, tied to the word embeddings through _tied_weights_keys (one parameter for source,
            # target and output): a checkpoint without the table then reports it missing instead of hiding it
            self.decoder = BartDecoder(decoder_config(config))
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if not config.tie_word_embeddings:  # an output layer of its own: saved, loaded and reported like any weight
            self._tied_weights_keys = {k: v for k, v in self._tied_weights_keys.items() if k != "lm_head.weight"}
            self._keys_to_ignore_on_save = [k for k in self._keys_to_ignore_on_save if k != "lm_head.weight"]
            if not self._fastformer_decoder:  # transformers ties nothing then: the decoder reads the encoder's table
                self.decoder.embed_tokens = self.fastformer.word_embeddings
        self.post_init()

    @property
    def _fastformer_decoder(self) -> bool:
        return isinstance(self.decoder, FastformerDecoder)

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, mode, *args, **kwargs):
        if not self._fastformer_decoder:
            return super()._prepare_cache_for_generation(generation_config, model_kwargs, mode, *args, **kwargs)
        # the state is made by forward on the first step, not a DynamicCache; assisted decoding needs it up front
        if needs_recording_cache(generation_config, model_kwargs, mode):
            model_kwargs["cache"] = FastformerSeq2SeqCache(self.decoder.num_layers)
            model_kwargs["cache"].activate_past_recording()

    def prepare_inputs_for_generation(self, input_ids, next_sequence_length=None, cache=None, **kwargs):
        mask = kwargs.get("decoder_attention_mask")
        next_sequence_length = columns_to_read(input_ids, next_sequence_length, cache, mask)
        return super().prepare_inputs_for_generation(input_ids, next_sequence_length, cache, **kwargs)

    def get_encoder(self, modality: str | None = None) -> FastformerModel:
        return self.fastformer

    def get_decoder(self) -> BartDecoder:
        return self.decoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.fastformer.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.fastformer.word_embeddings = value
        if not self._fastformer_decoder:
            self.decoder.embed_tokens = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")  # transformers 4's name, as its models
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        cache=None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        output_hidden_states: bool | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """input_ids / attention_mask (B, N): the source; decoder_input_ids (B, T); labels (B, T), -100 ignored.

        encoder_outputs: the encoder's output when already computed (generate() runs the encoder once); cache: the
        decoder's key/value cache (an EncoderDecoderCache, made by generate() or when use_cache is set)."""
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unsupported(kwargs)
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        if encoder_outputs is None:
            encoder_outputs = self.fastformer(
                input_ids,
                attention_mask,
                inputs_embeds,
                output_hidden_states=output_hidden_states,
                output_attentions=output_attentions,
                return_dict=True,
            )
        elif isinstance(encoder_outputs, tuple):
            encoder_outputs = BaseModelOutput(last_hidden_state=encoder_outputs[0])
        if use_cache is None:
            use_cache = bool(getattr(self.config, "use_cache", False))
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        source_mask = attention_mask
        if source_mask is None and input_ids is not None and self.config.pad_token_id is not None:
            source_mask = (input_ids != self.config.pad_token_id).long()
        memory = encoder_outputs.last_hidden_state
        decoder_hidden = [] if output_hidden_states else None
        if self._fastformer_decoder:
            if decoder_inputs_embeds is None:
                decoder_inputs_embeds = self.fastformer.word_embeddings(decoder_input_ids)  # (B, T, hidden)
            hidden, cache = self._decode_fastformer(
                decoder_inputs_embeds, memory, source_mask, cache, use_cache, decoder_hidden
            )
        else:
            decoded = self.decoder(
                input_ids=None if decoder_inputs_embeds is not None else decoder_input_ids,
                inputs_embeds=decoder_inputs_embeds,
                attention_mask=decoder_attention_mask,
                encoder_hidden_states=memory,
                encoder_attention_mask=source_mask,
                cache=cache,
                use_cache=use_cache,
                output_hidden_states=bool(output_hidden_states),
            )
            hidden, cache = decoded.last_hidden_state, decoded.cache
            if output_hidden_states:
                decoder_hidden = list(decoded.hidden_states)
        if logits_to_keep:
            hidden = hidden[:, -logits_to_keep:]
        logits = self.lm_head(hidden)  # (B, T, vocab)
        loss = None
        if labels is not None:
            wide = logits.to(torch.promote_types(logits.dtype, torch.float32))  # float32 at least
            loss = nn.functional.cross_entropy(
                wide.reshape(-1, wide.shape[-1]), labels.reshape(-1).to(logits.device), ignore_index=-100
            )
        output = FastformerSeq2SeqLMOutput(
            encoder_additive_attentions=getattr(encoder_outputs, "additive_attentions", None),
            loss=loss,
            logits=logits,
            cache=cache,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=getattr(encoder_outputs, "hidden_states", None) if output_hidden_states else None,
            decoder_hidden_states=tuple(decoder_hidden) if decoder_hidden is not None else None,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)

    def _decode_fastformer(self, embeds, memory, source_mask, cache, use_cache, hidden_states=None):
        """(hidden states, cache) of the causal Fastformer decoder on target embeddings (B, T, hidden); with a cache,
        the new tokens continue its state. `hidden_states`, a list, receives every layer's output."""
        source_mask = None if source_mask is None else source_mask.bool()
        if cache is None and not use_cache:
            return self.decoder(embeds, memory, source_mask, hidden_states=hidden_states), None
        if cache is None:
            cache = FastformerSeq2SeqCache(self.decoder.num_layers)
        if cache.memory_kv is None:
            cache.memory_kv = self.decoder.project_memory(memory)
        behind = cache.columns_behind()
        if 0 < behind < embeds.shape[1]:  # rolled back past where generate() believes it is: read up to there first
            parts = [hidden_states, None if hidden_states is None else []]
            first, _ = self._decode_fastformer(embeds[:, :behind], memory, source_mask, cache, True, parts[0])
            rest, _ = self._decode_fastformer(embeds[:, behind:], memory, source_mask, cache, True, parts[1])
            if hidden_states is not None:  # each layer's output over both parts
                half = len(parts[1])
                hidden_states[-half:] = [
                    torch.cat(pair, 1) for pair in zip(hidden_states[-half:], parts[1], strict=True)
                ]
            return torch.cat([first, rest], 1), cache
        real = torch.ones(embeds.shape[:2], dtype=torch.bool, device=embeds.device)  # targets are not padded
        positions = cache.advance(real)
        hidden = self.decoder(
            embeds,
            memory,
            source_mask,
            position_ids=positions,
            states=cache.states,
            memory_kv=cache.memory_kv,
            hidden_states=hidden_states,
        )
        return hidden, cache
