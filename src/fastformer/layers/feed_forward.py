"""FeedForward: the position-wise two-layer MLP of a Transformer layer."""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS = {
    "gelu": lambda: nn.GELU(),  # exact erf GELU, as BERT's and the authors' notebook's "gelu"
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "relu": lambda: nn.ReLU(),
    "silu": lambda: nn.SiLU(),
}


class FeedForward(nn.Module):
    """(B, N, hidden) -> (B, N, hidden): fc_out(act(fc_in(x))). Dropout and residual belong to the layer."""

    def __init__(self, hidden_size: int, intermediate_size: int, activation: str = "gelu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.fc_in = nn.Linear(hidden_size, intermediate_size)
        self.act = ACTIVATIONS[activation]()
        self.fc_out = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc_out(self.act(self.fc_in(x)))
