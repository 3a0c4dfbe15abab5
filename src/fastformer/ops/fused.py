"""Fused Fastformer attention: one autograd Function over the token-major layout (B, N, H * D).

Two facts make the op cheap in memory and in passes over the data:

1. The key scores need no p_i = q_g * k_i tensor. Since q_g is constant over tokens,
       w_k . p_i = (w_k * q_g) . k_i    and    k_g = sum_i beta_i p_i = q_g * sum_i beta_i k_i,
   so the second pooling reads k directly with an "effective" scoring matrix.
2. Every per-head reduction is a small matrix product on the (B, N, C = H * D) layout. A scoring matrix
   S (C, H) holds each head's scoring vector on its own rows (block-diagonal, the paper) or a full
   Linear(C -> H) weight (the notebook); pooling is alpha^T X followed by taking each head's own block.
   These products cost 2 N C H flops each, about H / (4 C) of one C x C projection.

Forward saves q, k (and v when it is not q), the two softmaxes (B, N, H) and the pooled vectors; nothing
of size N x C is created except the output. Backward recomputes the rest. The math is written out in
`_backward`; `fastformer_attention_reference` (naive.py) is the ground truth the tests compare with.
"""

from __future__ import annotations

import torch

from fastformer.ops.fastformer_attention import accumulation_dtype, masked_softmax


