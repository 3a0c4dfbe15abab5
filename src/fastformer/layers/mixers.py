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
from fastformer.ops.causal import CausalPoolState

# A mixer's decoding state: a NamedTuple whose fields are tensors with the batch first (B, ...), tuples of them, or
# None (the Fastformer's: `CausalPoolState`). The cache reorders, repeats and selects its rows through torch's pytree
# (beam search, assisted decoding), `nbytes` counts its tensors, torch.export carries them, and an exported program
# names each tensor after its field (`FIELD_DEPTH`, `FIELD_I_DEPTH` in a tuple): nothing else is asked of it.
DecodingState = tuple


@dataclass(frozen=True)
class Mixer:
    """A token mixer: how to build it and what it can do.

    build: (hidden_size, num_heads, **switches) -> the module, called as `module(x, mask)` -> (B, N, hidden), or,
        causal with a decoding state, `module(x, mask, state)` -> (output, state) (state None: nothing read yet).
    state: the class of its decoding state (a `DecodingState`) when its causal form carries one from step to step
        (a cache, `generate()` one token at a time, the exported decode step); its size is what its tensors hold
        (`FastformerCache.nbytes`). None: a causal model reads the whole prefix at every step.
    additive_weights: it has `pooling_weights(x, mask, step)` -> AdditiveAttention (what `fastformer explain` shows).
    local_mixing: it takes the `local_mixing=K` switch (a short convolution on q, k, v).
    """

    build: Callable[..., nn.Module]
    state: type | None = None
    additive_weights: bool = False
    local_mixing: bool = False

    @property
    def decoding_state(self) -> bool:
        return self.state is not None


def fastformer_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """The paper's additive attention (its switches: query_value_sharing, scoring, causal, ...)."""
    return FastformerAttention(hidden_size, num_heads, **attention_kwargs)


def softmax_mixer(hidden_size: int, num_heads: int, **attention_kwargs) -> nn.Module:
    """Multi-head softmax attention (torch's scaled_dot_product_attention): the paper's Transformer baseline. Of
    the Fastformer's switches only `causal` applies to it (the control for the causal Fastformer)."""
    return SoftmaxAttention(hidden_size, num_heads, causal=bool(attention_kwargs.get("causal")))


MIXERS: dict[str, Mixer] = {
    "fastformer": Mixer(fastformer_mixer, state=CausalPoolState, additive_weights=True, local_mixing=True),
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


def state_class_name(state_type: type) -> str:
    """A decoding-state class's qualified name (`module.Class`), as `state_class` finds it again."""
    return f"{state_type.__module__}.{state_type.__qualname__}"


def state_class(name: str) -> type:
    """The decoding-state class of a mixer of the table, by its qualified name (`state_class_name`): what a cache
    rebuilt from its tensors (torch.export, a saved program) is made of. Only the table's classes are found."""
    for mixer in MIXERS.values():
        if mixer.state is not None and state_class_name(mixer.state) == name:
            return mixer.state
    raise ValueError(f"{name} is not the decoding state of a mixer in fastformer.layers.mixers.MIXERS")
