"""Fused Fastformer attention: one autograd Function over the token-major layout (B, N, H * D).

Three facts make the op cheap in memory and in passes over the data:

1. The key scores need no p_i = q_g * k_i tensor. Since q_g is constant over tokens,
       w_k . p_i = (w_k * q_g) . k_i    and    k_g = sum_i beta_i p_i = q_g * sum_i beta_i k_i,
   so the second pooling reads k directly with an "effective" scoring vector (or matrix).
2. The softmax backward needs sum_i alpha_i dalpha_i, and that equals q_g . dq_g (likewise
   sum_i beta_i dbeta_i = k_mean . dk_mean): no extra pass over the tokens to get it.
3. Each pooling runs as an online softmax (running max and sum, as flash attention does) over chunks of
   about CHUNK_TOKENS tokens, so every chunk of q or k is read from memory once per pass and used from cache
   for both its scores and its weighted sum.

Forward reads q, k and v once each and writes u; it saves q, k (and v when it is not q), the raw scores
(B, H, N) and per-row softmax statistics; nothing else of size N x C. Backward reads g and v, then k, then q,
and writes dk and dq chunk by chunk. `_backward` spells out the math; `fastformer_attention_reference`
(naive.py) is the ground truth the tests compare with.
"""

from __future__ import annotations

import torch

from fastformer.ops.fastformer_attention import accumulation_dtype, autocast_dtype, cast_for_autocast

# Tokens per chunk: 2048 x 256 channels x 4 bytes = 2 MiB, well inside the L3 cache of a current CPU.
CHUNK_TOKENS = 2048


