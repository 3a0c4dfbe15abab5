"""AttentionPooling: masked additive attention that pools a sequence into one vector."""

from __future__ import annotations

import torch
from torch import nn

from fastformer.ops.fastformer_attention import accumulation_dtype, masked_softmax


class AttentionPooling(nn.Module):
    """(B, N, hidden) -> (B, hidden): a = softmax_i(w . tanh(W x_i + b) + c) over real tokens, out = sum_i a_i x_i.

    The authors' notebook takes exp(score) without subtracting the maximum and adds 1e-8 to the denominator;
    here the maximum is subtracted, so fp16 cannot overflow, and a row without a real token pools to zeros.
    The two agree to ~1e-8 relative wherever the notebook's version is finite.
    """

    def __init__(self, hidden_size: int, pooling_hidden_size: int | None = None):
        super().__init__()
        self.att_fc1 = nn.Linear(hidden_size, pooling_hidden_size or hidden_size)
        self.att_fc2 = nn.Linear(pooling_hidden_size or hidden_size, 1)

    def weights(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, N, hidden) -> (B, N): each token's weight in the pooled vector, in the accumulation dtype; 0 at padding,
        summing to 1 over each row's real tokens (a row without any is all 0)."""
        acc = accumulation_dtype(hidden_states.dtype)
        scores = self.att_fc2(torch.tanh(self.att_fc1(hidden_states))).squeeze(-1)  # (B, N)
        return masked_softmax(scores.to(acc), mask)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.pool(hidden_states, mask)[0]

    def pool(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(pooled (B, hidden), weights (B, N)): forward's result with the weights it pooled with."""
        acc = accumulation_dtype(hidden_states.dtype)
        weights = self.weights(hidden_states, mask)  # (B, N)
        if mask is not None:
            hidden_states = hidden_states.masked_fill(~mask[..., None], 0)
        pooled = torch.einsum("bn,bnd->bd", weights, hidden_states.to(acc))
        return pooled.to(hidden_states.dtype), weights
