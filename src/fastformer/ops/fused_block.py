"""The whole Fastformer attention block as one autograd Function, for the configurations the paper and the authors'
notebook train: product interaction, query-value sharing, one full transform, optional extra output dense.

    q = x W_query^T + b_query,  k = x W_key^T + b_key                  (B, N, C), heads side by side
    u = fastformer_attention(q, k, v=q)                                 the fused op's two poolings
    o = u W_r^T + b_r + q                                               transform, plus the query (not x)
    y = o W_o^T + b_o                                                   the notebook's dense; without it y = o

Why one Function: autograd around the op, the transform and the residual keeps q, k, u and o for backward and then
allocates dL/do, dL/du, dL/dq and dL/dk as separate whole tensors: about 7 N x C activations at the notebook block's
peak. Here:
- k is never formed. The second pooling uses k only linearly (scores k_i . w_eff, and k_mean = sum_i beta_i k_i), so
  both are read off x through W_key (`_pool_keys_from_x`), and dL/dk_i = [beta_i; dt_i] @ rhs has rank 2H per
  sequence, so the key path of dL/dx and dL/dW_key are thin (T, 2H) products (`_key_pass_from_x`). Of the 12 full
  (T, C) x (C, C) products of the four projections' forward and backward, 3 are gone.
- u is never stored: it is q * k_g, rebuilt chunk by chunk where the transform needs it.
- backward turns o's buffer into dL/do (o is needed only for W_o's gradient, taken first), folds the value path and
  the residual into it, and adds dL/dq straight into dL/dx chunk by chunk.
Forward saves q (and o with the output dense): about 4.4 activations at the training peak, output and dL/dx included.
`fastformer_block_reference` (naive.py, with the other references) composes the same block from the slow reference
op: the ground truth of the tests.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from fastformer.ops.fastformer_attention import accumulation_dtype, autocast_dtype, cast_for_autocast
from fastformer.ops.fused import (
    PoolGradients,
    PoolStatistics,
    ScoringWeights,
    block_diagonal,
    check_arguments,
    effective_key_scoring,
    key_pool_grads,
    key_rows,
    key_scoring_grads,
    key_softmax_grad,
    online_pool,
    pool_queries,
    query_pass,
    row_blocks,
    scoring_rows,
    token_chunk,
)


def _flat(t: torch.Tensor) -> torch.Tensor:
    """(b, T, C) block of a contiguous (B, N, C) tensor -> (b * T, C); the blocks `row_blocks` makes are contiguous."""
    return t.view(-1, t.shape[-1])


def _add_outer(acc_grad: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """acc_grad += a^T b for (M, C) token blocks, accumulated in acc_grad's dtype."""
    acc_grad.addmm_(a.t().to(acc_grad.dtype), b.to(acc_grad.dtype))


def _transform(q, k_global, rows: slice, tokens: slice, mask, w_r, b_r, out: torch.Tensor) -> torch.Tensor:
    """o = u W_r^T + b_r + q on one block, u = q * k_g rebuilt on the fly; written into out, returned as (b*T, C)."""
    u = q[rows, tokens] * k_global  # (b, T, C), used from cache and dropped
    if mask is not None:
        u.masked_fill_(~mask[rows, tokens, None], 0)
    o_c = _flat(out[rows, tokens])
    if b_r is None:
        torch.mm(_flat(u), w_r.t(), out=o_c)
    else:
        torch.addmm(b_r, _flat(u), w_r.t(), out=o_c)
    return o_c.add_(_flat(q[rows, tokens]))