def scoring_matrix(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(H, D) per-head vectors or (H, H, D) full weights -> S (C, H) with scores = X @ S."""
    if w.dim() == 2:  # S[h * D + d, h] = w[h, d], zero off the head's own block
        return block_diagonal(w).t()
    return w.permute(1, 2, 0).reshape(-1, num_heads)  # S[g * D + d, h] = w[h, g, d]


def scoring_weight_grad(grad_s: torch.Tensor, w_shape: torch.Size, num_heads: int) -> torch.Tensor:
    """Gradient of `scoring_matrix` pulled back to w's shape."""
    if len(w_shape) == 2:
        head_size = w_shape[1]
        blocks = grad_s.view(num_heads, head_size, num_heads)  # [h, d, h']
        heads = torch.arange(num_heads, device=grad_s.device)
        return blocks[heads, :, heads]  # (H, D): each head's own block
    return grad_s.view(num_heads, -1, num_heads).permute(2, 0, 1)  # [g, d, h] -> (h, g, d)


def row_blocks(B: int, N: int, chunk: int):
    """(batch slice, list of token slices) covering (B, N) in pieces of about `chunk` tokens."""
    if N >= chunk:
        token_slices = [slice(n, min(n + chunk, N)) for n in range(0, N, chunk)]
        return [(slice(b, b + 1), token_slices) for b in range(B)]
    rows = max(1, chunk // N)
    return [(slice(b, min(b + rows, B)), [slice(0, N)]) for b in range(0, B, rows)]


def block_diagonal(vec: torch.Tensor) -> torch.Tensor:
    """(..., H, D) -> (..., H, H * D) with vec[h] on head h's own channels, zero elsewhere."""
    H = vec.shape[-2]
    eye = torch.eye(H, dtype=vec.dtype, device=vec.device)
    return (vec[..., :, None, :] * eye[:, :, None]).flatten(-2)


def scoring_rows(w: torch.Tensor, full: bool) -> torch.Tensor:
    """The rows (..., H, C) whose product with a token's channels gives its H scores: a full scoring matrix
    (..., C, H) transposed, per-head vectors (..., H, D) block-diagonal."""
    return w.transpose(-1, -2) if full else block_diagonal(w)


def token_chunk(x: torch.Tensor, rows: slice, tokens: slice, acc: torch.dtype, mask: torch.Tensor | None):
    """One block of x (B, N, C) in the accumulation dtype, padded slots zeroed so no garbage reaches a sum."""
    xc = x[rows, tokens].to(acc)
    if mask is not None:
        if x.dtype == acc:  # xc is a view of x: a masked copy
            return xc.masked_fill(~mask[rows, tokens, None], 0)
        xc.masked_fill_(~mask[rows, tokens, None], 0)  # xc is already a copy: masked in place
    return xc


class _Scorer:
    """Scores (b, H, T) of token chunks (b, T, C) from scoring rows (b, H, C) (`scoring_rows`).

    Per-head vectors score through their block-diagonal rows: one matrix product that reads the chunk as it lies,
    where a per-head product (einsum over (b, T, H, D)) first copies the chunk into head-major order; the H-fold
    multiply-adds on zeros cost less than that copy (at H = 12, C = 384 a score took 0.32 ms instead of 0.71 on a
    (4, 512, 384) chunk, one thread)."""

    def __init__(self, rows: torch.Tensor):
        self.rows = rows  # (b, H, C)

    def __call__(self, xc: torch.Tensor) -> torch.Tensor:
        return torch.bmm(self.rows, xc.transpose(1, 2))


def _pool(xc: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_n weights[b, h, n] * xc[b, n, head h's channels] -> (b, H, D); xc (b, T, C), weights (b, H, T).

    Every head's weights pool every channel (one matrix product on the chunk as it lies) and each head keeps its
    own block: as with `_Scorer`, cheaper than copying the chunk head-major (0.30 ms against 1.22)."""
    b, T, C = xc.shape
    H = weights.shape[1]
    return torch.bmm(weights, xc).view(b, H, H, C // H).diagonal(dim1=1, dim2=2).transpose(1, 2)


def online_pool(x, rows, token_slices, mask, score, bias, acc, scores_out, pool=None):
    """Softmax-weighted sum over tokens of one batch block, one pass over the chunks (online softmax).

    Writes the masked scores into scores_out[rows] (B, H, N); returns (pooled (b, H, D), shift (b, H), total (b, H))
    with softmax weights = exp(scores - shift) / total. bias: (H,) or (b, H), added to the scores. pool(xc, e):
    the weighted sum of one chunk (default: each head's own channels, `_pool`).
    """
    b = rows.stop - rows.start
    H = scores_out.shape[1]
    running_max = torch.full((b, H), float("-inf"), dtype=acc, device=x.device)
    total = torch.zeros(b, H, dtype=acc, device=x.device)
    pooled = None
    for tokens in token_slices:
        xc = token_chunk(x, rows, tokens, acc, mask)
        s = score(xc)  # (b, H, T)
        if bias is not None:
            s = s + bias[..., None]
        if mask is not None:
            s = s.masked_fill(~mask[rows, None, tokens], float("-inf"))
        scores_out[rows, :, tokens] = s
        new_max = torch.maximum(running_max, s.amax(-1))
        shift = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
        rescale = torch.exp(running_max - shift)  # 0 while nothing was seen (max = -inf)
        e = torch.exp(s - shift[..., None])  # exp(-inf) = 0 at padded tokens
        total = total * rescale + e.sum(-1)
        part = _pool(xc, e) if pool is None else pool(xc, e)
        pooled = part if pooled is None else pooled * rescale[..., None] + part  # rescale is 0 on the first chunk
        running_max = new_max
    shift = torch.where(torch.isfinite(running_max), running_max, torch.zeros_like(running_max))
    return pooled / total.clamp_min(torch.finfo(acc).tiny)[..., None], shift, total


def _weights(scores, rows, tokens, shift, total):
    """Softmax weights (b, H, T) of one chunk, from the saved scores and row statistics."""
    return (
        torch.exp(scores[rows, :, tokens] - shift[..., None])
        / total.clamp_min(torch.finfo(total.dtype).tiny)[..., None]
    )


class ScoringWeights:
    """The two poolings' scoring weights in the accumulation dtype, as the forward and backward passes use them."""

    def __init__(self, w_q, w_k, b_q, b_k, num_heads: int, scale: float, acc: torch.dtype):
        self.given = (w_q, w_k)  # as passed: their shapes and dtypes are those of the gradients
        self.w_q, self.w_k = w_q.to(acc), w_k.to(acc)  # (H, D) or (H, H, D)
        self.b_q = None if b_q is None else scale * b_q.to(acc)  # biases enter the scores times the scale
        self.b_k = None if b_k is None else scale * b_k.to(acc)
        self.full = w_q.dim() == 3
        self.s_q = scoring_matrix(self.w_q, num_heads) if self.full else None  # (C, H)
        self.s_k = scoring_matrix(self.w_k, num_heads) if self.full else None
        self.rows_q = scoring_rows(self.s_q if self.full else self.w_q, self.full)  # (H, C), without the scale
        self.num_heads, self.scale, self.acc = num_heads, scale, acc


class PoolStatistics:
    """What the backward passes need of both poolings: raw scores (B, H, N), per-row softmax shift and total,
    q_global and k_mean (B, H, D); nothing of size N x C."""

    def __init__(self, scores_q, scores_k, shift_q, total_q, shift_k, total_k, q_global, k_mean):
        self.scores_q, self.scores_k = scores_q, scores_k  # (B, H, N) raw scores of the two poolings
        # (B, H) each: softmax weights = exp(scores - shift) / total, per pooling
        self.shift_q, self.total_q, self.shift_k, self.total_k = shift_q, total_q, shift_k, total_k
        self.q_global, self.k_mean = q_global, k_mean

    @classmethod
    def empty(cls, B: int, N: int, H: int, D: int, acc: torch.dtype, device) -> PoolStatistics:
        def new(*shape):
            return torch.empty(*shape, dtype=acc, device=device)

        return cls(new(B, H, N), new(B, H, N), new(B, H), new(B, H), new(B, H), new(B, H), new(B, H, D), new(B, H, D))

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """In the constructor's order (to save for backward and rebuild with `PoolStatistics(*tensors)`)."""
        return (
            self.scores_q,
            self.scores_k,
            self.shift_q,
            self.total_q,
            self.shift_k,
            self.total_k,
            self.q_global,
            self.k_mean,
        )

    def k_global(self, rows: slice) -> torch.Tensor:
        """k_g = q_g * k_mean of a batch block, as (b, 1, C) to broadcast over tokens."""
        b = rows.stop - rows.start
        return (self.q_global[rows] * self.k_mean[rows]).reshape(b, 1, -1)


def pool_queries(q, rows: slice, token_slices, mask, weights: ScoringWeights, pools: PoolStatistics) -> None:
    """The first additive pooling of one batch block (forward): q_global and its statistics into `pools`."""
    b = rows.stop - rows.start
    score_q = _Scorer(weights.scale * weights.rows_q.expand(b, -1, -1))
    pools.q_global[rows], pools.shift_q[rows], pools.total_q[rows] = online_pool(
        q, rows, token_slices, mask, score_q, weights.b_q, weights.acc, pools.scores_q
    )


def effective_key_scoring(weights: ScoringWeights, q_g: torch.Tensor) -> torch.Tensor:
    """The key scoring with q_g folded in, w_eff = scale w_k q_g: (b, C, H) for full scoring, else (b, H, D)."""
    b, H, D = q_g.shape
    if weights.full:
        return weights.scale * q_g.reshape(b, H * D, 1) * weights.s_k
    return weights.scale * weights.w_k * q_g


def pool_rows(q, k, rows: slice, token_slices, mask, weights: ScoringWeights, pools: PoolStatistics) -> None:
    """Both additive poolings of one batch block (forward), written into `pools` at `rows`."""
    pool_queries(q, rows, token_slices, mask, weights, pools)
    # scores of p_i = q_g * k_i, read off k_i with q_g folded into the scoring weights
    score_k = _Scorer(scoring_rows(effective_key_scoring(weights, pools.q_global[rows]), weights.full))
    pools.k_mean[rows], pools.shift_k[rows], pools.total_k[rows] = online_pool(
        k, rows, token_slices, mask, score_k, weights.b_k, weights.acc, pools.scores_k
    )


class PoolGradients:
    """Gradients of the scoring weights, accumulated over batch blocks in the accumulation dtype."""

    def __init__(self, weights: ScoringWeights, C: int, device):
        H, acc = weights.num_heads, weights.acc
        # full scoring accumulates gradients of the (C, H) scoring matrices, mapped back to (H, H, D) at the end
        self.w_q = torch.zeros(C, H, dtype=acc, device=device) if weights.full else torch.zeros_like(weights.w_q)
        self.w_k = torch.zeros(C, H, dtype=acc, device=device) if weights.full else torch.zeros_like(weights.w_k)
        self.b_q = torch.zeros(H, dtype=acc, device=device)
        self.b_k = torch.zeros(H, dtype=acc, device=device)

    def finish(self, weights: ScoringWeights):
        """(dw_q, dw_k, db_q, db_k) in the given weights' shapes and dtypes."""
        (w_q, w_k), dw_q, dw_k = weights.given, self.w_q, self.w_k
        if weights.full:
            dw_q, dw_k = (scoring_weight_grad(m, w.shape, weights.num_heads) for m, w in ((dw_q, w_q), (dw_k, w_k)))
        return dw_q.to(w_q.dtype), dw_k.to(w_k.dtype), self.b_q, self.b_k


def pool_backward(q, k, rows, token_slices, mask, weights, pools, dk_global, grads, dk_sink, dq_sink) -> None:
    """Backward through both poolings of one batch block, given dk_g = dL/dk_global (b, H, D).

    Pass 2 (`key_pass`) reads k and hands each chunk's dL/dk to dk_sink(rows, tokens, lhs, rhs) as the factors of
    lhs @ rhs ((b, T, 2H) @ (b, 2H, C)); pass 3 (`query_pass`) reads q and hands dL/dq (through the poolings only)
    to dq_sink the same way, so a caller writes them where it wants them. Scoring-weight gradients are added into
    `grads`. The math is in `_backward`'s docstring.
    """
    dq_g, dk_mean = key_pool_grads(pools, rows, dk_global)
    dw_eff = key_pass(k, rows, token_slices, mask, weights, pools, dk_mean, grads, dk_sink)
    dq_g = dq_g + key_scoring_grads(weights, pools.q_global[rows], dw_eff, grads)
    query_pass(q, rows, token_slices, mask, weights, pools, dq_g, grads, dq_sink)


def key_pool_grads(pools: PoolStatistics, rows: slice, dk_global: torch.Tensor):
    """(dL/dq_g through k_g = q_g * k_mean, dL/dk_mean), both (b, H, D)."""
    return dk_global * pools.k_mean[rows], dk_global * pools.q_global[rows]


def key_rows(weights: ScoringWeights, dk_mean: torch.Tensor, w_eff: torch.Tensor) -> torch.Tensor:
    """rhs (b, 2H, C) of dL/dk_i = [beta_i; dt_i] @ rhs: block-diag(dk_mean) over the scoring rows w_eff^T."""
    return torch.cat([block_diagonal(dk_mean), scoring_rows(w_eff, weights.full)], 1)


def key_softmax_grad(pools, rows, tokens, dbeta, beta_dbeta):
    """(beta, dt) of one chunk: the second pooling's weights and dL/d(score), from dbeta_i = k_i . dk_mean."""
    beta = _weights(pools.scores_k, rows, tokens, pools.shift_k[rows], pools.total_k[rows])  # (b, H, T)
    return beta, beta * (dbeta - beta_dbeta)


def key_pass(k, rows, token_slices, mask, weights, pools, dk_mean, grads, dk_sink) -> torch.Tensor:
    """Pass 2: the second pooling, k_mean = sum_i beta_i k_i, beta = softmax(k_i . w_eff + scale b_k).

    Hands dL/dk to dk_sink chunk by chunk; returns dw_eff = sum_i dt_i k_i, (b, C, H) or (b, H, D)."""
    acc = weights.acc
    w_eff = effective_key_scoring(weights, pools.q_global[rows])
    rows_k = key_rows(weights, dk_mean, w_eff)
    dw_eff = torch.zeros_like(w_eff)
    beta_dbeta = (pools.k_mean[rows] * dk_mean).sum(-1, keepdim=True)  # (b, H, 1) = sum_i beta_i dbeta_i
    dbeta_score = _Scorer(block_diagonal(dk_mean))
    for tokens in token_slices:
        kc = token_chunk(k, rows, tokens, acc, mask)
        beta, dt = key_softmax_grad(pools, rows, tokens, dbeta_score(kc), beta_dbeta)
        dk_sink(rows, tokens, torch.cat([beta, dt], 1).transpose(1, 2), rows_k)  # lhs (b, T, 2H)
        dw_eff += torch.bmm(kc.transpose(1, 2), dt.transpose(1, 2)) if weights.full else _pool(kc, dt)
        grads.b_k += weights.scale * dt.sum((0, 2))
    return dw_eff


def key_scoring_grads(weights: ScoringWeights, q_g: torch.Tensor, dw_eff: torch.Tensor, grads) -> torch.Tensor:
    """Adds w_k's gradient from dw_eff into grads; returns the part of dL/dq_g that flows through w_eff."""
    b, H, D = q_g.shape
    scale = weights.scale
    if weights.full:
        grads.w_k += scale * (q_g.reshape(b, H * D, 1) * dw_eff).sum(0)  # as the (C, H) matrix
        return scale * (dw_eff * weights.s_k).sum(2).view(b, H, D)
    grads.w_k += scale * (dw_eff * q_g).sum(0)
    return scale * dw_eff * weights.w_k


def query_pass(q, rows, token_slices, mask, weights, pools, dq_g, grads, dq_sink) -> None:
    """Pass 3: the first pooling, q_g = sum_i alpha_i q_i, alpha = softmax(scale (q_i . w_q + b_q))."""
    b, acc, scale = rows.stop - rows.start, weights.acc, weights.scale
    q_g = pools.q_global[rows]
    alpha_dalpha = (q_g * dq_g).sum(-1, keepdim=True)  # (b, H, 1) = sum_i alpha_i dalpha_i
    rows_q = torch.cat([block_diagonal(dq_g), scale * weights.rows_q.expand(b, -1, -1)], 1)
    dalpha_score = _Scorer(block_diagonal(dq_g))
    for tokens in token_slices:
        qc = token_chunk(q, rows, tokens, acc, mask)
        alpha = _weights(pools.scores_q, rows, tokens, pools.shift_q[rows], pools.total_q[rows])
        ds = alpha * (dalpha_score(qc) - alpha_dalpha)
        dq_sink(rows, tokens, torch.cat([alpha, ds], 1).transpose(1, 2), rows_q)
        if weights.full:
            grads.w_q += scale * torch.bmm(qc.transpose(1, 2), ds.transpose(1, 2)).sum(0)
        else:
            grads.w_q += scale * _pool(qc, ds).sum(0)
        grads.b_q += scale * ds.sum((0, 2))


class _FusedFastformerAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, w_q, w_k, b_q, b_k, mask, num_heads: int, scale: float, v_is_q: bool, chunk: int):
        B, N, C = q.shape
        acc = accumulation_dtype(q.dtype)
        weights = ScoringWeights(w_q, w_k, b_q, b_k, num_heads, scale, acc)
        pools = PoolStatistics.empty(B, N, num_heads, C // num_heads, acc, q.device)
        u = torch.empty_like(v)
        for rows, token_slices in row_blocks(B, N, chunk):
            pool_rows(q, k, rows, token_slices, mask, weights, pools)
            torch.mul(v[rows], pools.k_global(rows).to(v.dtype), out=u[rows])
            if mask is not None:
                u[rows].masked_fill_(~mask[rows, :, None], 0)
        ctx.save_for_backward(q, k, None if v_is_q else v, w_q, w_k, b_q, b_k, mask, *pools.tensors())
        ctx.meta = (num_heads, scale, chunk)
        return u

    @staticmethod
    def backward(ctx, grad_u):
        num_heads, scale, chunk = ctx.meta
        q, k, v, w_q, w_k, b_q, b_k, mask, *pools = ctx.saved_tensors
        weights = ScoringWeights(w_q, w_k, b_q, b_k, num_heads, scale, accumulation_dtype(q.dtype))
        dq, dk, dv, dw_q, dw_k, db_q, db_k = _backward(grad_u, q, k, v, mask, weights, PoolStatistics(*pools), chunk)
        return (
            dq,
            dk,
            dv,
            dw_q,
            dw_k,
            db_q if b_q is not None else None,
            db_k if b_k is not None else None,
            None,
            None,
            None,
            None,
            None,
        )


def _backward(g, q, k, v, mask, weights: ScoringWeights, pools: PoolStatistics, chunk: int):
    """Gradients (dq, dk, dv, dw_q, dw_k, db_q, db_k); v None means v is q, and then dv is added into dq.

    Per head, with g = grad_u, w_eff = scale w_k q_g, and alpha, beta rebuilt from the saved scores:
        dv_i = g_i * k_g                         dk_g = sum_i g_i * v_i                      (pass 1: g, v)
        dq_g = dk_g * k_mean + (score path)      dk_mean = dk_g * q_g
        dbeta_i = k_i . dk_mean                  dt_i = beta_i (dbeta_i - k_mean . dk_mean)  (pass 2: k)
        dk_i = beta_i dk_mean + dt_i w_eff       dw_eff = sum_i dt_i k_i -> dw_k; dq_g += scale dw_eff * w_k
        dalpha_i = q_i . dq_g                    ds_i = alpha_i (dalpha_i - q_g . dq_g)       (pass 3: q, g)
        dq_i = alpha_i dq_g + scale ds_i w_q     dw_q = scale sum_i ds_i q_i
    With full scoring w_q, w_k, w_eff are (C, H) matrices and the score terms matrix products. dk_i and dq_i are
    each one matrix product [weights; dscores]^T (T, 2H) @ [block-diag(d pooled); scoring rows] (2H, C).
    """
    B, N, C = q.shape
    H, acc = weights.num_heads, weights.acc
    value = q if v is None else v
    dq, dk = torch.empty_like(q), torch.empty_like(k)
    dv = None if v is None else torch.empty_like(v)
    grads = PoolGradients(weights, C, q.device)

    def dk_sink(rows, tokens, lhs, rhs):
        if k.dtype == acc:  # written in place: no temporary, no copy
            torch.bmm(lhs, rhs, out=dk[rows, tokens])
        else:
            dk[rows, tokens] = torch.bmm(lhs, rhs).to(k.dtype)

    def dq_sink(rows, tokens, lhs, rhs):
        dq_c = torch.bmm(lhs, rhs, out=dq[rows, tokens]) if q.dtype == acc else torch.bmm(lhs, rhs)
        if v is None:  # value path dv_i = g_i * k_g, added here since v is q
            dq_c.addcmul_(g[rows, tokens].to(acc), k_global)
            if mask is not None:
                dq_c.masked_fill_(~mask[rows, tokens, None], 0)
        if q.dtype != acc:
            dq[rows, tokens] = dq_c.to(q.dtype)

    for rows, token_slices in row_blocks(B, N, chunk):
        b = rows.stop - rows.start
        k_global = pools.k_global(rows)
        # pass 1: dk_g = sum_i g_i * v_i over real tokens (v is zeroed at padded ones)
        dk_global = torch.zeros(b, C, dtype=acc, device=q.device)
        for tokens in token_slices:
            dk_global += (g[rows, tokens].to(acc) * token_chunk(value, rows, tokens, acc, mask)).sum(1)
        pool_backward(
            q, k, rows, token_slices, mask, weights, pools, dk_global.view(b, H, C // H), grads, dk_sink, dq_sink
        )
        if dv is not None:
            torch.mul(g[rows], k_global.to(g.dtype), out=dv[rows])
            if mask is not None:
                dv[rows].masked_fill_(~mask[rows, :, None], 0)
    return dq, dk, dv, *grads.finish(weights)


def fastformer_attention_fused(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    num_heads: int,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    scale: float | None = None,
    chunk_tokens: int | None = None,
) -> torch.Tensor:
    """Fastformer attention (product interaction) on the token-major layout.

    q, k, v: (B, N, H * D), heads side by side as a Linear produces them; pass the same tensor as q and v for
    query-value sharing (its gradient is then accumulated once). w_q, w_k: (H, D) or (H, H, D) as in
    `fastformer_attention`; b_q, b_k: (H,) or None; mask: (B, N) bool, True = real. Returns u (B, N, H * D),
    zero at padded tokens. Same values as `fastformer_attention`, with a hand-written backward. chunk_tokens sets the
    size of the pieces the sequence is processed in (results do not depend on it beyond rounding); by default
    CHUNK_TOKENS on the CPU, where cache locality pays, and the whole batch at once on accelerators, where each
    piece costs kernel launches instead.
    """
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"q, k, v must share one shape (B, N, C); got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    scale, chunk_tokens = check_arguments(q, mask, w_q, w_k, num_heads, scale, chunk_tokens)
    if q.shape[1] == 0:  # no tokens: nothing to pool, an empty output (gradients flow, all zero-sized)
        return v * 0
    shared = v is q
    dtype = autocast_dtype(q)
    if dtype is not None:  # under autocast: the inputs in its dtype, the Function with autocast off
        q, k, v, w_q, w_k, b_q, b_k = cast_for_autocast(dtype, q, k, v, w_q, w_k, b_q, b_k)
        v = q if shared else v
        with torch.autocast(q.device.type, enabled=False):
            return _FusedFastformerAttention.apply(
                q, k, v, w_q, w_k, b_q, b_k, mask, num_heads, scale, shared, chunk_tokens
            )
    return _FusedFastformerAttention.apply(q, k, v, w_q, w_k, b_q, b_k, mask, num_heads, scale, shared, chunk_tokens)


def check_arguments(x, mask, w_q, w_k, num_heads: int, scale: float | None, chunk_tokens: int | None):
    """Validates the shapes shared by the fused functions; returns (scale, chunk_tokens) with their defaults:
    1/sqrt(D), and CHUNK_TOKENS on the CPU, where cache locality pays, or the whole batch at once on accelerators,
    where each piece costs kernel launches instead."""
    B, N, C = x.shape
    if C % num_heads:
        raise ValueError(f"channels {C} are not divisible by num_heads {num_heads}")
    head_size = C // num_heads
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        if tuple(w.shape) not in ((num_heads, head_size), (num_heads, num_heads, head_size)):
            raise ValueError(f"{name} must have shape (H, D) or (H, H, D) with H={num_heads}, D={head_size}")
    if mask is not None and (mask.dtype != torch.bool or tuple(mask.shape) != (B, N)):
        raise ValueError(f"mask must be a bool tensor of shape (B, N) = {(B, N)}")
    if chunk_tokens is None:
        chunk_tokens = CHUNK_TOKENS if x.device.type == "cpu" else max(1, B * N)
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    return head_size**-0.5 if scale is None else scale, int(chunk_tokens)
