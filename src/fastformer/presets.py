"""Named architecture presets and the mapping from config fields to layer arguments. Imports nothing but the stdlib.

Field names are those of `FastformerConfig`, so a preset is also a set of config overrides:
`FastformerConfig.from_preset("paper", vocab_size=30000)`.
"""

from __future__ import annotations

from typing import Any

# Sizes shared by both: the paper's experiments and the authors' notebook (hidden 256, 16 heads, 2 layers,
# dropout 0.2). The paper does not give the feed-forward width; the notebook uses 256, so do we.
_BASE = dict(
    hidden_size=256,
    num_hidden_layers=2,
    num_attention_heads=16,
    intermediate_size=256,
    hidden_act="gelu",
    hidden_dropout_prob=0.2,
    max_position_embeddings=512,
    position_embedding_type="absolute",
    embedding_layer_norm=True,
    layer_norm_eps=1e-12,
    initializer_range=0.02,
    norm_position="post",
    interaction="product",
    head_sharing=False,
)

# The token mixers' names (config.attention_type; the modules: fastformer.layers.mixers.MIXERS, kept equal by a
# test). Here without torch, so the command line's --architecture choices come from it at no import cost.
MIXERS = ("fastformer", "softmax")


def mixer_of(architecture: str) -> str | None:
    """The attention_type an --architecture value names, or None for a task's own baseline (tfidf, lead3, ...)."""
    return architecture if architecture in MIXERS else None


PRESETS: dict[str, dict[str, Any]] = {
    # The paper's final model (sec. 3, 4.5): a scoring vector per head on its own slice, query-value sharing,
    # layer-wise sharing, attention output = transform(u) + q with no further dense layer.
    "paper": dict(
        _BASE,
        query_value_sharing=True,
        layer_sharing=True,
        scoring="per_head",
        transform="full",
        attention_output_dense=False,
    ),
    # The authors' notebook, exactly: V = Q, Linear(hidden -> heads) scoring, one transform over all heads,
    # BERT's post-LN layer with its extra attention output dense, independent layers, 256 positions.
    "official": dict(
        _BASE,
        max_position_embeddings=256,
        query_value_sharing=True,
        layer_sharing=False,
        scoring="full",
        transform="full",
        attention_output_dense=True,
    ),
}


def _getter(config: Any):
    return config.get if isinstance(config, dict) else lambda name: getattr(config, name)


# Constructor argument -> the config field it reads (the same name where none is given).
_ATTENTION_FIELDS = dict.fromkeys(("query_value_sharing", "head_sharing", "interaction", "scoring", "transform"))
_ENCODER_FIELDS = {
    **dict.fromkeys(("hidden_size", "intermediate_size", "max_position_embeddings", "position_embedding_type")),
    **dict.fromkeys(("embedding_layer_norm", "layer_norm_eps", "norm_position", "layer_sharing")),
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "dropout": "hidden_dropout_prob",
    "activation": "hidden_act",
}


def _read(get, fields: dict[str, str | None]) -> dict[str, Any]:
    """Each argument of `fields` with the value `get` gives for its config field."""
    return {argument: get(field or argument) for argument, field in fields.items()}


def attention_kwargs(config: Any) -> dict[str, Any]:
    """FastformerAttention's switches from a config object (attributes) or dict of config fields (e.g. a preset)."""
    get = _getter(config)
    return dict(
        _read(get, _ATTENTION_FIELDS),
        output_dense=get("attention_output_dense"),
        implementation=get("fastformer_implementation") or "auto",
        query_residual=get("query_residual") is not False,  # absent from the presets: the paper's block adds q
        local_mixing=get("local_mixing") or 0,  # absent from the presets: no local mixing in the paper
    )


def encoder_kwargs(config: Any) -> dict[str, Any]:
    """FastformerEncoder's keyword arguments from a config object (attributes) or dict of config fields."""
    get = _getter(config)
    return dict(
        _read(get, _ENCODER_FIELDS),
        causal=bool(get("causal")),  # absent from the presets: the paper's models are bidirectional
        attention_type=get("attention_type") or "fastformer",  # "softmax": the Transformer baseline
        **attention_kwargs(config),
    )


def build_encoder(preset: str = "paper", **overrides):
    """A torch-only FastformerEncoder from a preset name and config-field overrides."""
    from fastformer.layers.encoder import FastformerEncoder

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
    return FastformerEncoder(**encoder_kwargs({**PRESETS[preset], **overrides}))
