"""Causal Fastformer attention: every token pools only itself and the tokens before it.

Neither the paper nor the authors' code has a causal form. This one keeps the paper's equations and restricts both
poolings to the prefix, per head (scale = 1 / sqrt(D) as in the bidirectional op):

    a_j = w_q . q_j * scale                       alpha_ij = exp(a_j) / sum_{l <= i} exp(a_l)     (j <= i)
    q_g(i) = sum_{j <= i} alpha_ij q_j            the global query known at step i
    p_j = q_g(j) * k_j                            each key mixes with the global query *of its own step*
    b_j = w_k . p_j * scale                       beta_ij = exp(b_j) / sum_{l <= i} exp(b_l)
    k_g(i) = sum_{j <= i} beta_ij p_j
    u_i = k_g(i) * v_i

Why p_j uses q_g(j) and not q_g(i): with q_g(i), k_g(i) = q_g(i) * sum_j beta_ij k_j would need the key scores
recomputed against every new global query (O(N^2), no fixed-size state). With q_g(j) each p_j is final once token j
is read, so both poolings are prefix softmax-averages and decoding keeps, per head, a state of two running
log-sum-exps and two running means: 2 * (D + 1) numbers, whatever the length.

Numerics. Both poolings are instances of one primitive, a prefix softmax-average

    y_i = sum_{j <= i} exp(s_j - L_i) x_j,        L_i = logcumsumexp(s)_i,

computed without overflow or 0/0 for any scores: every exponent is s_j - L_i <= 0 (or L_k - L_i <= 0), and each
row's weights sum to one by construction. `causal_additive_pool` evaluates it in O(N * C) per (row, feature) with
chunks of C tokens: inside a chunk, a C x C lower-triangular weight matrix; across chunks, the same primitive
applied recursively to the chunks' summaries (log-sum-exp score, softmax-average value), whose prefix results carry
into each chunk with weight exp(L_prev_chunk_end - L_i). Pooling runs in float32 for half inputs.

Recurrent form: `causal_fastformer_step` updates the state with one token,
    L' = logaddexp(L, s_t);  y' = exp(L - L') y + exp(s_t - L') x_t,
which is the same quantity, so stepping token by token equals the parallel form (tested).

The slow, obvious reference is `naive.causal_fastformer_attention_reference`. Only torch is imported here.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from fastformer.ops.fastformer_attention import accumulation_dtype, check_inputs, head_scores

CHUNK_TOKENS = 16  # measured: 16 beats 32 and 64 on CPU (fewer wasted upper-triangle entries)
# Score given to padding inside the parallel form: finite, so no -inf - -inf appears anywhere (forward or backward),
# and so low that exp(EMPTY - s) is exactly 0 against any real score.
EMPTY_SCORE = -1.0e30


class CausalPoolState(NamedTuple):
    """The fixed-size state of one causal Fastformer attention after some tokens.

    query_lse, key_lse: (B, H) log-sum-exp of the query / key scores so far (-inf before any real token).
    query_global, key_global: (B, H, D) q_g and k_g of the last real token (0 before any), in float32 for half
    inputs. Its size does not depend on how many tokens were read.
    conv_tails: the layer's, not the op's (which ignores it): with local mixing, the last kernel - 1 inputs of each
    causal short convolution (layers/short_convolution.py), (B, kernel - 1, hidden) each; None without.
    """

    query_lse: torch.Tensor
    query_global: torch.Tensor
    key_lse: torch.Tensor
    key_global: torch.Tensor
    conv_tails: tuple[torch.Tensor, ...] | None = None

    def map(self, fn) -> CausalPoolState:
        """The state with `fn` applied to each of its tensors (the convolution tails' too)."""
        tails = None if self.conv_tails is None else tuple(fn(t) for t in self.conv_tails)
        return CausalPoolState(fn(self.query_lse), fn(self.query_global), fn(self.key_lse), fn(self.key_global), tails)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of the state (the convolution tails' too)."""
        return [self.query_lse, self.query_global, self.key_lse, self.key_global, *(self.conv_tails or ())]

    @classmethod
    def empty(cls, batch: int, heads: int, head_size: int, *, dtype=torch.float32, device=None) -> CausalPoolState:
        lse = torch.full((batch, heads), float("-inf"), dtype=dtype, device=device)
        zeros = torch.zeros(batch, heads, head_size, dtype=dtype, device=device)
        return cls(lse, zeros, lse.clone(), zeros.clone())

    def index_select(self, index: torch.Tensor) -> CausalPoolState:
        """The states of the rows in `index` (beam search reorders its hypotheses this way)."""
        return self.map(lambda t: t.index_select(0, index.to(t.device)))


def _tril(n: int, device) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def _prefix_softmax_average(s: torch.Tensor, lse: torch.Tensor, x: torch.Tensor, chunk: int) -> torch.Tensor:
    """y_i = sum_{j <= i} exp(s_j - lse_i) x_j along the token axis.

    s: (R, N) finite scores; lse: (R, N) = logcumsumexp(s); x: (R, N, D). Returns (R, N, D). Exponents are <= 0.
    """
    R, N = s.shape
    # torch.export: one block whatever N (the chunk recursion branches on N, which a dynamic length cannot); exact,
    # at O(N^2) memory per row for an exported program's prompt
    if torch.compiler.is_exporting() or N <= chunk:  # one block: the lower-triangular weight matrix itself
        # The upper triangle is masked before exp: exp(s_j - lse_i), j > i, may overflow, and 0 * inf = NaN in backward.
        weights = torch.exp((s[:, None, :] - lse[:, :, None]).masked_fill(~_tril(N, s.device), float("-inf")))
        return weights @ x
    K = -(-N // chunk)
    pad = K * chunk - N
    if pad:  # pad the tail with empty tokens; lse stays at its last value there; their outputs are dropped
        s = torch.cat([s, s.new_full((R, pad), EMPTY_SCORE)], dim=1)
        lse = torch.cat([lse, lse[:, -1:].expand(R, pad)], dim=1)
        x = torch.cat([x, x.new_zeros(R, pad, x.shape[-1])], dim=1)
    s_c, lse_c, x_c = s.view(R, K, chunk), lse.view(R, K, chunk), x.view(R, K, chunk, -1)
    # Each chunk summarised as one token: its log-sum-exp score and its softmax-average value.
    chunk_score = torch.logsumexp(s_c, dim=-1)  # (R, K)
    chunk_value = torch.einsum("rkc,rkcd->rkd", torch.exp(s_c - chunk_score[..., None]), x_c)  # (R, K, D)
    chunk_end_lse = lse_c[..., -1]  # = logcumsumexp(chunk_score)
    through_chunk = _prefix_softmax_average(chunk_score, chunk_end_lse, chunk_value, chunk)  # (R, K, D)
    # What the previous chunks carry into chunk k: their prefix average, weighted by exp(L_end(k-1) - L_i).
    carried = torch.cat([x.new_zeros(R, 1, x.shape[-1]), through_chunk[:, :-1]], dim=1)  # (R, K, D)
    carried_lse = torch.cat([lse.new_full((R, 1), EMPTY_SCORE), chunk_end_lse[:, :-1]], dim=1)  # (R, K)
    carry_weight = torch.exp(carried_lse[..., None] - lse_c)  # (R, K, C)
    within = torch.exp((s_c[:, :, None, :] - lse_c[..., None]).masked_fill(~_tril(chunk, s.device), float("-inf")))
    y = within @ x_c + carry_weight[..., None] * carried[:, :, None, :]  # (R, K, C, D)
    return y.reshape(R, K * chunk, -1)[:, :N]


def causal_additive_pool(
    x: torch.Tensor,
    scores: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    initial_lse: torch.Tensor | None = None,
    initial_value: torch.Tensor | None = None,
    chunk_tokens: int = CHUNK_TOKENS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Prefix additive pooling: y_i = sum_{j <= i, real} softmax_{j <= i}(scores)_j x_j, for every i.

    x: (B, H, N, D); scores: (B, H, N); mask: (B, N) bool, True = real token, or None.
    initial_lse (B, H), initial_value (B, H, D): a state carried in from earlier tokens (see CausalPoolState);
    it enters as one virtual token before position 0 with that score and value, which is exact.
    Returns (y (B, H, N, D), lse (B, H, N)) in the accumulation dtype; lse is the running log-sum-exp (-inf while no
    real token has been seen). y is 0 until the first real token.
    """
    if chunk_tokens < 2:
        raise ValueError(f"chunk_tokens must be at least 2 (the chunk recursion must shrink), got {chunk_tokens}")
    acc = accumulation_dtype(x.dtype)
    B, H, N, D = x.shape
    x, s = x.to(acc), scores.to(acc)
    if mask is not None:
        s = s.masked_fill(~mask[:, None, :], EMPTY_SCORE)
        x = x.masked_fill(~mask[:, None, :, None], 0)
    if initial_lse is not None:
        s0 = initial_lse.to(acc).clamp_min(EMPTY_SCORE)[..., None]  # -inf (empty state) -> EMPTY_SCORE
        s = torch.cat([s0, s], dim=-1)
        x = torch.cat([initial_value.to(acc)[:, :, None, :], x], dim=2)
    lse = torch.logcumsumexp(s, dim=-1)  # (B, H, N[+1])
    y = _prefix_softmax_average(s.reshape(B * H, -1), lse.reshape(B * H, -1), x.reshape(B * H, -1, D), chunk_tokens)
    y = y.view(B, H, -1, D)
    if initial_lse is not None:
        y, lse = y[:, :, 1:], lse[..., 1:]
    # Before any real token the "average" is over nothing: report lse = -inf, as the recurrent form does.
    lse = lse.masked_fill(lse <= EMPTY_SCORE / 2, float("-inf"))
    return y, lse


def causal_fastformer_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    scale: float | None = None,
    interaction: str = "product",
    state: CausalPoolState | None = None,
    chunk_tokens: int = CHUNK_TOKENS,
) -> tuple[torch.Tensor, CausalPoolState]:
    """Causal Fastformer attention over a whole sequence at once (see the module docstring for the equations).

    Args as `fastformer_attention` (q, k, v: (B, H, N, D); w_q, w_k: (H, D) or (H, H, D); mask (B, N) bool), plus
        state: a CausalPoolState of earlier tokens to continue from (None = start of the sequence).
    Returns (u, state): u (B, H, N, D) in v's dtype, 0 at padded tokens, and the state after the last token (to
    continue with, e.g. by `causal_fastformer_step`); always both, so the type never depends on the call.
    Time O(B * H * N * D * C) with C = chunk_tokens (fixed), memory O(B * H * N * (D + C)).
    """
    check_inputs(q, k, v, w_q, w_k, mask)
    if interaction not in ("product", "add"):
        raise ValueError(f"interaction must be 'product' or 'add' in the causal op, got {interaction!r}")
    if q.shape[2] == 0:  # no tokens: an empty output, and the state unchanged
        B, H, _, D = q.shape
        acc = accumulation_dtype(q.dtype)
        return v * 0, state if state is not None else CausalPoolState.empty(B, H, D, dtype=acc, device=q.device)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    mix = torch.mul if interaction == "product" else torch.add
    acc = accumulation_dtype(q.dtype)
    b_q = None if b_q is None else b_q.to(acc)
    b_k = None if b_k is None else b_k.to(acc)
    init_q = {} if state is None else dict(initial_lse=state.query_lse, initial_value=state.query_global)
    init_k = {} if state is None else dict(initial_lse=state.key_lse, initial_value=state.key_global)

    alpha_scores = head_scores(q.to(acc), w_q.to(acc), b_q, scale)  # (B, H, N)
    q_global, q_lse = causal_additive_pool(q, alpha_scores, mask, chunk_tokens=chunk_tokens, **init_q)  # (B,H,N,D)
    p = mix(q_global, k.to(acc))  # (B, H, N, D): token j mixed with the global query of step j
    beta_scores = head_scores(p, w_k.to(acc), b_k, scale)
    k_global, k_lse = causal_additive_pool(p, beta_scores, mask, chunk_tokens=chunk_tokens, **init_k)
    u = mix(k_global.to(v.dtype), v)
    if mask is not None:
        u = u.masked_fill(~mask[:, None, :, None], 0)
    # The state after the last position (padding leaves it unchanged, so this is the last real token's): copies, as
    # slices would keep every position's (B, H, N, D) tensors alive for as long as the state lives (a cache).
    last = (q_lse[..., -1], q_global[:, :, -1], k_lse[..., -1], k_global[:, :, -1])
    return u, CausalPoolState(*(t.clone() for t in last))


def _pool_step(lse, pooled, score, x, real):
    """One token into a running prefix softmax-average. lse (B, H); pooled, x (B, H, D); score (B, H); real (B,)."""
    new_lse = torch.logaddexp(lse, score)
    keep = torch.exp(lse - new_lse)[..., None]  # exp(-inf) = 0 for an empty state
    take = torch.exp(score - new_lse)[..., None]
    new_pooled = keep * pooled + take * x
    if real is not None:
        new_lse = torch.where(real[:, None], new_lse, lse)
        new_pooled = torch.where(real[:, None, None], new_pooled, pooled)
    return new_lse, new_pooled


def causal_fastformer_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    state: CausalPoolState,
    mask: torch.Tensor | None = None,
    *,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    scale: float | None = None,
    interaction: str = "product",
) -> tuple[torch.Tensor, CausalPoolState]:
    """The recurrent form: one token per sequence. q, k, v: (B, H, 1, D); mask: (B, 1) bool or None.

    Returns (u (B, H, 1, D), the new state). A padded token (mask False) outputs 0 and leaves the state unchanged.
    Cost per token O(H * D), whatever the number of tokens before it.
    """
    check_inputs(q, k, v, w_q, w_k, mask)
    if q.shape[2] != 1:
        raise ValueError(f"causal_fastformer_step takes one token per sequence, got {q.shape[2]}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    mix = torch.mul if interaction == "product" else torch.add
    acc = accumulation_dtype(q.dtype)
    real = None if mask is None else mask[:, 0]
    q_t, k_t = q.to(acc), k.to(acc)
    a = head_scores(q_t, w_q.to(acc), None if b_q is None else b_q.to(acc), scale)[..., 0]  # (B, H)
    q_lse, q_global = _pool_step(state.query_lse.to(acc), state.query_global.to(acc), a, q_t[:, :, 0], real)
    p = mix(q_global[:, :, None, :], k_t)  # (B, H, 1, D)
    b = head_scores(p, w_k.to(acc), None if b_k is None else b_k.to(acc), scale)[..., 0]
    k_lse, k_global = _pool_step(state.key_lse.to(acc), state.key_global.to(acc), b, p[:, :, 0], real)
    u = mix(k_global[:, :, None, :].to(v.dtype), v)
    if real is not None:
        u = u.masked_fill(~real[:, None, None, None], 0)
    return u, CausalPoolState(q_lse, q_global, k_lse, k_global)
