"""FastformerLayer: attention and feed-forward blocks with residuals, post-LN (BERT, the notebook) or pre-LN."""

from __future__ import annotations

import torch
from torch import nn

from fastformer.layers.feed_forward import FeedForward
from fastformer.layers.mixers import DecodingState, build_mixer

NORM_POSITIONS = ("post", "pre")


class FastformerLayer(nn.Module):
    """(B, N, hidden) -> (B, N, hidden).

    post-LN (the notebook):  a = LN(x + drop(attn(x)));   y = LN(a + drop(ffn(a)))
    pre-LN:                  a = x + drop(attn(LN(x)));   y = a + drop(ffn(LN(a)))   (final LN in the encoder)

    `attention_type` names the token mixer (`fastformer.layers.mixers.MIXERS`): "fastformer", whose switches
    (query_value_sharing, scoring, ...) are `attention_kwargs`, or "softmax", standard multi-head softmax attention
    (torch's scaled_dot_product_attention): the paper's Transformer baseline, everything else unchanged. What the
    layer does with its mixer (a decoding state, additive weights) it reads from the mixer's declarations.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int,
        *,
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-12,
        norm_position: str = "post",
        activation: str = "gelu",
        attention_type: str = "fastformer",
        **attention_kwargs,
    ):
        super().__init__()
        if norm_position not in NORM_POSITIONS:
            raise ValueError(f"norm_position must be one of {NORM_POSITIONS}, got {norm_position!r}")
        self.norm_position = norm_position
        self.attention_type = attention_type
        self.mixer, self.attention = build_mixer(attention_type, hidden_size, num_heads, **attention_kwargs)
        # a causal layer whose mixer keeps a decoding state takes and returns it on every call
        self.carries_state = self.mixer.decoding_state and bool(attention_kwargs.get("causal"))
        self.attention_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.feed_forward = FeedForward(hidden_size, intermediate_size, activation)
        self.feed_forward_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def pooling_weights(
        self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, step: torch.Tensor | None = None
    ):
        """The attention's additive-attention weights (`AdditiveAttention`) on this layer's input (`step`: the
        position asked for, causal layers only; see FastformerAttention.pooling_weights)."""
        if not self.mixer.additive_weights:
            raise ValueError(f"a {self.attention_type} layer has no additive-attention weights (its mixer pools none)")
        attention_input = hidden_states if self.norm_position == "post" else self.attention_norm(hidden_states)
        return self.attention.pooling_weights(attention_input, mask, step)

    def forward(
        self,
        hidden_states: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: DecodingState | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, DecodingState]:
        """(B, N, hidden) -> (B, N, hidden); a causal layer whose mixer keeps a decoding state (`carries_state`)
        takes and returns it on every call: (hidden, state)."""
        x = hidden_states
        attention_input = x if self.norm_position == "post" else self.attention_norm(x)
        if not self.carries_state:
            if state is not None:
                raise ValueError(
                    f"a {self.attention_type} layer carries no decoding state (only causal ones whose mixer keeps one)"
                )
            mixed, new_state = self.attention(attention_input, mask), None
        else:
            mixed, new_state = self.attention(attention_input, mask, state)
        if self.norm_position == "post":
            x = self.attention_norm(x + self.dropout(mixed))
            x = self.feed_forward_norm(x + self.dropout(self.feed_forward(x)))
        else:
            x = x + self.dropout(mixed)
            x = x + self.dropout(self.feed_forward(self.feed_forward_norm(x)))
        return (x, new_state) if self.carries_state else x
