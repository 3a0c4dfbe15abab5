"""SoftmaxAttention: the standard multi-head attention baseline, through torch's scaled_dot_product_attention."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def softmax_attention_mask(mask: torch.Tensor | None, n: int, causal: bool, device) -> torch.Tensor | None:
    """The boolean mask (True = may attend) scaled_dot_product_attention takes: (B, 1, 1, N) keys that are real,
    (B, 1, N, N) with the lower triangle too when causal; None without padding (a causal layer then passes
    is_causal: the kernel's own triangle).

    A query row with no key to attend would be all -inf (NaN): a bidirectional row with no real key sees every key,
    a causal row (left padding before the first real token) sees itself; such rows are padding, read by nobody."""
    if mask is None:
        return None
    if not causal:
        return mask[:, None, None, :] | ~mask.any(-1)[:, None, None, None]  # (B, 1, 1, N)
    earlier = torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (N, N): key j <= query i
    itself = torch.eye(n, dtype=torch.bool, device=device)
    return (earlier & mask[:, None, None, :]) | itself  # (B, 1, N, N)


class SoftmaxAttention(nn.Module):
    """Multi-head softmax attention, (B, N, hidden) -> (B, N, hidden): the Transformer the paper compares with.

    Same interface as FastformerAttention (mask (B, N) bool, True = real), so either can be the token mixer of a
    benchmark or baseline model. Cost O(N^2 * hidden) time. `causal`: each token attends to itself and earlier
    tokens only (GPT-2's masking), the control for a causal Fastformer built on the same layer; it keeps no decoding
    state (no key/value cache): a causal model with this mixer decodes by reading the whole prefix again.
    """

    def __init__(self, hidden_size: int, num_heads: int, bias: bool = True, causal: bool = False):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        self.causal = causal
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.out = nn.Linear(hidden_size, hidden_size, bias=bias)

    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, N, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)
        attn_mask = softmax_attention_mask(mask, N, self.causal, hidden_states.device)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=self.causal and attn_mask is None)
        return self.out(y.transpose(1, 2).reshape(B, N, self.num_heads * self.head_size))  # (B, N, hidden)
