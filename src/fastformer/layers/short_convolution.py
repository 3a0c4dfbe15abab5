"""ShortConvolution: local mixing for a Fastformer layer (not in the paper), a depthwise convolution over a few
neighbouring tokens applied to q, k and v after their projections.

Why: a Fastformer token sees other tokens only through two pooled global vectors, so it cannot compose neighbours
("not good"), which is what NBSVM's bigrams and softmax attention's per-token mixing give. A short depthwise
convolution over tokens adds that at O(N * hidden * kernel), as flash-linear-attention's ShortConvolution does in its
GLA and DeltaNet layers.

Identity at initialisation (the centre tap 1, the others 0): a converted or pretrained model with local mixing
switched on starts with exactly its old outputs. Padding-aware: padded positions are zeroed before the convolution,
so a padding token never leaks into a real one, and a sequence alone equals the same sequence in a padded batch
(left or right padding).

Causal (in a causal layer): each token mixes itself and the kernel - 1 columns before it (the identity is then the
last tap), and decoding carries those columns' inputs in the layer's state (`tail`): read in pieces, a sequence
gives what it gives in one piece. Padding columns count as zeros, as they do in one piece.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class ShortConvolution(nn.Module):
    """(B, N, channels), mask (B, N) bool or None -> (B, N, channels): y_i = sum_t w_t * x_{i + t - kernel // 2} per
    channel over real tokens (zeros past the sequence's ends and at padding). `kernel` odd: centred windows.
    `causal`: y_i = sum_t w_t * x_{i + t - (kernel - 1)}, the token and the kernel - 1 before it."""

    def __init__(self, channels: int, kernel: int, causal: bool = False):
        super().__init__()
        if kernel < 2 or kernel % 2 == 0:
            raise ValueError(f"local_mixing must be an odd kernel size >= 3 (centred windows), got {kernel}")
        self.kernel, self.causal = kernel, causal
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))
        self.reset_to_identity()

    def identity(self) -> torch.Tensor:
        """(channels, 1, kernel): the tap of the token itself 1 (the centre; the last when causal), the others 0."""
        weight = torch.zeros_like(self.weight)
        weight[:, 0, self.kernel - 1 if self.causal else self.kernel // 2] = 1.0
        return weight

    def reset_to_identity(self) -> None:
        with torch.no_grad():
            self.weight.copy_(self.identity())

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.causal:
            return self.step(x, mask)[0]
        if mask is not None:
            x = x.masked_fill(~mask[..., None], 0)
        return depthwise_over_tokens(x, self.weight, padding=self.kernel // 2)

    def step(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, tail: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The causal convolution of new columns x (B, N, channels) after `tail` (B, kernel - 1, channels), the
        inputs of the columns before them (None: the sequence's start, zeros) -> (y (B, N, channels), the new tail)."""
        if mask is not None:
            x = x.masked_fill(~mask[..., None], 0)
        B, _, C = x.shape
        before = x.new_zeros(B, self.kernel - 1, C) if tail is None else tail.to(x.dtype)
        columns = torch.cat([before, x], dim=1)  # (B, kernel - 1 + N, C)
        y = depthwise_over_tokens(columns, self.weight, padding=0)
        return y, columns[:, columns.shape[1] - (self.kernel - 1) :]


def depthwise_over_tokens(x: torch.Tensor, weight: torch.Tensor, padding: int) -> torch.Tensor:
    """x (B, N, C), weight (C, 1, kernel) -> (B, N + 2 * padding - kernel + 1, C): each channel's convolution over
    tokens, `padding` zeros at both ends.

    As conv2d on (B, C, 1, N), which is x as it lies in memory (the channels-last layout): oneDNN's depthwise kernel
    reads it without a copy. conv1d on x.transpose(1, 2) gives the same values (to the bit in bfloat16; tested) but
    copies x to (B, C, N) and back, forward and backward: 3-4x slower on the CPU (16 x 512 x 384, bf16, forward +
    backward)."""
    y = F.conv2d(
        x.transpose(1, 2).unsqueeze(2), weight.to(x.dtype).unsqueeze(2), padding=(0, padding), groups=x.shape[-1]
    )
    return y.squeeze(2).transpose(1, 2)  # (B, C, 1, N') channels-last -> (B, N', C) contiguous


def short_convolution_reference(
    x: torch.Tensor, weight: torch.Tensor, mask: torch.Tensor | None, causal: bool = False
) -> torch.Tensor:
    """The same as a loop over tokens and taps (the tests' reference): weight (channels, 1, kernel)."""
    B, N, C = x.shape
    kernel = weight.shape[-1]
    real = torch.ones(B, N, dtype=torch.bool) if mask is None else mask
    y = torch.zeros_like(x)
    for i in range(N):
        for t in range(kernel):
            j = i + t - (kernel - 1 if causal else kernel // 2)
            if 0 <= j < N:
                y[:, i] += weight[:, 0, t] * x[:, j] * real[:, j, None]
    return y
