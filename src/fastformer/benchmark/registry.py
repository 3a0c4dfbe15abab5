"""The token mixers the efficiency benchmark compares, each (B, N, hidden) -> (B, N, hidden) at equal width and heads.

Every entry builds a module for a given (hidden, heads, sequence length) and says how to call it. Baselines from
third-party packages are imported only when asked for; one that does not import is reported as unavailable, not
crashed on. What each is:

- fastformer-official: the authors' notebook attention block (4 hidden x hidden projections), fused op.
- fastformer-paper: the paper's final attention (3 projections, per-head scoring), fused op.
- fastformer-plain: the official block through the plain-autograd op, to show what the fused op buys.
- projections-only: the official block's four projections and nothing else: the floor for any Fastformer layer.
- softmax-sdpa: multi-head softmax attention through torch's scaled_dot_product_attention.
- lucidrains-fast-transformer: `fast-transformer-pytorch`'s FastAttention, the best-known third-party port.
- linformer, performer, nystromformer, local-window: the efficient baselines of the paper's era, from
  `linformer`, `performer-pytorch`, `nystrom-attention`, `local-attention` (window 256, Longformer-style).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Variant:
    name: str
    package: str | None  # third-party package it needs, or None
    build: Callable[[int, int, int], nn.Module]  # (hidden, heads, seq_len) -> module
    call: Callable[[nn.Module, torch.Tensor], torch.Tensor] = lambda m, x: m(x)
    depends_on_length: bool = False  # rebuilt for every sequence length (its weights have N in their shape)


class ProjectionsOnly(nn.Module):
    """The official attention block's four hidden x hidden projections with the same data flow, no attention."""

    def __init__(self, hidden: int):
        super().__init__()
        self.query, self.key = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.transform, self.output_dense = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output_dense(self.transform(self.query(x) + self.key(x)))


def _fastformer(preset: str, fused: bool = True) -> Callable[[int, int, int], nn.Module]:
    def build(hidden: int, heads: int, seq_len: int) -> nn.Module:
        from fastformer.layers import FastformerAttention
        from fastformer.presets import PRESETS, attention_kwargs

        kwargs = {**attention_kwargs(PRESETS[preset]), "implementation": "auto" if fused else "eager"}
        return FastformerAttention(hidden, heads, **kwargs)

    return build


def _softmax(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from fastformer.layers import SoftmaxAttention

    return SoftmaxAttention(hidden, heads)


def _lucidrains(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from fast_transformer_pytorch.fast_transformer_pytorch import FastAttention

    return FastAttention(hidden, heads=heads, dim_head=hidden // heads)


def _lucidrains_call(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    # its default mask=None crashes; an all-true mask is the documented way to run it unpadded
    return module(x, mask=torch.ones(x.shape[:2], dtype=torch.bool, device=x.device))


def _linformer(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from linformer import LinformerSelfAttention

    return LinformerSelfAttention(hidden, seq_len=seq_len, k=min(256, seq_len), heads=heads)


def _performer(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from performer_pytorch import SelfAttention

    return SelfAttention(hidden, heads=heads, dim_head=hidden // heads, causal=False)


def _nystrom(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from nystrom_attention import NystromAttention

    return NystromAttention(hidden, dim_head=hidden // heads, heads=heads, num_landmarks=min(256, seq_len))


def _local(hidden: int, heads: int, seq_len: int) -> nn.Module:
    from local_attention import LocalMHA

    return LocalMHA(dim=hidden, window_size=min(256, seq_len), heads=heads, dim_head=hidden // heads, causal=False)


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant("fastformer-official", None, _fastformer("official")),
        Variant("fastformer-paper", None, _fastformer("paper")),
        Variant("fastformer-plain", None, _fastformer("official", fused=False)),
        Variant("projections-only", None, lambda hidden, heads, n: ProjectionsOnly(hidden)),
        Variant("softmax-sdpa", None, _softmax),
        Variant("lucidrains-fast-transformer", "fast-transformer-pytorch", _lucidrains, _lucidrains_call),
        Variant("linformer", "linformer", _linformer, depends_on_length=True),
        Variant("performer", "performer-pytorch", _performer),
        Variant("nystromformer", "nystrom-attention", _nystrom, depends_on_length=True),
        Variant("local-window", "local-attention", _local, depends_on_length=True),
    ]
}


def available(name: str) -> tuple[bool, str]:
    """Whether a variant can be built here, and why not."""
    variant = VARIANTS[name]
    try:
        variant.build(32, 4, 64)
    except ImportError as error:
        return False, f"{variant.package} not installed ({error})"
    return True, ""