def scoring_matrix(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(H, D) per-head vectors or (H, H, D) full weights -> S (C, H) with scores = X @ S."""
    if w.dim() == 2:  # S[h * D + d, h] = w[h, d], zero off the head's own block
        eye = torch.eye(num_heads, dtype=w.dtype, device=w.device)
        return (w[:, :, None] * eye[:, None, :]).reshape(-1, num_heads)
    return w.permute(1, 2, 0).reshape(-1, num_heads)  # S[g * D + d, h] = w[h, g, d]


def scoring_weight_grad(grad_s: torch.Tensor, w_shape: torch.Size, num_heads: int) -> torch.Tensor:
    """Gradient of `scoring_matrix` pulled back to w's shape."""
    if len(w_shape) == 2:
        head_size = w_shape[1]
        blocks = grad_s.view(num_heads, head_size, num_heads)  # [h, d, h']
        heads = torch.arange(num_heads, device=grad_s.device)
        return blocks[heads, :, heads]  # (H, D): each head's own block
    return grad_s.view(num_heads, -1, num_heads).permute(2, 0, 1)  # [g, d, h] -> (h, g, d)


def head_membership(num_heads: int, head_size: int, device, dtype) -> torch.Tensor:
    """M (C, H) with M[h * D + d, h] = 1: spreads per-head values over their channels, M @ x or x @ M.T."""
    return torch.eye(num_heads, device=device, dtype=dtype).repeat_interleave(head_size, dim=0)


def own_blocks(pooled: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, H, C) = weights of head h applied to every channel -> (B, C): head h's weights on its own channels."""
    B, H, C = pooled.shape
    heads = torch.arange(H, device=pooled.device)
    return pooled.view(B, H, H, C // H)[:, heads, heads].reshape(B, C)


def _sum_of_products(a: torch.Tensor, b: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """sum_n a[:, n] * b[:, n] for (B, N, C) tensors, in chunks so that no N x C temporary is made."""
    total = torch.zeros(a.shape[0], a.shape[2], dtype=accumulation_dtype(a.dtype), device=a.device)
    for start in range(0, a.shape[1], chunk):
        total += (a[:, start : start + chunk] * b[:, start : start + chunk]).sum(1, dtype=total.dtype)
    return total


class _FusedFastformerAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, w_q, w_k, b_q, b_k, mask, num_heads: int, scale: float, v_is_q: bool):
        B, N, C = q.shape
        acc = accumulation_dtype(q.dtype)
        if mask is not None:
            # zero padded slots: garbage there (even NaN) must not reach a sum through a zero weight
            pad = ~mask[..., None]
            q, k = q.masked_fill(pad, 0), k.masked_fill(pad, 0)
            v = q if v_is_q else v.masked_fill(pad, 0)
        xq, xk = q.to(acc), k.to(acc)  # no copy for float32 / float64
        s_q, s_k = scoring_matrix(w_q.to(acc), num_heads), scoring_matrix(w_k.to(acc), num_heads)
        mask3 = None if mask is None else mask[..., None]  # (B, N, 1)

        scores = torch.matmul(xq, s_q)  # (B, N, H)
        if b_q is not None:
            scores = scores + b_q.to(acc)
        alpha = masked_softmax((scores * scale).transpose(1, 2), None if mask is None else mask[:, None, :])
        q_global = own_blocks(torch.bmm(alpha, xq), num_heads)  # (B, C)

        s_k_eff = scale * q_global[:, :, None] * s_k  # (B, C, H): scores of p_i read off k_i directly
        scores = torch.bmm(xk, s_k_eff)  # (B, N, H)
        if b_k is not None:
            scores = scores + scale * b_k.to(acc)
        beta = masked_softmax(scores.transpose(1, 2), None if mask is None else mask[:, None, :])  # (B, H, N)
        k_mean = own_blocks(torch.bmm(beta, xk), num_heads)  # (B, C) = sum_i beta_i k_i
        k_global = q_global * k_mean  # (B, C)
        u = v * k_global[:, None, :].to(v.dtype)  # (B, N, C)

        ctx.save_for_backward(q, k, None if v_is_q else v, w_q, w_k, alpha, beta, q_global, k_mean, mask3)
        ctx.meta = (num_heads, scale, v_is_q, b_q is not None, b_k is not None)
        return u

    @staticmethod
    def backward(ctx, grad_u):
        q, k, v, w_q, w_k, alpha, beta, q_global, k_mean, mask3 = ctx.saved_tensors
        num_heads, scale, v_is_q, has_b_q, has_b_k = ctx.meta
        grads = _backward(grad_u, q, k, v, w_q, w_k, alpha, beta, q_global, k_mean, mask3, num_heads, scale)
        dq, dk, dv, dw_q, dw_k, db_q, db_k = grads
        return (dq, dk, dv, dw_q, dw_k, db_q if has_b_q else None, db_k if has_b_k else None,
                None, None, None, None)  # fmt: skip


def _backward(grad_u, q, k, v, w_q, w_k, alpha, beta, q_global, k_mean, mask3, num_heads, scale):
    """Gradients (dq, dk, dv, dw_q, dw_k, db_q, db_k); v None means v is q, and then dv is added into dq.

    Gradients of u_i = (q_g * sum_j beta_j k_j) * v_i through both poolings, all as small matrix products.

    alpha, beta: (B, H, N); q_global, k_mean: (B, C). With g = grad_u:
        dv_i = g_i * k_g                         dk_g = sum_i g_i * v_i
        dq_g = dk_g * k_mean + (score path)      dk_mean = dk_g * q_g
        dbeta_i = k_i . dk_mean (per head)       dt = beta * (dbeta - sum beta dbeta)       (softmax backward)
        dk_i = beta_i dk_mean + dt_i S_k_eff     dS_k_eff = sum_i k_i dt_i
        dalpha_i = q_i . dq_g (per head)         ds = alpha * (dalpha - sum alpha dalpha)
        dq_i = alpha_i dq_g + scale ds_i S_q     dS_q = scale sum_i q_i ds_i
    """
    B, N, C = q.shape
    acc = alpha.dtype
    xq, xk, g = q.to(acc), k.to(acc), grad_u.to(acc)
    s_q, s_k = scoring_matrix(w_q.to(acc), num_heads), scoring_matrix(w_k.to(acc), num_heads)
    member = head_membership(num_heads, C // num_heads, q.device, acc)  # (C, H)
    k_global = q_global * k_mean

    dk_global = _sum_of_products(g, q if v is None else v)  # (B, C)
    dq_global = dk_global * k_mean
    dk_mean = dk_global * q_global

    # second pooling: k_mean = sum_i beta_i k_i with beta = softmax(k_i . s_k_eff)
    s_k_eff = scale * q_global[:, :, None] * s_k  # (B, C, H)
    spread_dk_mean = dk_mean[:, :, None] * member  # (B, C, H)
    dbeta = torch.bmm(xk, spread_dk_mean)  # (B, N, H)
    beta_t = beta.transpose(1, 2)  # (B, N, H)
    dt = beta_t * (dbeta - (beta_t * dbeta).sum(1, keepdim=True))  # (B, N, H)
    dk = torch.bmm(beta_t, spread_dk_mean.transpose(1, 2)).baddbmm_(dt, s_k_eff.transpose(1, 2))  # (B, N, C)
    ds_k_eff = torch.bmm(xk.transpose(1, 2), dt)  # (B, C, H)
    ds_k = scale * (q_global[:, :, None] * ds_k_eff).sum(0)  # (C, H)
    dq_global = dq_global + scale * (ds_k_eff * s_k).sum(2)
    db_k = scale * dt.sum((0, 1))

    # first pooling: q_g = sum_i alpha_i q_i with alpha = softmax(scale * (q_i . s_q + b_q))
    spread_dq_global = dq_global[:, :, None] * member  # (B, C, H)
    dalpha = torch.bmm(xq, spread_dq_global)  # (B, N, H)
    alpha_t = alpha.transpose(1, 2)
    ds = alpha_t * (dalpha - (alpha_t * dalpha).sum(1, keepdim=True))  # (B, N, H)
    dq = torch.bmm(alpha_t, spread_dq_global.transpose(1, 2))  # (B, N, C)
    dq.baddbmm_(ds, s_q.t().expand(B, -1, -1), alpha=scale)
    ds_q = scale * torch.bmm(xq.transpose(1, 2), ds).sum(0)  # (C, H)
    db_q = scale * ds.sum((0, 1))

    # value path, dv_i = g_i * k_g: added in place into dq when v is q, so no extra N x C buffer is needed
    if v is None:
        dv, dq = None, dq.addcmul_(g, k_global[:, None, :])
    else:
        dv = g * k_global[:, None, :]  # (B, N, C)
    if mask3 is not None:  # u is 0 at padded tokens, so nothing flows back there (dk is 0 there already)
        dq = dq.masked_fill_(~mask3, 0)
        dv = None if dv is None else dv.masked_fill_(~mask3, 0)
    dw_q = scoring_weight_grad(ds_q, w_q.shape, num_heads).to(w_q.dtype)
    dw_k = scoring_weight_grad(ds_k, w_k.shape, num_heads).to(w_k.dtype)
    dv = None if dv is None else dv.to(v.dtype)
    return (dq.to(q.dtype), dk.to(k.dtype), dv, dw_q, dw_k, db_q, db_k)


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
) -> torch.Tensor:
    """Fastformer attention (product interaction) on the token-major layout.

    q, k, v: (B, N, H * D), heads side by side as a Linear produces them; pass the same tensor as q and v for
    query-value sharing (its gradient is then accumulated once). w_q, w_k: (H, D) or (H, H, D) as in
    `fastformer_attention`; b_q, b_k: (H,) or None; mask: (B, N) bool, True = real. Returns u (B, N, H * D),
    zero at padded tokens. Same values as `fastformer_attention`, with a hand-written backward.
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
    return _FusedFastformerAttention.apply(q, k, v, w_q, w_k, b_q, b_k, mask, num_heads, scale, v is q)
