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

from fastformer.ops.fastformer_attention import accumulation_dtype

# Tokens per chunk: 2048 x 256 channels x 4 bytes = 2 MiB, well inside the L3 cache of a current CPU.
CHUNK_TOKENS = 2048


def scoring_matrix(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(H, D) per-head vectors or (H, H, D) full weights -> S (C, H) with scores = X @ S."""
    if w.dim() == 2:  # S[h * D + d, h] = w[h, d], zero off the head's own block
        return _block_diag(w).t()
    return w.permute(1, 2, 0).reshape(-1, num_heads)  # S[g * D + d, h] = w[h, g, d]


def scoring_weight_grad(grad_s: torch.Tensor, w_shape: torch.Size, num_heads: int) -> torch.Tensor:
    """Gradient of `scoring_matrix` pulled back to w's shape."""
    if len(w_shape) == 2:
        head_size = w_shape[1]
        blocks = grad_s.view(num_heads, head_size, num_heads)  # [h, d, h']
        heads = torch.arange(num_heads, device=grad_s.device)
        return blocks[heads, :, heads]  # (H, D): each head's own block
    return grad_s.view(num_heads, -1, num_heads).permute(2, 0, 1)  # [g, d, h] -> (h, g, d)


def _blocks(B: int, N: int, chunk: int):
    """(batch slice, list of token slices) covering (B, N) in pieces of about `chunk` tokens."""
    if N >= chunk:
        token_slices = [slice(n, min(n + chunk, N)) for n in range(0, N, chunk)]
        return [(slice(b, b + 1), token_slices) for b in range(B)]
    rows = max(1, chunk // N)
    return [(slice(b, min(b + rows, B)), [slice(0, N)]) for b in range(0, B, rows)]


def _block_diag(vec: torch.Tensor) -> torch.Tensor:
    """(..., H, D) -> (..., H, H * D) with vec[h] on head h's own channels, zero elsewhere."""
    H = vec.shape[-2]
    eye = torch.eye(H, dtype=vec.dtype, device=vec.device)
    return (vec[..., :, None, :] * eye[:, :, None]).flatten(-2)


def _chunk(x: torch.Tensor, rows: slice, tokens: slice, acc: torch.dtype, mask: torch.Tensor | None):
    """One block of x (B, N, C) in the accumulation dtype, padded slots zeroed so no garbage reaches a sum."""
    xc = x[rows, tokens].to(acc)
    if mask is not None:
        xc = xc.masked_fill(~mask[rows, tokens, None], 0)
    return xc


class _Scorer:
    """Scores (b, H, T) of token chunks (b, T, C): per-head vectors (b, H, D) or a full matrix (b, C, H)."""

    def __init__(self, w: torch.Tensor, full: bool):
        self.w, self.full = w, full

    def __call__(self, xc: torch.Tensor) -> torch.Tensor:
        if self.full:
            return torch.bmm(xc, self.w).transpose(1, 2)
        b, T, C = xc.shape
        H = self.w.shape[-2]
        return torch.einsum("bnhd,bhd->bhn", xc.view(b, T, H, C // H), self.w)


def _pool(xc: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_n weights[b, h, n] * xc[b, n, head h's channels] -> (b, H, D); xc (b, T, C), weights (b, H, T)."""
    b, T, C = xc.shape
    H = weights.shape[1]
    return torch.einsum("bnhd,bhn->bhd", xc.view(b, T, H, C // H), weights)


def _online_pool(x, rows, token_slices, mask, score, bias, acc, scores_out):
    """Softmax-weighted sum over tokens of one batch block, one pass over the chunks (online softmax).

    Writes the masked scores into scores_out[rows] (B, H, N); returns (pooled (b, H, D), shift (b, H), total (b, H))
    with softmax weights = exp(scores - shift) / total.
    """
    b = rows.stop - rows.start
    H = scores_out.shape[1]
    D = x.shape[-1] // H
    running_max = torch.full((b, H), float("-inf"), dtype=acc, device=x.device)
    total = torch.zeros(b, H, dtype=acc, device=x.device)
    pooled = torch.zeros(b, H, D, dtype=acc, device=x.device)
    for tokens in token_slices:
        xc = _chunk(x, rows, tokens, acc, mask)
        s = score(xc)  # (b, H, T)
        if bias is not None:
            s = s + bias[:, None]
        if mask is not None:
            s = s.masked_fill(~mask[rows, None, tokens], float("-inf"))
        scores_out[rows, :, tokens] = s
        new_max = torch.maximum(running_max, s.amax(-1))
        shift = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
        rescale = torch.exp(running_max - shift)  # 0 while nothing was seen (max = -inf)
        e = torch.exp(s - shift[..., None])  # exp(-inf) = 0 at padded tokens
        total = total * rescale + e.sum(-1)
        pooled = pooled * rescale[..., None] + _pool(xc, e)
        running_max = new_max
    shift = torch.where(torch.isfinite(running_max), running_max, torch.zeros_like(running_max))
    return pooled / total.clamp_min(torch.finfo(acc).tiny)[..., None], shift, total


def _weights(scores, rows, tokens, shift, total):
    """Softmax weights (b, H, T) of one chunk, from the saved scores and row statistics."""
    return (
        torch.exp(scores[rows, :, tokens] - shift[..., None])
        / total.clamp_min(torch.finfo(total.dtype).tiny)[..., None]
    )


class _FusedFastformerAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, w_q, w_k, b_q, b_k, mask, num_heads: int, scale: float, v_is_q: bool, chunk: int):
        B, N, C = q.shape
        H, D = num_heads, C // num_heads
        acc = accumulation_dtype(q.dtype)
        full = w_q.dim() == 3
        w_q_acc, w_k_acc = w_q.to(acc), w_k.to(acc)
        b_q_acc = None if b_q is None else scale * b_q.to(acc)
        b_k_acc = None if b_k is None else scale * b_k.to(acc)
        scores_q = torch.empty(B, H, N, dtype=acc, device=q.device)
        scores_k = torch.empty(B, H, N, dtype=acc, device=q.device)
        stats = torch.empty(4, B, H, dtype=acc, device=q.device)  # shift_q, total_q, shift_k, total_k
        q_global = torch.empty(B, H, D, dtype=acc, device=q.device)
        k_mean = torch.empty(B, H, D, dtype=acc, device=q.device)
        u = torch.empty_like(v)
        for rows, token_slices in _blocks(B, N, chunk):
            b = rows.stop - rows.start
            if full:
                score_q = _Scorer(scale * scoring_matrix(w_q_acc, H).expand(b, -1, -1), True)
            else:
                score_q = _Scorer(scale * w_q_acc.expand(b, H, D), False)
            q_global[rows], stats[0, rows], stats[1, rows] = _online_pool(
                q, rows, token_slices, mask, score_q, b_q_acc, acc, scores_q
            )
            # scores of p_i = q_g * k_i, read off k_i with q_g folded into the scoring weights
            if full:
                s_k_eff = scale * q_global[rows].reshape(b, C, 1) * scoring_matrix(w_k_acc, H)  # (b, C, H)
                score_k = _Scorer(s_k_eff, True)
            else:
                score_k = _Scorer(scale * w_k_acc * q_global[rows], False)
            k_mean[rows], stats[2, rows], stats[3, rows] = _online_pool(
                k, rows, token_slices, mask, score_k, b_k_acc, acc, scores_k
            )
            k_global = (q_global[rows] * k_mean[rows]).reshape(b, 1, C).to(v.dtype)
            torch.mul(v[rows], k_global, out=u[rows])
            if mask is not None:
                u[rows].masked_fill_(~mask[rows, :, None], 0)
        ctx.save_for_backward(q, k, None if v_is_q else v, w_q, w_k, scores_q, scores_k, stats, q_global, k_mean, mask)
        ctx.meta = (num_heads, scale, b_q is not None, b_k is not None, chunk)
        return u

    @staticmethod
    def backward(ctx, grad_u):
        num_heads, scale, has_b_q, has_b_k, chunk = ctx.meta
        dq, dk, dv, dw_q, dw_k, db_q, db_k = _backward(grad_u, *ctx.saved_tensors, num_heads, scale, chunk)
        return (dq, dk, dv, dw_q, dw_k, db_q if has_b_q else None, db_k if has_b_k else None,
                None, None, None, None, None)  # fmt: skip


def _backward(g, q, k, v, w_q, w_k, scores_q, scores_k, stats, q_global, k_mean, mask, num_heads, scale, chunk):
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
    H, D = num_heads, C // num_heads
    acc = scores_q.dtype
    full = w_q.dim() == 3
    w_q_acc, w_k_acc = w_q.to(acc), w_k.to(acc)
    s_q = scoring_matrix(w_q_acc, H) if full else None  # (C, H)
    s_k = scoring_matrix(w_k_acc, H) if full else None
    shift_q, total_q, shift_k, total_k = stats
    value = q if v is None else v
    dq, dk = torch.empty_like(q), torch.empty_like(k)
    dv = None if v is None else torch.empty_like(v)
    # full scoring accumulates gradients of the (C, H) scoring matrices, mapped back to (H, H, D) at the end
    dw_q = torch.zeros(C, H, dtype=acc, device=q.device) if full else torch.zeros_like(w_q_acc)
    dw_k = torch.zeros(C, H, dtype=acc, device=q.device) if full else torch.zeros_like(w_k_acc)
    db_q = torch.zeros(H, dtype=acc, device=q.device)
    db_k = torch.zeros(H, dtype=acc, device=q.device)

    for rows, token_slices in _blocks(B, N, chunk):
        b = rows.stop - rows.start
        q_g, k_m = q_global[rows], k_mean[rows]  # (b, H, D)
        k_global = (q_g * k_m).reshape(b, 1, C)

        # pass 1: dk_g = sum_i g_i * v_i over real tokens (v is zeroed at padded ones)
        dk_global = torch.zeros(b, C, dtype=acc, device=q.device)
        for tokens in token_slices:
            dk_global += (g[rows, tokens].to(acc) * _chunk(value, rows, tokens, acc, mask)).sum(1)
        dk_global = dk_global.view(b, H, D)
        dq_g = dk_global * k_m
        dk_mean = dk_global * q_g
        beta_dbeta = (k_m * dk_mean).sum(-1, keepdim=True)  # (b, H, 1) = sum_i beta_i dbeta_i

        # pass 2: second pooling, k_mean = sum_i beta_i k_i, beta = softmax(k_i . w_eff + scale b_k)
        if full:
            w_eff = scale * q_g.reshape(b, C, 1) * s_k  # (b, C, H)
            rows_k = torch.cat([_block_diag(dk_mean), w_eff.transpose(1, 2)], 1)  # (b, 2H, C)
            dw_eff = torch.zeros(b, C, H, dtype=acc, device=q.device)
        else:
            w_eff = scale * w_k_acc * q_g  # (b, H, D)
            rows_k = torch.cat([_block_diag(dk_mean), _block_diag(w_eff)], 1)
            dw_eff = torch.zeros(b, H, D, dtype=acc, device=q.device)
        dbeta_score = _Scorer(dk_mean, False)
        for tokens in token_slices:
            kc = _chunk(k, rows, tokens, acc, mask)
            beta = _weights(scores_k, rows, tokens, shift_k[rows], total_k[rows])  # (b, H, T)
            dt = beta * (dbeta_score(kc) - beta_dbeta)
            lhs = torch.cat([beta, dt], 1).transpose(1, 2)  # (b, T, 2H)
            if k.dtype == acc:  # written in place: no temporary, no copy
                torch.bmm(lhs, rows_k, out=dk[rows, tokens])
            else:
                dk[rows, tokens] = torch.bmm(lhs, rows_k).to(k.dtype)
            dw_eff += torch.bmm(kc.transpose(1, 2), dt.transpose(1, 2)) if full else _pool(kc, dt)
            db_k += scale * dt.sum((0, 2))
        if full:
            dw_k += scale * (q_g.reshape(b, C, 1) * dw_eff).sum(0)  # as the (C, H) matrix; mapped back below
            dq_g = dq_g + scale * (dw_eff * s_k).sum(2).view(b, H, D)
        else:
            dw_k += scale * (dw_eff * q_g).sum(0)
            dq_g = dq_g + scale * dw_eff * w_k_acc
        alpha_dalpha = (q_g * dq_g).sum(-1, keepdim=True)  # (b, H, 1) = sum_i alpha_i dalpha_i

        # pass 3: first pooling, q_g = sum_i alpha_i q_i, alpha = softmax(scale (q_i . w_q + b_q))
        rows_q = torch.cat([_block_diag(dq_g), scale * (s_q.t().expand(b, -1, -1) if full else
                                                         _block_diag(w_q_acc).expand(b, -1, -1))], 1)  # fmt: skip
        dalpha_score = _Scorer(dq_g, False)
        for tokens in token_slices:
            qc = _chunk(q, rows, tokens, acc, mask)
            alpha = _weights(scores_q, rows, tokens, shift_q[rows], total_q[rows])
            ds = alpha * (dalpha_score(qc) - alpha_dalpha)
            lhs = torch.cat([alpha, ds], 1).transpose(1, 2)  # (b, T, 2H)
            dq_c = torch.bmm(lhs, rows_q, out=dq[rows, tokens]) if q.dtype == acc else torch.bmm(lhs, rows_q)
            if v is None:  # value path dv_i = g_i * k_g, added here since v is q
                dq_c.addcmul_(g[rows, tokens].to(acc), k_global)
                if mask is not None:
                    dq_c.masked_fill_(~mask[rows, tokens, None], 0)
            if q.dtype != acc:
                dq[rows, tokens] = dq_c.to(q.dtype)
            if full:
                dw_q += scale * torch.bmm(qc.transpose(1, 2), ds.transpose(1, 2)).sum(0)
            else:
                dw_q += scale * _pool(qc, ds).sum(0)
            db_q += scale * ds.sum((0, 2))
        if dv is not None:
            torch.mul(g[rows], k_global.to(g.dtype), out=dv[rows])
            if mask is not None:
                dv[rows].masked_fill_(~mask[rows, :, None], 0)

    if full:
        dw_q, dw_k = (scoring_weight_grad(m, w.shape, H) for m, w in ((dw_q, w_q), (dw_k, w_k)))
    return dq, dk, dv, dw_q.to(w_q.dtype), dw_k.to(w_k.dtype), db_q, db_k


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
    B, N, C = q.shape
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"q, k, v must share one shape (B, N, C); got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if C % num_heads:
        raise ValueError(f"channels {C} are not divisible by num_heads {num_heads}")
    head_size = C // num_heads
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        if tuple(w.shape) not in ((num_heads, head_size), (num_heads, num_heads, head_size)):
            raise ValueError(f"{name} must have shape (H, D) or (H, H, D) with H={num_heads}, D={head_size}")
    if mask is not None and (mask.dtype != torch.bool or tuple(mask.shape) != (B, N)):
        raise ValueError(f"mask must be a bool tensor of shape (B, N) = {(B, N)}")
    scale = head_size**-0.5 if scale is None else scale
    if chunk_tokens is None:
        chunk_tokens = CHUNK_TOKENS if q.device.type == "cpu" else max(1, B * N)
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    return _FusedFastformerAttention.apply(
        q, k, v, w_q, w_k, b_q, b_k, mask, num_heads, scale, v is q, int(chunk_tokens)
    )
