"""Token mixers by name: what a `FastformerLayer` mixes its tokens with (`config.attention_type`).

One table, so a new mixer is one module and one line here (its name also goes into `fastformer.presets.MIXERS`, the
torch-free list the command line's choices are made from; a test holds the two equal). Every task's `--architecture`
offers these names plus its own baselines (tfidf, nbsvm, lead3, gpt2).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from fastformer.layers.attention import FastformerAttention
from fastformer.layers.softmax_attention import SoftmaxAttention


def fastformer_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """The paper's additive attention (its switches: query_value_sharing, scoring, causal, ...)."""
    return FastformerAttention(hidden_size, num_heads, **attention_kwargs)


def softmax_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """Multi-head softmax attention (torch's scaled_dot_product_attention): the paper's Transformer baseline. Of
    the Fastformer's switches only `causal` applies to it (the control for the causal Fastformer)."""
    if attention_kwargs.get("local_mixing"):
        raise ValueError("local_mixing is a Fastformer switch; the softmax baseline mixes every pair of tokens already")
    return SoftmaxAttention(hidden_size, num_heads, causal=bool(attention_kwargs.get("causal")))


MIXERS: dict[str, Callable[..., nn.Module]] = {"fastformer": fastformer_mixer, "softmax": softmax_mixer}
