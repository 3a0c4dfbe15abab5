"""FastformerDecoder: a causal Fastformer stack with cross-attention to an encoder's output, for sequence to sequence.

Not in the paper. Each layer mixes the target tokens with the causal Fastformer (`ops.causal`: a fixed-size state
instead of a growing self-attention key/value cache), then attends to the encoder's states with ordinary
multi-head softmax cross-attention (the source is fixed while decoding, so its keys and values are projected once),
then a feed-forward block; post-LN as the encoder.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from fastformer.layers.encoder import last_position
from fastformer.layers.feed_forward import FeedForward
from fastformer.layers.mixers import DecodingState, build_mixer


class CrossAttention(nn.Module):
    """(B, T, hidden) queries over (B, N, hidden) memory -> (B, T, hidden): multi-head softmax attention (SDPA)."""

    def __init__(self, hidden_size: int, num_heads: int):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key_value = nn.Linear(hidden_size, 2 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def project_memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, N, hidden) -> keys and values (B, H, N, D), computed once per source while decoding."""
        B, N, _ = memory.shape
        k, v = self.key_value(memory).view(B, N, 2, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)
        return k, v

    def forward(
        self, x: torch.Tensor, memory_kv: tuple[torch.Tensor, torch.Tensor], memory_mask: torch.Tensor | None
    ) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.query(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)  # (B, H, T, D)
        attn_mask = None
        if memory_mask is not None:
            # a source without any real token would give NaN; let it see everything (its output is meaningless)
            keep = memory_mask.bool() | ~memory_mask.bool().any(-1, keepdim=True)
            attn_mask = keep[:, None, None, :]  # (B, 1, 1, N)
        y = F.scaled_dot_product_attention(q, *memory_kv, attn_mask=attn_mask)
        return self.out(y.transpose(1, 2).reshape(B, T, -1))


class FastformerDecoderLayer(nn.Module):
    """a = LN(x + drop(causal_mixer(x))); c = LN(a + drop(cross(a, memory))); y = LN(c + drop(ffn(c))).

    The self-attention is any mixer of the table that keeps a decoding state (`self_attention_type`, default the
    causal Fastformer): the decoder steps token by token through that state; a mixer without one is refused."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int,
        *,
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-12,
        activation: str = "gelu",
        self_attention_type: str = "fastformer",
        **attention_kwargs,
    ):
        super().__init__()
        mixer, self.self_attention = build_mixer(
            self_attention_type, hidden_size, num_heads, **{**attention_kwargs, "causal": True}
        )
        if not mixer.decoding_state:
            raise ValueError(
                f"the decoder steps token by token through a fixed-size state; the {self_attention_type} mixer keeps "
                "none (its causal form reads the whole prefix)"
            )
        self.self_attention_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.cross_attention = CrossAttention(hidden_size, num_heads)
        self.cross_attention_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.feed_forward = FeedForward(hidden_size, intermediate_size, activation)
        self.feed_forward_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        memory_kv: tuple[torch.Tensor, torch.Tensor],
        memory_mask: torch.Tensor | None,
        state: DecodingState | None = None,
    ) -> tuple[torch.Tensor, DecodingState]:
        """(B, T, hidden) target states -> (B, T, hidden) and the causal state after these tokens."""
        mixed, state = self.self_attention(x, mask, state)
        x = self.self_attention_norm(x + self.dropout(mixed))
        x = self.cross_attention_norm(x + self.dropout(self.cross_attention(x, memory_kv, memory_mask)))
        x = self.feed_forward_norm(x + self.dropout(self.feed_forward(x)))
        return x, state


class FastformerDecoder(nn.Module):
    """(B, T, hidden) target embeddings + (B, N, hidden) memory -> (B, T, hidden).

    Learned positions, embedding LayerNorm and dropout as the encoder, then `num_layers` FastformerDecoderLayers.
    Incremental decoding passes `states` (one decoding state or None per layer, replaced in place), the memory's
    projected keys / values `memory_kv` (from `project_memory`, once per source) and the new tokens' positions.
    """

    def __init__(
        self,
        hidden_size: int,
        num_layers: int,
        num_heads: int,
        intermediate_size: int,
        *,
        max_position_embeddings: int = 512,
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-12,
        activation: str = "gelu",
        **attention_kwargs,
    ):
        super().__init__()
        self.num_layers = num_layers
        self.max_position_embeddings = max_position_embeddings
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.embedding_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            [
                FastformerDecoderLayer(
                    hidden_size,
                    num_heads,
                    intermediate_size,
                    dropout=dropout,
                    layer_norm_eps=layer_norm_eps,
                    activation=activation,
                    **attention_kwargs,
                )
                for _ in range(num_layers)
            ]
        )

    def project_memory(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every layer's cross-attention keys and values of the memory."""
        return [layer.cross_attention.project_memory(memory) for layer in self.layers]

    def forward(
        self,
        inputs_embeds: torch.Tensor,
        memory: torch.Tensor | None,
        memory_mask: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        states: list | None = None,
        memory_kv: list | None = None,
        hidden_states: list | None = None,
    ) -> torch.Tensor:
        """(B, T, hidden) target embeddings -> (B, T, hidden). `hidden_states`, a list, receives the embeddings'
        output and each layer's (the return value does not change with it)."""
        B, T, _ = inputs_embeds.shape
        last = last_position(position_ids, T)  # (no data-dependent read under torch.export)
        if position_ids is None:
            position_ids = torch.arange(T, device=inputs_embeds.device)[None]
        if last >= self.max_position_embeddings:
            raise ValueError(f"target position {last} is beyond max_target_positions {self.max_position_embeddings}")
        x = self.dropout(self.embedding_norm(inputs_embeds + self.position_embeddings(position_ids)))
        if memory_kv is None:
            memory_kv = self.project_memory(memory)
        if states is None:
            states = [None] * self.num_layers
        if hidden_states is not None:
            hidden_states.append(x)
        for depth, layer in enumerate(self.layers):
            x, states[depth] = layer(x, mask, memory_kv[depth], memory_mask, states[depth])
            if hidden_states is not None:
                hidden_states.append(x)
        return x
