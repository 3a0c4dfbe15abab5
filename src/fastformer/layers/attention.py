"""FastformerAttention: projections, the additive-attention op, output transform and query residual."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from fastformer.layers.short_convolution import ShortConvolution
from fastformer.ops.causal import (
    CausalPoolState,
    causal_additive_pool,
    causal_fastformer_attention,
    causal_fastformer_step,
)
from fastformer.ops.fastformer_attention import (
    accumulation_dtype,
    additive_pool,
    fastformer_attention,
    head_scores,
    masked_softmax,
)
from fastformer.ops.fused import fastformer_attention_fused
from fastformer.ops.fused_block import fastformer_block_fused

SCORINGS = ("per_head", "full")
TRANSFORMS = ("per_head", "full")
INTERACTIONS = ("product", "add", "concat")
# Which path computes the attention (as Hugging Face's attention implementation switch):
# "fused_block": the whole block as one autograd Function (product, query-value sharing, full transform);
# "fused": the fused op for the two poolings (product interaction);
# "eager": the plain-autograd op (any interaction; the causal layers' chunked causal op);
# "auto": the fastest of these that the configuration allows.
IMPLEMENTATIONS = ("auto", "fused_block", "fused", "eager")


def attention_implementation(
    requested: str,
    *,
    interaction: str,
    query_value_sharing: bool,
    transform: str,
    causal: bool,
    query_residual: bool = True,
    local_mixing: int = 0,
) -> str:
    """The path a FastformerAttention of this configuration uses ("auto" resolved); an error for one that does not
    fit the configuration, naming why."""
    if requested not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {requested!r}")
    needs = {
        "fused": [] if interaction == "product" and not causal else ["interaction='product'", "causal=False"],
        "fused_block": [
            need
            for need, met in (
                ("interaction='product'", interaction == "product"),
                ("query_value_sharing=True", query_value_sharing),
                ("transform='full'", transform == "full"),
                ("causal=False", not causal),
                ("query_residual=True", query_residual),
                ("local_mixing=0", not local_mixing),
            )
            if not met
        ],
    }
    if requested == "auto":
        return next((path for path in ("fused_block", "fused") if not needs[path]), "eager")
    if requested != "eager" and needs[requested]:
        raise ValueError(f"implementation {requested!r} needs {', '.join(needs[requested])}")
    return requested


class AdditiveAttention(NamedTuple):
    """What a Fastformer attention layer attends with, in place of a softmax attention map: the two additive
    poolings' weights. query: alpha (B, H, N), the weight of each token in the global query; key: beta (B, H, N),
    the weight of each token (mixed with the global query) in the global key. Each sums to 1 over the real tokens of
    a sequence and is 0 at padding."""

    query: torch.Tensor
    key: torch.Tensor


class PerHeadLinear(nn.Module):
    """A separate (in_features -> out_features) map for each head, or one map shared by all heads.

    Acts on (..., H, in_features) tensors, which keeps the heads apart where a full Linear would mix them.
    """

    def __init__(self, num_heads: int, in_features: int, out_features: int, shared: bool = False, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        stored = 1 if shared else num_heads
        self.weight = nn.Parameter(torch.empty(stored, in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(stored, out_features)) if bias else None
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., H, in) -> (..., H, out)
        weight = self.weight.expand(self.num_heads, -1, -1)
        y = torch.einsum("...hi,hio->...ho", x, weight)
        if self.bias is not None:
            y = y + self.bias.expand(self.num_heads, -1)
        return y


class ConcatInteraction(nn.Module):
    """The paper's 'concatenation' ablation: mix(g, x_i) = W [g; x_i] + b, per head."""

    def __init__(self, num_heads: int, head_size: int, shared: bool):
        super().__init__()
        self.from_global = PerHeadLinear(num_heads, head_size, head_size, shared, bias=True)
        self.from_token = PerHeadLinear(num_heads, head_size, head_size, shared, bias=False)

    def forward(self, global_vec: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        # global_vec: (B, H, D); tokens: (B, H, N, D). Splitting W in two avoids materialising [g; x_i].
        g = self.from_global(global_vec.to(tokens.dtype))[:, :, None, :]  # (B, H, 1, D)
        return g + self.from_token(tokens.transpose(1, 2)).transpose(1, 2)


class FastformerAttention(nn.Module):
    """Fastformer token mixer, (B, N, hidden) -> (B, N, hidden).

    output = transform(u) + q, where u is `fastformer_attention` of the per-head projections, optionally followed by
    the authors' extra dense layer (their BERT `SelfOutput.dense`, applied before the layer's residual).

    Switches (each an ablation of the paper, sec. 4.5, or a place where the authors' notebook departs from it):
        query_value_sharing: V reuses Q's projection (paper's final model; the notebook always does this).
        head_sharing: all heads share the scoring vectors and the transform (the paper found this hurts);
            needs scoring="per_head" and transform="per_head".
        interaction: "product" (paper), "add" or "concat" (the ablation).
        scoring: "per_head" (paper: w_q, w_k in R^d on each head's slice, no bias) or "full" (notebook:
            Linear(hidden -> heads) with bias on the full vector, divided by sqrt(head size)).
        transform: "full" (one Linear over all heads, as the notebook) or "per_head".
        output_dense: add the notebook's extra Linear(hidden, hidden) after the query residual.
        query_residual: add q to transform(u) (the paper, eq. 5-6, and the notebook). False: the block returns
            transform(u) alone, as a softmax attention block returns its output projection; what `convert-bert` uses,
            since BERT's layers were trained without that term (measured on all-MiniLM-L6-v2, each layer from the
            teacher's input: normalised output error 0.17-0.90 without it, 1.2-2.4 with it; docs/RESULTS.md).
        local_mixing: 0 (the paper) or an odd kernel size: q, k and v each pass a depthwise convolution over that many
            neighbouring tokens after their projections (`ShortConvolution`: identity at initialisation, padding never
            mixed in). Not in the paper. In a causal layer the convolutions are causal (the token and the ones before
            it) and the decoding state carries their last inputs. The fused block (which projects inside its kernel)
            does not take it, "auto" then uses the fused pooling op.
        implementation: which path computes it (same values; `IMPLEMENTATIONS`): "auto" (default) takes the
            fastest the configuration allows: with the product interaction, query-value sharing and the full
            transform (both presets) the whole block as one autograd Function, "fused_block"
            (`fastformer_block_fused`); with the product interaction, "fused" (`fastformer_attention_fused`);
            otherwise "eager", the plain-autograd op, which any configuration can ask for (kept for comparison).
            The resolved path is `self.implementation`.
        causal: each token pools only itself and earlier tokens (`ops.causal`; not in the paper). The layer then
            takes and returns a fixed-size `CausalPoolState` for incremental decoding.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        *,
        query_value_sharing: bool = True,
        head_sharing: bool = False,
        interaction: str = "product",
        scoring: str = "per_head",
        transform: str = "full",
        output_dense: bool = False,
        bias: bool = True,
        implementation: str = "auto",
        causal: bool = False,
        query_residual: bool = True,
        local_mixing: int = 0,
    ):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        for name, value, allowed in (
            ("interaction", interaction, INTERACTIONS),
            ("scoring", scoring, SCORINGS),
            ("transform", transform, TRANSFORMS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        if causal and interaction == "concat":
            raise ValueError("the causal attention supports interaction 'product' or 'add', not 'concat'")
        if head_sharing and (scoring != "per_head" or transform != "per_head"):
            raise ValueError("head_sharing shares per-head weights: it needs scoring='per_head', transform='per_head'")
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_size = hidden_size // num_heads
        self.query_value_sharing, self.head_sharing = query_value_sharing, head_sharing
        self.interaction, self.scoring, self.transform_type = interaction, scoring, transform
        self.causal = causal
        self.query_residual = query_residual
        self.implementation = attention_implementation(
            implementation,
            interaction=interaction,
            query_value_sharing=query_value_sharing,
            transform=transform,
            causal=causal,
            query_residual=query_residual,
            local_mixing=local_mixing,
        )

        self.query = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.key = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.value = None if query_value_sharing else nn.Linear(hidden_size, hidden_size, bias=bias)
        if scoring == "full":
            self.query_att = nn.Linear(hidden_size, num_heads)
            self.key_att = nn.Linear(hidden_size, num_heads)
        else:
            stored = 1 if head_sharing else num_heads
            self.query_att = nn.Parameter(torch.empty(stored, self.head_size).normal_(std=0.02))
            self.key_att = nn.Parameter(torch.empty(stored, self.head_size).normal_(std=0.02))
        if interaction == "concat":
            self.key_interaction = ConcatInteraction(num_heads, self.head_size, head_sharing)
            self.value_interaction = ConcatInteraction(num_heads, self.head_size, head_sharing)
        if transform == "full":
            self.transform = nn.Linear(hidden_size, hidden_size, bias=bias)
        else:
            self.transform = PerHeadLinear(num_heads, self.head_size, self.head_size, head_sharing, bias=bias)
        self.output_dense = nn.Linear(hidden_size, hidden_size, bias=bias) if output_dense else None
        self.local_mixing = local_mixing
        if local_mixing:  # one convolution per projection (the value's is the query's under query-value sharing)
            self.query_conv = ShortConvolution(hidden_size, local_mixing, causal)
            self.key_conv = ShortConvolution(hidden_size, local_mixing, causal)
            self.value_conv = None if query_value_sharing else ShortConvolution(hidden_size, local_mixing, causal)

    def projections(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None):
        """(q, k, v), each (B, N, hidden): the projections, through the local-mixing convolutions when there are."""
        return self.causal_projections(hidden_states, mask)[:3]

    def causal_projections(
        self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, tails: tuple | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple | None]:
        """(q, k, v, tails): the projections after earlier columns whose convolution inputs are `tails` (a causal
        layer's state; None: the start), and the tails after these columns (None without local mixing, and in a
        bidirectional layer, whose centred windows carry nothing)."""
        query = self.query(hidden_states)
        key = self.key(hidden_states)
        value = None if self.value is None else self.value(hidden_states)
        if not self.local_mixing:
            return query, key, query if value is None else value, None
        convs = [c for c in (self.query_conv, self.key_conv, self.value_conv) if c is not None]
        inputs = [t for t in (query, key, value) if t is not None]
        if not self.causal:  # centred windows over the whole sequence: nothing to carry
            mixed, new_tails = [c(x, mask) for c, x in zip(convs, inputs, strict=True)], None
        else:
            tails = tails if tails is not None else (None,) * len(convs)
            steps = [c.step(x, mask, tail) for c, x, tail in zip(convs, inputs, tails, strict=True)]
            mixed, new_tails = [y for y, _ in steps], tuple(t for _, t in steps)
        query, key = mixed[0], mixed[1]
        value = mixed[2] if len(mixed) > 2 else query
        return query, key, value, new_tails

    def scoring_weights(self, which: str) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The op's (w, b) for `which` in {"query", "key"}: w (H, D) per head, or (H, H, D) for full scoring."""
        att = self.query_att if which == "query" else self.key_att
        if self.scoring == "full":
            # Linear(H * D -> H): row h holds head h's weights over the concatenated heads.
            return att.weight.view(self.num_heads, self.num_heads, self.head_size), att.bias
        return att.expand(self.num_heads, self.head_size), None

    def _concat_attention(self, q, k, v, w_q, b_q, w_k, b_k, mask):
        """The 'concat' ablation, composed from the op's building blocks (it has weights of its own)."""
        scale = 1.0 / math.sqrt(self.head_size)
        mask3 = None if mask is None else mask[:, None, :]
        q_global = additive_pool(q, head_scores(q, w_q, b_q, scale), mask3)  # (B, H, D)
        p = self.key_interaction(q_global, k)  # (B, H, N, D)
        k_global = additive_pool(p, head_scores(p, w_k, b_k, scale), mask3)
        u = self.value_interaction(k_global, v)
        return u if mask is None else u.masked_fill(~mask[:, None, :, None], 0)

    def _fused_block(self, hidden_states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """The paper's and the notebook's block (shared QV, product, full transform) as one autograd Function:
        same values as the composed path below, about 4.4 instead of 7 N x hidden activations at the training peak,
        and k is never formed (see ops/fused_block.py)."""
        w_q, b_q = self.scoring_weights("query")
        w_k, b_k = self.scoring_weights("key")
        dense = self.output_dense
        return fastformer_block_fused(
            hidden_states,
            self.query.weight,
            self.query.bias,
            self.key.weight,
            self.key.bias,
            w_q,
            w_k,
            self.transform.weight,
            self.transform.bias,
            None if dense is None else dense.weight,
            None if dense is None else dense.bias,
            mask,
            num_heads=self.num_heads,
            b_q=b_q,
            b_k=b_k,
        )

    def _scoring_inputs(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None):
        """What the weights are computed from, in the accumulation dtype: q and k (B, H, N, D), (w_q, b_q),
        (w_k, b_k) and the score scale."""
        B, N, _ = hidden_states.shape
        acc = accumulation_dtype(hidden_states.dtype)
        q, k = (
            t.view(B, N, self.num_heads, self.head_size).transpose(1, 2).to(acc)
            for t in self.projections(hidden_states, mask)[:2]
        )
        weights = []
        for which in ("query", "key"):
            w, b = self.scoring_weights(which)
            weights.append((w.to(acc), None if b is None else b.to(acc)))
        return q, k, weights[0], weights[1], 1.0 / math.sqrt(self.head_size)

    def pooling_weights(
        self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, step: torch.Tensor | None = None
    ) -> AdditiveAttention:
        """The additive-attention weights (alpha, beta) this layer applies to `hidden_states` (B, N, hidden), in the
        accumulation dtype; recomputed from the projections (forward's fused paths never form them).

        A causal layer pools a different prefix at every position: `step` (B,) long names the position whose
        poolings are returned (alpha and beta over the real tokens j <= step, 0 after it); by default each row's
        last real token, the one whose output predicts the next token.
        """
        if self.causal:
            return self._causal_pooling_weights(hidden_states, mask, step)
        if step is not None:
            raise ValueError("step is for causal layers: a bidirectional layer pools the whole sequence once")
        q, k, (w_q, b_q), (w_k, b_k), scale = self._scoring_inputs(hidden_states, mask)
        mask3 = None if mask is None else mask[:, None, :]
        alpha_scores = head_scores(q, w_q, b_q, scale)
        q_global = additive_pool(q, alpha_scores, mask3)  # (B, H, D)
        if self.interaction == "concat":
            p = self.key_interaction(q_global, k)
        else:
            p = q_global[:, :, None, :] * k if self.interaction == "product" else q_global[:, :, None, :] + k
        beta = masked_softmax(head_scores(p, w_k, b_k, scale), mask3)
        return AdditiveAttention(query=masked_softmax(alpha_scores, mask3), key=beta)

    def _causal_pooling_weights(self, hidden_states, mask, step) -> AdditiveAttention:
        """alpha and beta at position `step` of a causal layer: softmaxes of the scores a_j and b_j over j <= step,
        where b_j mixes key j with the global query of its own step j (see ops/causal.py)."""
        B, N, _ = hidden_states.shape
        q, k, (w_q, b_q), (w_k, b_k), scale = self._scoring_inputs(hidden_states)
        real = torch.ones(B, N, dtype=torch.bool, device=q.device) if mask is None else mask.bool()
        if step is None:
            step = last_real_position(real)
        step = torch.as_tensor(step, device=q.device).long().expand(B)
        alpha_scores = head_scores(q, w_q, b_q, scale)  # (B, H, N)
        q_global, _ = causal_additive_pool(q, alpha_scores, real)  # (B, H, N, D): q_g(j) for every j
        p = q_global * k if self.interaction == "product" else q_global + k
        beta_scores = head_scores(p, w_k, b_k, scale)
        seen = (real & (torch.arange(N, device=q.device)[None, :] <= step[:, None]))[:, None, :]  # (B, 1, N)
        return AdditiveAttention(query=masked_softmax(alpha_scores, seen), key=masked_softmax(beta_scores, seen))

    def _causal_attention(self, q, k, v, w_q, b_q, w_k, b_k, mask, state):
        kw = dict(b_q=b_q, b_k=b_k, interaction=self.interaction)
        if state is not None and q.shape[2] == 1:  # decoding: the recurrent form, O(H * D) per token
            return causal_fastformer_step(q, k, v, w_q, w_k, state, mask, **kw)
        return causal_fastformer_attention(q, k, v, w_q, w_k, mask, state=state, **kw)

    def forward(
        self,
        hidden_states: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: CausalPoolState | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, CausalPoolState]:
        """hidden_states: (B, N, hidden); mask: (B, N) bool, True = real token, or None -> (B, N, hidden).

        A causal layer (causal=True) returns (output, state) on every call: `state` continues from earlier tokens,
        and the state after the last token comes back. The return type is the layer's, never the call's.
        """
        if state is not None and not self.causal:
            raise ValueError("only a causal FastformerAttention (causal=True) carries a state")
        # torch.export traces the plain op (same values): the fused ops' hand-written backward writes into buffers
        implementation = "eager" if torch.compiler.is_exporting() else self.implementation
        if implementation == "fused_block":
            return self._fused_block(hidden_states, mask)
        B, N, C = hidden_states.shape
        tails = None if state is None else state.conv_tails
        mixed_query, mixed_key, mixed_value, tails = self.causal_projections(hidden_states, mask, tails)  # (B, N, C)
        w_q, b_q = self.scoring_weights("query")
        w_k, b_k = self.scoring_weights("key")
        new_state = None
        if self.causal:
            q, k, v = (
                t.view(B, N, self.num_heads, self.head_size).transpose(1, 2)
                for t in (mixed_query, mixed_key, mixed_value)
            )
            u, new_state = self._causal_attention(q, k, v, w_q, b_q, w_k, b_k, mask, state)
            new_state = new_state._replace(conv_tails=tails)  # the local-mixing convolutions' last inputs, or None
            u = u.transpose(1, 2).reshape(B, N, C)
        elif implementation == "fused":  # the fused op works on (B, N, C): no transposes
            u = fastformer_attention_fused(
                mixed_query, mixed_key, mixed_value, w_q, w_k, mask, num_heads=self.num_heads, b_q=b_q, b_k=b_k
            )
        else:  # the ablations run through the general op on (B, H, N, D)
            q, k, v = (
                t.view(B, N, self.num_heads, self.head_size).transpose(1, 2)
                for t in (mixed_query, mixed_key, mixed_value)
            )
            if self.interaction == "concat":
                u = self._concat_attention(q, k, v, w_q, b_q, w_k, b_k, mask)
            else:
                u = fastformer_attention(q, k, v, w_q, w_k, mask, b_q=b_q, b_k=b_k, interaction=self.interaction)
            u = u.transpose(1, 2).reshape(B, N, C)
        if self.transform_type == "full":
            r = self.transform(u)  # (B, N, C)
        else:
            r = self.transform(u.view(B, N, self.num_heads, self.head_size)).reshape(B, N, C)
        output = r + mixed_query if self.query_residual else r  # the paper adds the query, not the input
        if self.output_dense is not None:
            output = self.output_dense(output)
        return (output, new_state) if self.causal else output


def last_real_position(mask: torch.Tensor) -> torch.Tensor:
    """(B, N) bool -> (B,) long: the position of each row's last real token (-1 for a row without any)."""
    if mask.shape[-1] == 0:
        return torch.full(mask.shape[:1], -1, dtype=torch.long, device=mask.device)
    positions = torch.arange(mask.shape[-1], device=mask.device).expand_as(mask)
    return torch.where(mask, positions, -1).max(-1).values
