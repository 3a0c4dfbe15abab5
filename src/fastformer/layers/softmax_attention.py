"""SoftmaxAttention: the standard multi-head attention baseline, through torch's scaled_dot_product_attention."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class SoftmaxAttention(nn.Module):
    """Multi-head softmax attention, (B, N, hidden) -> (B, N, hidden): the Transformer the paper compares with.

    Same interface as FastformerAttention (mask (B, N) bool, True = real), so either can be the token mixer of a
    benchmark or baseline model. Cost O(N^2 * hidden) time.
    """

    def __init__(self, hidden_size: int, num_heads: int, bias: bool = True):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.out = nn.Linear(hidden_size, hidden_size, bias=bias)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, N, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)
        attn_mask = None if mask is None else mask[:, None, None, :]  # (B, 1, 1, N): keys that may be attended
        if attn_mask is not None:
            # a query row with no real key would be all -inf (NaN); let such rows see everything, then ignore them
            attn_mask = attn_mask | ~mask.any(-1)[:, None, None, None]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.out(y.transpose(1, 2).reshape(B, N, self.num_heads * self.head_size))  # (B, N, hidden)
