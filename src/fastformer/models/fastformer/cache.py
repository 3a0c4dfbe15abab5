"""FastformerCache: the fixed-size decoding state of a causal Fastformer, in the role of a key/value cache."""

from __future__ import annotations

import torch

from fastformer.ops.causal import CausalPoolState


def real_token_positions(real: torch.Tensor, before: torch.Tensor | None = None) -> torch.Tensor:
    """Position of every token (B, N): how many real tokens precede it (plus `before` (B,), those read earlier).

    Padding takes the position of the next real token (0 at the start), so left padding shifts nothing."""
    positions = real.long().cumsum(-1) - 1
    if before is not None:
        positions = positions + before[:, None]
    return positions.clamp_min(0)


class FastformerCache:
    """What `generate()` carries from step to step for FastformerForCausalLM.

    Per depth of the stack, a `CausalPoolState` (two running log-sum-exps and two running means per head:
    2 * num_heads * (head_size + 1) numbers per sequence); plus, per sequence, the number of real tokens read so far,
    which gives the next token's position under left padding. Its size does not grow with the context, unlike a
    softmax model's key/value cache.

    Beam search reorders it with `reorder_cache`, as it does Hugging Face's caches.
    """

    is_compileable = False

    def __init__(self, num_layers: int):
        self.states: list[CausalPoolState | None] = [None] * num_layers
        self.seen_tokens: torch.Tensor | None = None  # (B,) long

    @property
    def is_linear(self) -> list[bool]:  # generate() asks: a recurrent state, nothing to slice by length
        return [True] * len(self.states)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0 if self.seen_tokens is None else int(self.seen_tokens.max())

    def advance(self, real: torch.Tensor) -> torch.Tensor:
        """Count the new tokens (real: (B, N) bool) and return their positions (B, N): real tokens read so far."""
        before = torch.zeros(real.shape[0], dtype=torch.long, device=real.device)
        if self.seen_tokens is not None:
            before = self.seen_tokens.to(real.device)
        self.seen_tokens = before + real.long().sum(-1)
        return real_token_positions(real, before)

    def reorder_cache(self, beam_idx: torch.Tensor) -> None:
        self.states = [None if s is None else s.index_select(beam_idx) for s in self.states]
        if self.seen_tokens is not None:
            self.seen_tokens = self.seen_tokens.index_select(0, beam_idx.to(self.seen_tokens.device))

    def nbytes(self) -> int:
        """Bytes held by the state (what a key/value cache's size is compared with)."""
        tensors = [t for s in self.states if s is not None for t in s]
        if self.seen_tokens is not None:
            tensors.append(self.seen_tokens)
        return sum(t.numel() * t.element_size() for t in tensors)
