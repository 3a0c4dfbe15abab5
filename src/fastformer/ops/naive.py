"""The slow, obvious Fastformer attention that every faster path is tested against.

It follows the paper's equations literally: loop over sequences and heads, keep only the real tokens, take
textbook softmaxes, sum. Computed in float64 and cast back, so it is the trusted value in every dtype test.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _score(x: torch.Tensor, h: int, w: torch.Tensor, b: torch.Tensor | None, scale: float) -> torch.Tensor:
    """Scores of head h for every token. x: (H, n, D) all heads of one sequence. Returns (n,)."""
    if w.dim() == 2:  # one vector per head, on that head's slice
        s = x[h] @ w[h]
    else:  # one vector per head, reading every head's slice
        s = sum(x[g] @ w[h, g] for g in range(x.shape[0]))
    if b is not None:
        s = s + b[h]
    return s * scale


def _softmax(s: torch.Tensor) -> torch.Tensor:
    e = torch.exp(s - s.max())
    return e / e.sum()


def _float64_setup(q, w_q, w_k, b_q, b_k, scale, interaction, *tensors):
    """The references' common start: scale (default 1/sqrt(D)), the interaction as a function, and the scoring
    weights, biases and `tensors` in float64."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    mix = (lambda a, b: a * b) if interaction == "product" else (lambda a, b: a + b)
    as64 = [None if t is None else t.to(torch.float64) for t in (w_q, w_k, b_q, b_k, *tensors)]
    return scale, mix, *as64


def fastformer_attention_reference(
    q, k, v, w_q, w_k, mask=None, *, b_q=None, b_k=None, scale=None, interaction="product"
):
    """Reference for `fastformer_attention`, same arguments and result, differentiable."""
    B, H, N, D = q.shape
    scale, mix, w_q, w_k, b_q, b_k, q, k, v64 = _float64_setup(q, w_q, w_k, b_q, b_k, scale, interaction, q, k, v)
    outputs = []
    for b in range(B):
        real = [True] * N if mask is None else mask[b].tolist()
        seen = [j for j in range(N) if real[j]]
        k_global = torch.zeros(H, D, dtype=torch.float64)
        if seen:
            q_global = _global_query(q[b], real, N - 1, w_q, b_q, scale)  # (H, D)
            p = mix(q_global[:, None], k[b][:, seen])  # (H, n, D), real tokens only
            k_global = torch.stack([(_softmax(_score(p, h, w_k, b_k, scale))[:, None] * p[h]).sum(0) for h in range(H)])
        u = mix(k_global[:, None], v64[b])  # (H, N, D)
        if mask is not None:
            u = u * mask[b][None, :, None]  # padded tokens output 0
        outputs.append(u)
    return torch.stack(outputs).to(v.dtype)


def causal_fastformer_attention_reference(
    q, k, v, w_q, w_k, mask=None, *, b_q=None, b_k=None, scale=None, interaction="product"
):
    """Reference for `causal_fastformer_attention`: for every position i, the bidirectional equations on the real
    tokens j <= i only, with p_j built from the global query of step j. O(N^2) loops, float64, differentiable."""
    B, H, N, D = q.shape
    scale, mix, w_q, w_k, b_q, b_k, q, k, v64 = _float64_setup(q, w_q, w_k, b_q, b_k, scale, interaction, q, k, v)
    outputs = []
    for b in range(B):
        real = [True] * N if mask is None else mask[b].tolist()
        # p_j uses q_g(j), the global query of step j: (H, N, D)
        p = torch.stack([mix(_global_query(q[b], real, j, w_q, b_q, scale), k[b][:, j]) for j in range(N)], dim=1)
        u = []
        for i in range(N):
            seen = [j for j in range(i + 1) if real[j]]
            if not real[i] or not seen:
                u.append(torch.zeros(H, D, dtype=torch.float64))
                continue
            p_seen = p[:, seen]
            k_global = torch.stack(
                [(_softmax(_score(p_seen, h, w_k, b_k, scale))[:, None] * p_seen[h]).sum(0) for h in range(H)]
            )
            u.append(mix(k_global, v64[b][:, i]))
        outputs.append(torch.stack(u, dim=1))  # (H, N, D)
    return torch.stack(outputs).to(v.dtype)


def fastformer_block_reference(
    x,
    w_query,
    b_query,
    w_key,
    b_key,
    w_q,
    w_k,
    w_transform,
    b_transform,
    w_out=None,
    b_out=None,
    mask=None,
    *,
    num_heads: int,
    b_q=None,
    b_k=None,
    scale=None,
) -> torch.Tensor:
    """The same block, spelled out with the slow reference op on (B, H, N, D): the ground truth of the tests."""
    B, N, C = x.shape
    q = F.linear(x, w_query, b_query)
    k = F.linear(x, w_key, b_key)

    def heads(t):  # (B, N, C) -> (B, H, N, D)
        return t.view(B, N, num_heads, C // num_heads).transpose(1, 2)

    u = fastformer_attention_reference(heads(q), heads(k), heads(q), w_q, w_k, mask, b_q=b_q, b_k=b_k, scale=scale)
    o = F.linear(u.transpose(1, 2).reshape(B, N, C), w_transform, b_transform) + q
    return o if w_out is None else F.linear(o, w_out, b_out)


def _global_query(q_b, real: list[bool], i: int, w_q, b_q, scale: float) -> torch.Tensor:
    """(H, D): the global query over the real tokens j <= i of one sequence q_b (H, N, D)."""
    H, _, D = q_b.shape
    seen = [j for j in range(i + 1) if real[j]]
    if not seen:
        return torch.zeros(H, D, dtype=q_b.dtype)
    q_seen = q_b[:, seen]
    return torch.stack([(_softmax(_score(q_seen, h, w_q, b_q, scale))[:, None] * q_seen[h]).sum(0) for h in range(H)])


def pooling_weights_reference(
    q, k, w_q, w_k, mask=None, *, b_q=None, b_k=None, scale=None, interaction="product", steps: list[int] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The weights alpha and beta, (B, H, N) float64 each, that the two poolings give every token; 0 at padding.

    Bidirectional (steps None): the paper's alpha_i and beta_i over all real tokens. Causal (steps: one position per
    sequence): the weights of that position's prefix, as `causal_fastformer_attention_reference` forms them
    (alpha over the real j <= step; beta over the same tokens, with p_j built from the global query of step j).
    """
    B, H, N, D = q.shape
    scale, mix, w_q, w_k, b_q, b_k, q, k = _float64_setup(q, w_q, w_k, b_q, b_k, scale, interaction, q, k)
    alpha, beta = torch.zeros(B, H, N, dtype=torch.float64), torch.zeros(B, H, N, dtype=torch.float64)
    for b in range(B):
        real = [True] * N if mask is None else mask[b].tolist()

        last = N - 1 if steps is None else steps[b]
        seen = [j for j in range(last + 1) if real[j]]
        if not seen:
            continue
        q_b = q[b]
        q_global = _global_query(q_b, real, N - 1, w_q, b_q, scale)
        # p_j: the key mixed with the global query (of the whole sequence, or causally of step j)
        p = torch.stack(
            [
                mix(q_global if steps is None else _global_query(q_b, real, j, w_q, b_q, scale), k[b][:, j])
                for j in seen
            ],
            dim=1,
        )
        for h in range(H):
            alpha[b, h, seen] = _softmax(_score(q[b][:, seen], h, w_q, b_q, scale))
            beta[b, h, seen] = _softmax(_score(p, h, w_k, b_k, scale))
    return alpha, beta
