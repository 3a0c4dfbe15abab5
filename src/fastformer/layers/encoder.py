"""FastformerEncoder: position embeddings and a stack of FastformerLayers, optionally sharing one set of weights."""

from __future__ import annotations

import torch
from torch import nn

from fastformer.layers.layer import FastformerLayer

POSITION_EMBEDDING_TYPES = ("absolute", "none")


class FastformerEncoder(nn.Module):
    """(B, N, hidden) input embeddings -> (B, N, hidden) hidden states.

    As in the authors' notebook, the encoder adds learned absolute positions to the input embeddings, then
    LayerNorm and dropout, then runs its layers. With `layer_sharing` (the paper's final model, ALBERT-like) one
    layer's weights are applied `num_layers` times. With pre-LN layers a final LayerNorm closes the stack.
    """

    def __init__(
        self,
        hidden_size: int,
        num_layers: int,
        num_heads: int,
        intermediate_size: int,
        *,
        max_position_embeddings: int = 512,
        position_embedding_type: str = "absolute",
        embedding_layer_norm: bool = True,
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-12,
        norm_position: str = "post",
        layer_sharing: bool = False,
        causal: bool = False,
        **layer_kwargs,
    ):
        super().__init__()
        if position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type must be one of {POSITION_EMBEDDING_TYPES}, got {position_embedding_type!r}"
            )
        self.num_layers, self.causal = num_layers, causal
        self.max_position_embeddings = max_position_embeddings
        self.position_embeddings = (
            nn.Embedding(max_position_embeddings, hidden_size) if position_embedding_type == "absolute" else None
        )
        self.embedding_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps) if embedding_layer_norm else None
        self.dropout = nn.Dropout(dropout)
        layer_args = (hidden_size, num_heads, intermediate_size)
        layer_kw = dict(
            dropout=dropout, layer_norm_eps=layer_norm_eps, norm_position=norm_position, causal=causal, **layer_kwargs
        )
        num_distinct = 1 if layer_sharing else num_layers
        self.layers = nn.ModuleList([FastformerLayer(*layer_args, **layer_kw) for _ in range(num_distinct)])
        self.final_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps) if norm_position == "pre" else None

    def layer_at(self, depth: int) -> FastformerLayer:
        """The module applied at depth `depth` (the same one at every depth under layer sharing)."""
        return self.layers[depth % len(self.layers)]

    def forward(
        self,
        inputs_embeds: torch.Tensor,
        mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        *,
        position_ids: torch.Tensor | None = None,
        states: list | None = None,
        attention_weights: list | None = None,
        attention_step: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """inputs_embeds: (B, N, hidden); mask: (B, N) bool or None.

        position_ids: (B, N) or (N,) positions (default 0 .. N-1); a causal stack decoding with a state passes the
            positions of its new tokens.
        states: causal stacks only: a list with one decoding state (or None = nothing read yet) per depth, read and
            replaced in place with the states after these tokens.
        attention_weights: a list to receive each layer's `AdditiveAttention` (alpha, beta), first layer first; the
            return value does not change with it. attention_step (B,): causal stacks only, the position whose
            prefix weights are collected (default: each row's last real token).
        Returns (last hidden state, all hidden states incl. the embeddings' output if requested, else None).
        """
        B, N, _ = inputs_embeds.shape
        x = inputs_embeds
        if mask is not None and not _tracing() and bool(mask.all()):
            # no padding in this batch (e.g. rows all cut at max length): the layers take their unmasked paths,
            # the same outputs without the masked fills, and SDPA its unmasked kernel (as transformers' BERT drops
            # an all-ones mask for SDPA; alone, a key-padding mask made SDPA's forward + backward 1.46x slower at
            # 16 x 12 heads x 512 tokens, bf16, one CPU thread)
            mask = None
        if self.position_embeddings is not None:
            last = last_position(position_ids, N)
            if position_ids is None:
                position_ids = torch.arange(N, device=x.device)[None]
            if last >= self.max_position_embeddings:
                raise ValueError(
                    f"position {last} is beyond max_position_embeddings {self.max_position_embeddings}; "
                    "truncate the input or build the model with more positions"
                )
            x = x + self.position_embeddings(position_ids)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        x = self.dropout(x)
        all_states = [x] if output_hidden_states else None
        if states is not None and len(states) != self.num_layers:
            raise ValueError(f"states must hold one entry per depth ({self.num_layers}), got {len(states)}")
        for depth in range(self.num_layers):
            layer = self.layer_at(depth)
            if attention_weights is not None:
                attention_weights.append(layer.pooling_weights(x, mask, attention_step))
            if layer.carries_state:
                x, state = layer(x, mask, None if states is None else states[depth])
                if states is not None:
                    states[depth] = state
            else:
                x = layer(x, mask)
            if all_states is not None:
                all_states.append(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
            if all_states is not None:
                all_states[-1] = x
        return x, (tuple(all_states) if all_states is not None else None)


def last_position(position_ids: torch.Tensor | None, n: int) -> int:
    """The largest position a layer will embed, to check against its table, with no data-dependent read where that
    breaks tracing: the default positions 0..n-1 (`position_ids` None) are known from the shape, so torch.export
    traces them; given positions (decoding) are not read back while compiling or exporting (-1: nothing to check)."""
    if position_ids is None:
        return n - 1
    if _tracing():
        return -1
    return int(position_ids.max()) if position_ids.numel() else 0


def _tracing() -> bool:
    """Inside torch.compile or torch.export, where reading a tensor's value back to Python breaks the graph."""
    return torch.compiler.is_compiling() or torch.compiler.is_exporting()
