"""Token mixers by name: what a `FastformerLayer` mixes its tokens with (`config.attention_type`), and what each can do.

One table, so a new mixer is one module and one line here (its name also goes into `fastformer.presets.MIXERS`, the
torch-free list the command line's choices are made from; a test holds the two equal). Every task's `--architecture`
offers these names plus its own baselines (tfidf, nbsvm, lead3, gpt2). The layer, the models' decoding state and
`explain` read a mixer's declarations (`Mixer`), never its class or its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from fastformer.layers.attention import FastformerAttention
from fastformer.layers.softmax_attention import SoftmaxAttention


@dataclass(frozen=True)
class Mixer:
    """A token mixer: how to build it and what it can do.

    build: (hidden_size, num_heads, **switches) -> the module, called as `module(x, mask)` -> (B, N, hidden), or,
        causal with a decoding state, `module(x, mask, state)` -> (output, state).
    decoding_state: its causal form carries a fixed-size state from step to step (a cache, `generate()` one token at
        a time, the exported decode step); without one a causal model reads the whole prefix at every step.
    additive_weights: it has `pooling_weights(x, mask, step)` -> AdditiveAttention (what `fastformer explain` shows).
    local_mixing: it takes the `local_mixing=K` switch (a short convolution on q, k, v).
    """

    build: Callable[..., nn.Module]
    decoding_state: bool = False
    additive_weights: bool = False
    local_mixing: bool = False


def fastformer_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """The paper's additive attention (its switches: query_value_sharing, scoring, causal, ...)."""
    return FastformerAttention(hidden_size, num_heads, **attention_kwargs)


def softmax_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """Multi-head softmax attention (torch's scaled_dot_product_attention): the paper's Transformer baseline. Of
    the Fastformer's switches only `causal` applies to it (the control for the causal Fastformer)."""
    return SoftmaxAttention(hidden_size, num_heads, causal=bool(attention_kwargs.get("causal")))


MIXERS: dict[str, Mixer] = {
    "fastformer": Mixer(fastformer_mixer, decoding_state=True, additive_weights=True, local_mixing=True),
    "softmax": Mixer(softmax_mixer),
}


def build_mixer(attention_type: str, hidden_size: int, num_heads: int, **switches) -> tuple[Mixer, nn.Module]:
    """(the mixer's declarations, its module); a name or a switch the mixer does not take is one line."""
    if attention_type not in MIXERS:
        raise ValueError(f"attention_type must be one of {tuple(MIXERS)}, got {attention_type!r}")
    mixer = MIXERS[attention_type]
    if switches.get("local_mixing") and not mixer.local_mixing:
        raise ValueError(
            f"local_mixing is a switch of {', '.join(n for n, m in MIXERS.items() if m.local_mixing)}; "
            f"the {attention_type} mixer does not take it"
        )
    return mixer, mixer.build(hidden_size, num_heads, **switches)
