"""Fastformer additive attention as a pure function.

Wu et al., "Fastformer: Additive Attention Can Be All You Need" (arXiv:2108.09084), eq. 3-7, per head:

    alpha_i = softmax_i(w_q . q_i * scale)          q_g = sum_i alpha_i q_i
    p_i     = q_g * k_i
    beta_i  = softmax_i(w_k . p_i * scale)          k_g = sum_i beta_i p_i
    u_i     = k_g * v_i

Both softmaxes run over the real tokens only. Time and memory are O(B * H * N * D): no N x N tensor is ever
formed. The slow, obvious version that the tests hold this one to lives in `naive.py` beside it.

Only torch is imported here.
"""

from __future__ import annotations

import math

import torch

INTERACTIONS = ("product", "add")


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype reductions run in: float32 for half inputs, the input's own dtype for float32/float64."""
    return torch.promote_types(dtype, torch.float32)


def autocast_dtype(*tensors: torch.Tensor | None) -> torch.dtype | None:
    """The dtype autocast runs matmuls in on the tensors' device, or None when autocast is off there. The fused ops
    are autograd Functions whose hand-written products autocast does not reach: they take their inputs in this dtype
    (`cast_for_autocast`) and run with autocast off, as a model's Linear layers would under autocast."""
    device = next((t.device.type for t in tensors if t is not None), "cpu")
    if not torch.is_autocast_enabled(device):
        return None
    return torch.get_autocast_dtype(device)


def cast_for_autocast(dtype: torch.dtype, *tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """Floating tensors in `dtype` (masks and None as they are)."""
    return [t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors]


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis, restricted to positions where `mask` is True.

    scores: (..., N), any float dtype; mask: broadcastable to scores, bool (True = real) or None.
    Positions outside the mask get weight exactly 0, whatever their score (NaN or inf included).
    A row with no real position gets all-zero weights instead of NaN; no positions at all (N = 0), an empty result.
    """
    if scores.shape[-1] == 0:
        return scores * 0
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    # The max is a constant shift that softmax ignores; detaching it keeps its (zero) gradient out of autograd.
    row_max = scores.amax(dim=-1, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)  # exp(-inf) = 0 at masked positions
    total = weights.sum(dim=-1, keepdim=True)
    return weights / total.clamp_min(torch.finfo(weights.dtype).tiny)


def head_scores(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, scale: float) -> torch.Tensor:
    """Additive-attention scores of every token for every head.

    x: (B, H, N, D). w: (H, D) for a scoring vector per head that reads its own head's slice (the paper), or
    (H, H, D) for a scoring vector per head that reads every head's slice (the authors' notebook, whose
    `Linear(H * D -> H)` is this tensor reshaped). b: (H,) or None. Returns (B, H, N) in x's dtype.
    """
    if w.dim() == 2:
        scores = torch.einsum("bhnd,hd->bhn", x, w)
    elif w.dim() == 3:
        scores = torch.einsum("bgnd,hgd->bhn", x, w)
    else:
        raise ValueError(f"scoring weights must have shape (H, D) or (H, H, D), got {tuple(w.shape)}")
    if b is not None:
        scores = scores + b[:, None]
    return scores * scale


def additive_pool(x: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """sum_i softmax_i(scores) x_i over real tokens. x: (B, H, N, D); scores: (B, H, N); mask: (B, 1, N) or None.

    Returns (B, H, D) in the accumulation dtype of x. Padded slots of x are zeroed first, so garbage there
    (even NaN) cannot leak into the sum through a zero weight.
    """
    acc = accumulation_dtype(x.dtype)
    weights = masked_softmax(scores.to(acc), mask)
    if mask is not None:
        x = x.masked_fill(~mask[..., None], 0)
    return torch.einsum("bhn,bhnd->bhd", weights, x.to(acc))


def check_inputs(q, k, v, w_q, w_k, mask):
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(
            f"q, k, v must all have shape (B, H, N, D); got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    B, H, N, D = q.shape
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        if tuple(w.shape) not in ((H, D), (H, H, D)):
            raise ValueError(f"{name} must have shape (H, D) = {(H, D)} or (H, H, D), got {tuple(w.shape)}")
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = real token), got {mask.dtype}")
        if tuple(mask.shape) != (B, N):
            raise ValueError(f"mask must have shape (B, N) = {(B, N)}, got {tuple(mask.shape)}")


def fastformer_attention(
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
) -> torch.Tensor:
    """Fastformer attention: u_i = k_g * v_i with global query and key pooled by additive attention.

    Args:
        q, k, v: (B, H, N, D) per-head queries, keys and values.
        w_q, w_k: (H, D) scoring vectors, one per head on its own slice (the paper); or (H, H, D), each head's
            score reading all heads (the authors' notebook).
        mask: (B, N) bool, True = real token; None = every token is real. Padded tokens never change the
            outputs at real tokens; a row with no real token gets k_g = 0, hence u = 0 for "product".
        b_q, b_k: optional (H,) score biases (the notebook's `Linear` has them; they do not change the
            softmax, but are accepted so its checkpoints map one to one).
        scale: score multiplier, default 1 / sqrt(D).
        interaction: "product" (the paper) or "add" (the paper's ablation: p_i = q_g + k_i, u_i = k_g + v_i).

    Returns:
        u: (B, H, N, D) in the dtype of v, 0 at padded tokens. Half-precision inputs are pooled in float32.

    This is the plain-autograd version, readable and general; `fastformer_attention_fused` (fused.py) computes the
    same for the product interaction on the (B, N, H * D) layout with a hand-written, lighter backward.
    """
    check_inputs(q, k, v, w_q, w_k, mask)
    if q.shape[2] == 0:  # no tokens: nothing to pool, an empty output
        return v * 0
    if interaction not in INTERACTIONS:
        raise ValueError(f"interaction must be one of {INTERACTIONS}, got {interaction!r}")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    mix = torch.mul if interaction == "product" else torch.add
    acc = accumulation_dtype(q.dtype)
    mask3 = None if mask is None else mask[:, None, :]  # (B, 1, N), broadcast over heads

    # Scores are computed from the accumulation dtype so that half inputs with large values stay finite.
    alpha_scores = head_scores(q.to(acc), w_q.to(acc), None if b_q is None else b_q.to(acc), scale)  # (B, H, N)
    q_global = additive_pool(q, alpha_scores, mask3)  # (B, H, D)
    p = mix(q_global[:, :, None, :], k.to(acc))  # (B, H, N, D)
    beta_scores = head_scores(p, w_k.to(acc), None if b_k is None else b_k.to(acc), scale)  # (B, H, N)
    k_global = additive_pool(p, beta_scores, mask3)  # (B, H, D)
    u = mix(k_global[:, :, None, :].to(v.dtype), v)  # (B, H, N, D)
    return u if mask is None else u.masked_fill(~mask[:, None, :, None], 0)