class _KeyProjection:
    """k = x W_key^T + b_key, never computed: both uses of k in the second pooling are linear in k."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, acc: torch.dtype):
        self.weight = weight.to(acc)  # (C_out, C_in)
        self.bias = None if bias is None else bias.to(acc)

    def scoring(self, weights: ScoringWeights, q_g: torch.Tensor):
        """The key scores k_i . w_eff + scale b_k as x_i @ M + c: M (b, C, H), c (b, H) or None."""
        w_eff = effective_key_scoring(weights, q_g)
        s_eff = scoring_rows(w_eff, weights.full).transpose(1, 2)  # (b, C_out, H)
        m = torch.matmul(self.weight.t(), s_eff)  # (b, C_in, H)
        c = None if self.bias is None else torch.einsum("o,boh->bh", self.bias, s_eff)
        if weights.b_k is not None:
            c = weights.b_k.expand(q_g.shape[0], -1) if c is None else c + weights.b_k
        return m, c

    def per_head(self, pooled_x: torch.Tensor, num_heads: int) -> torch.Tensor:
        """(b, H, C_in) -> (b, H, D): each head's slice of (pooled x) W_key^T + b_key."""
        C = self.weight.shape[0]
        w = self.weight.view(num_heads, C // num_heads, -1)  # (H, D, C_in)
        out = torch.einsum("bhc,hdc->bhd", pooled_x, w)
        return out if self.bias is None else out + self.bias.view(num_heads, -1)


def _pool_keys_from_x(
    x, rows, token_slices, mask, weights: ScoringWeights, pools: PoolStatistics, key: _KeyProjection
) -> None:
    """The second pooling read off x: k_mean = sum_i beta_i k_i = (sum_i beta_i x_i) W_key^T + b_key (the weights
    sum to 1), scores k_i . w_eff = x_i @ (W_key^T w_eff) + b_key . w_eff. Saves the key projection's matmul and k."""
    m, c = key.scoring(weights, pools.q_global[rows])
    x_mean, pools.shift_k[rows], total = online_pool(
        x,
        rows,
        token_slices,
        mask,
        lambda xc: torch.bmm(xc, m).transpose(1, 2),
        c,
        weights.acc,
        pools.scores_k,
        pool=lambda xc, e: torch.bmm(e, xc),  # (b, H, C): each head's weighted mean of the whole x_i
    )
    pools.total_k[rows] = total
    k_mean = key.per_head(x_mean, weights.num_heads)
    pools.k_mean[rows] = torch.where(total[..., None] > 0, k_mean, 0)  # no real token: 0, as the op gives


def _key_pass_from_x(
    x, rows, token_slices, mask, weights, pools, key: _KeyProjection, dk_mean, grads, dx, dw_key, db_key
) -> torch.Tensor:
    """Backward pass 2 of the fused op (`key_pass`) with k never formed. dL/dk_i = lhs_i @ rhs with lhs_i =
    [beta_i; dt_i] (2H) and rhs (2H, C) fixed per sequence, so
        dL/dx_i (key path) = lhs_i @ (rhs W_key)              a (T, 2H) @ (2H, C) product, not (T, C) @ (C, C)
        dL/dW_key = rhs^T (sum_i lhs_i^T x_i),  dL/db_key = (sum_i lhs_i) rhs
    and dbeta_i = k_i . dk_mean and dw_eff = sum_i dt_i k_i read off x as in the forward. Writes the key path into
    dx (the query pass adds the rest), adds into dw_key, db_key and grads; returns dw_eff like `key_pass`."""
    b, H, C = rows.stop - rows.start, weights.num_heads, x.shape[-1]
    acc = weights.acc
    w_eff = effective_key_scoring(weights, pools.q_global[rows])
    rows_k = key_rows(weights, dk_mean, w_eff)  # (b, 2H, C_out)
    dk_mean_rows = block_diagonal(dk_mean)  # (b, H, C_out)
    a = torch.matmul(dk_mean_rows, key.weight)  # (b, H, C_in): dbeta_i = x_i . a_h + a0_h
    a0 = None if key.bias is None else dk_mean_rows @ key.bias  # (b, H)
    r = torch.matmul(rows_k, key.weight)  # (b, 2H, C_in)
    beta_dbeta = (pools.k_mean[rows] * dk_mean).sum(-1, keepdim=True)  # (b, H, 1) = sum_i beta_i dbeta_i
    lhs_x = torch.zeros(b, 2 * H, C, dtype=acc, device=x.device)  # sum_i lhs_i^T x_i
    lhs_sum = torch.zeros(b, 2 * H, dtype=acc, device=x.device)
    for tokens in token_slices:
        xc = token_chunk(x, rows, tokens, acc, mask)  # (b, T, C)
        dbeta = torch.bmm(a, xc.transpose(1, 2))  # (b, H, T)
        if a0 is not None:
            dbeta = dbeta + a0[..., None]
        beta, dt = key_softmax_grad(pools, rows, tokens, dbeta, beta_dbeta)
        lhs = torch.cat([beta, dt], 1)  # (b, 2H, T)
        if dx is not None:
            if x.dtype == acc:
                torch.bmm(lhs.transpose(1, 2), r, out=dx[rows, tokens])
            else:
                dx[rows, tokens] = torch.bmm(lhs.transpose(1, 2), r).to(x.dtype)
        lhs_x.baddbmm_(lhs, xc)
        lhs_sum += lhs.sum(-1)
        grads.b_k += weights.scale * dt.sum((0, 2))
    dw_key += torch.einsum("bjo,bji->oi", rows_k, lhs_x)
    db_key += torch.einsum("bj,bjo->o", lhs_sum, rows_k)
    # dw_eff = sum_i dt_i k_i = (sum_i dt_i x_i) W_key^T + (sum_i dt_i) b_key, per head h: (b, H, C_out)
    k_dt = torch.matmul(lhs_x[:, H:], key.weight.t())
    if key.bias is not None:
        k_dt = k_dt + lhs_sum[:, H:, None] * key.bias
    if weights.full:
        return k_dt.transpose(1, 2)  # (b, C, H)
    heads = torch.arange(H, device=x.device)
    return k_dt.view(b, H, H, C // H)[:, heads, heads]  # (b, H, D): each head's own slice


class _FusedFastformerBlock(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, x, mask, w_query, b_query, w_key, b_key, w_q, w_k, b_q, b_k, w_r, b_r, w_o, b_o, num_heads, scale, chunk
    ):
        B, N, C = x.shape
        acc = accumulation_dtype(x.dtype)
        q = F.linear(x, w_query, b_query)  # (B, N, C)
        weights = ScoringWeights(w_q, w_k, b_q, b_k, num_heads, scale, acc)
        key = _KeyProjection(w_key, b_key, acc)
        pools = PoolStatistics.empty(B, N, num_heads, C // num_heads, acc, x.device)
        o = torch.empty_like(q)
        y = o if w_o is None else torch.empty_like(q)
        for rows, token_slices in row_blocks(B, N, chunk):
            pool_queries(q, rows, token_slices, mask, weights, pools)
            _pool_keys_from_x(x, rows, token_slices, mask, weights, pools, key)
            k_global = pools.k_global(rows).to(x.dtype)  # (b, 1, C)
            for tokens in token_slices:
                o_c = _transform(q, k_global, rows, tokens, mask, w_r, b_r, out=o)
                if w_o is not None:
                    if b_o is None:
                        torch.mm(o_c, w_o.t(), out=_flat(y[rows, tokens]))
                    else:
                        torch.addmm(b_o, o_c, w_o.t(), out=_flat(y[rows, tokens]))
        ctx.save_for_backward(x, mask, w_query, w_key, b_key, w_q, w_k, b_q, b_k, w_r, b_r, w_o, q, *pools.tensors())
        # o is kept as an attribute, not a saved tensor: the first backward overwrites it with dL/do, which the
        # saved-tensor version check would then refuse on a second backward (retain_graph, gradcheck); a second
        # backward rebuilds o instead
        ctx.o = None if w_o is None else o
        ctx.meta = (num_heads, scale, chunk, b_query is not None, b_key is not None, b_o is not None)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        num_heads, scale, chunk, has_b_query, has_b_key, has_b_o = ctx.meta
        x, mask, w_query, w_key, b_key, w_q, w_k, b_q, b_k, w_r, b_r, w_o, q, *pools = ctx.saved_tensors
        pools = PoolStatistics(*pools)
        o, ctx.o = ctx.o, None  # from now on only this call holds o
        if w_o is not None and o is None:  # a second backward through the same graph: rebuild o
            o = torch.empty_like(q)
            for rows, token_slices in row_blocks(*x.shape[:2], chunk):
                for tokens in token_slices:
                    _transform(q, pools.k_global(rows).to(x.dtype), rows, tokens, mask, w_r, b_r, out=o)
        B, N, C = x.shape
        acc = accumulation_dtype(x.dtype)
        weights = ScoringWeights(w_q, w_k, b_q, b_k, num_heads, scale, acc)
        key = _KeyProjection(w_key, b_key, acc)
        grads = PoolGradients(weights, C, x.device)
        g = grad_y.contiguous()

        def zeros(*shape):
            return torch.zeros(*shape, dtype=acc, device=x.device)

        dw_query, dw_key, dw_r = zeros(C, C), zeros(C, C), zeros(C, C)
        db_query, db_key, db_r = zeros(C), zeros(C), zeros(C)
        dw_o = db_o = None
        if w_o is not None:  # W_o's gradient needs o; after it, o's buffer becomes dL/do
            dw_o, db_o = zeros(C, C), _flat(g).sum(0, dtype=acc)
            _add_outer(dw_o, _flat(g), _flat(o))
            grad_o = torch.matmul(g, w_o, out=o)
        else:
            grad_o = g
        # e = dL/do + (value path) dL/du * k_g: everything dL/dq gets besides the poolings; o's buffer when there
        # is one (overwritten chunk by chunk), else a new one (grad_y belongs to the caller)
        e = grad_o if w_o is not None else torch.empty_like(g)
        need_dx = ctx.needs_input_grad[0]
        dx = torch.empty_like(x) if need_dx else None

        def dq_sink(rows, tokens, lhs, rhs):
            dq_c = _flat(torch.baddbmm(e[rows, tokens].to(acc), lhs, rhs).to(x.dtype))
            if need_dx:
                _flat(dx[rows, tokens]).addmm_(dq_c, w_query)
            _add_outer(dw_query, dq_c, _flat(x[rows, tokens]))
            db_query.add_(dq_c.sum(0, dtype=acc))

        for rows, token_slices in row_blocks(B, N, chunk):
            b = rows.stop - rows.start
            k_global = pools.k_global(rows).to(x.dtype)  # (b, 1, C)
            dk_global = zeros(b, C)
            # pass 1: the transform and the value path, chunk by chunk
            for tokens in token_slices:
                do_c = grad_o[rows, tokens]  # (b, T, C)
                q_c = q[rows, tokens]
                u = q_c * k_global  # rebuilt, never stored
                if mask is not None:
                    u.masked_fill_(~mask[rows, tokens, None], 0)
                _add_outer(dw_r, _flat(do_c), _flat(u))
                if b_r is not None:
                    db_r.add_(_flat(do_c).sum(0, dtype=acc))
                du = torch.matmul(do_c, w_r)  # (b, T, C)
                if mask is not None:
                    du.masked_fill_(~mask[rows, tokens, None], 0)
                dk_global += (du.to(acc) * token_chunk(q, rows, tokens, acc, mask)).sum(1)  # sum_i du_i * v_i
                if e is grad_o:  # in place: o's buffer
                    do_c.addcmul_(du, k_global)
                else:
                    torch.addcmul(do_c, du, k_global, out=e[rows, tokens])
            dq_g, dk_mean = key_pool_grads(pools, rows, dk_global.view(b, num_heads, -1))
            dw_eff = _key_pass_from_x(
                x, rows, token_slices, mask, weights, pools, key, dk_mean, grads, dx, dw_key, db_key
            )
            dq_g = dq_g + key_scoring_grads(weights, pools.q_global[rows], dw_eff, grads)
            query_pass(q, rows, token_slices, mask, weights, pools, dq_g, grads, dq_sink)
        dw_q, dw_k, db_q, db_k = grads.finish(weights)

        def cast(t, like):
            return t.to(like.dtype)

        return (
            dx,
            None,
            cast(dw_query, w_query),
            cast(db_query, w_query) if has_b_query else None,
            cast(dw_key, w_key),
            cast(db_key, w_key) if has_b_key else None,
            dw_q,
            dw_k,
            None if b_q is None else db_q.to(b_q.dtype),
            None if b_k is None else db_k.to(b_k.dtype),
            cast(dw_r, w_r),
            cast(db_r, w_r) if b_r is not None else None,
            None if w_o is None else cast(dw_o, w_o),
            cast(db_o, w_o) if has_b_o else None,
            None,
            None,
            None,
        )


def fastformer_block_fused(
    x: torch.Tensor,
    w_query: torch.Tensor,
    b_query: torch.Tensor | None,
    w_key: torch.Tensor,
    b_key: torch.Tensor | None,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_transform: torch.Tensor,
    b_transform: torch.Tensor | None,
    w_out: torch.Tensor | None = None,
    b_out: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    *,
    num_heads: int,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    scale: float | None = None,
    chunk_tokens: int | None = None,
) -> torch.Tensor:
    """The Fastformer attention block (query-value sharing, product interaction), x (B, N, C) -> (B, N, C).

    w_query, w_key, w_transform, w_out: (C, C) Linear weights (out x in) with biases (C,) or None; w_out None
    leaves out the output dense (the paper's block). w_q, w_k: the scoring weights, (H, D) per head or (H, H, D)
    full as in `fastformer_attention`, with biases b_q, b_k (H,) or None; scale defaults to 1/sqrt(D). mask: (B, N)
    bool, True = real token; at padded tokens u is 0, so the output there is b_transform + q (then the dense), as in
    the unfused block. Same values as `fastformer_block_reference`, with about 4.4 N x C activations at the peak of
    forward + backward instead of 7, and 9 instead of 12 full-width matrix products (k is never formed).
    chunk_tokens as in `fastformer_attention_fused`.
    """
    scale, chunk_tokens = check_arguments(x, mask, w_q, w_k, num_heads, scale, chunk_tokens)
    if x.shape[1] == 0:  # no tokens: the block's empty output, composed so that every weight is in the graph
        q = F.linear(x, w_query, b_query)
        o = F.linear(q * 0, w_transform, b_transform) + q
        return o if w_out is None else F.linear(o, w_out, b_out)
    C = x.shape[-1]
    for name, w in dict(w_query=w_query, w_key=w_key, w_transform=w_transform, w_out=w_out).items():
        if w is not None and tuple(w.shape) != (C, C):
            raise ValueError(f"{name} must have shape (C, C) = {(C, C)}, got {tuple(w.shape)}")
    tensors = (x, w_query, b_query, w_key, b_key, w_q, w_k, b_q, b_k, w_transform, b_transform, w_out, b_out)
    dtype = autocast_dtype(x)
    if dtype is not None:  # under autocast (bf16 on CPU, fp16 / bf16 on GPU): the block in its dtype, autocast off
        tensors = cast_for_autocast(dtype, *tensors)
    x, weights = tensors[0], tensors[1:]  # the weights in _FusedFastformerBlock.forward's order
    with torch.autocast(x.device.type, enabled=False) if dtype is not None else contextlib.nullcontext():
        return _FusedFastformerBlock.apply(x.contiguous(), mask, *weights, num_heads, scale, chunk_tokens)
