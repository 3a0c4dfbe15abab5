"""The causal language models the library compares: the causal Fastformer, the same model with causal softmax
attention, and GPT-2 of the same sizes.

All are built from one set of `FastformerConfig` field names, so a comparison changes the attention and nothing
else (GPT-2 has the same parameters but for the Fastformer's two scoring vectors per layer). "softmax" is the
`fastformer` model type with the softmax mixer: any layout the Fastformer takes (post-LN, query-value sharing, ...)
and every head of the model type (a classifier fine-tuned from it with --init-from), where GPT-2 has its own layout
and heads. Used by `fastformer train lm` and by the decoding benchmark (`fastformer.benchmark.generation`).
"""

from __future__ import annotations

from typing import Any

from fastformer.presets import MIXERS  # a mixer's name builds the fastformer model type with it; gpt2 is transformers'

# The language models' shape: GPT-2's layout (pre-LN, separate Q / K / V, no layer sharing) at hidden 256, 4 layers.
LM_MODEL_DEFAULTS: dict[str, Any] = dict(
    hidden_size=256,
    num_hidden_layers=4,
    num_attention_heads=16,
    intermediate_size=1024,
    hidden_dropout_prob=0.1,
    norm_position="pre",
    layer_sharing=False,
    query_value_sharing=False,
    embedding_layer_norm=False,
    layer_norm_eps=1e-5,
)


def causal_language_model(architecture: str, preset: str = "paper", **fields: Any):
    """A FastformerForCausalLM (architecture "fastformer"; "softmax": the same model, causal softmax attention) or a
    GPT2LMHeadModel of the same sizes ("gpt2"), random weights. `fields`: FastformerConfig names (vocab_size,
    max_position_embeddings, hidden_size, ..., token ids)."""
    if architecture == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=fields["vocab_size"],
            n_positions=fields["max_position_embeddings"],
            n_embd=fields["hidden_size"],
            n_layer=fields["num_hidden_layers"],
            n_head=fields["num_attention_heads"],
            n_inner=fields["intermediate_size"],
            activation_function="gelu",
            resid_pdrop=fields["hidden_dropout_prob"],
            embd_pdrop=fields["hidden_dropout_prob"],
            attn_pdrop=fields["hidden_dropout_prob"],
            layer_norm_epsilon=fields["layer_norm_eps"],
            pad_token_id=fields.get("pad_token_id"),
            bos_token_id=fields.get("bos_token_id"),
            eos_token_id=fields.get("eos_token_id"),
        )
        config._attn_implementation = "sdpa"  # torch scaled_dot_product_attention, as the benchmark baseline
        return GPT2LMHeadModel(config)
    if architecture not in MIXERS:
        raise ValueError(f"architecture must be gpt2 or a mixer {MIXERS}, got {architecture!r}")
    from fastformer.models.fastformer import FastformerConfig, FastformerForCausalLM

    if fields.setdefault("attention_type", architecture) != architecture:
        raise ValueError(f"--model attention_type={fields['attention_type']!r}: the architecture is {architecture!r}")
    config = FastformerConfig.from_preset(preset, **fields, causal=True)
    return FastformerForCausalLM(config)
