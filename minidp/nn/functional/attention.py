"""Scaled dot-product attention, the core of MultiHeadAttention: one op with one backward.

softmax(q k^T * scale + mask) v, with dropout on the weights, is computed by
:func:`fused_attention` as a single graph node: the scores are normalised in place, and the
backward runs the four matmuls and the softmax's gradient on raw arrays. Where it does not apply
(see :func:`attend`) the same math runs as a composition of differentiable ops.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ... import ops
from ...core.tensor import Tensor
from ...core.backend import get_array_module
from ...core.op_util import matmul_arrays, results, unbroadcast, wrap
from ._util import check_tensor
from .common import dropout, dropout_mask
from .fusion import can_fuse

__all__ = [
    "scaled_dot_product_attention",
]


def additive_mask(mask: Optional[Tensor], dtype: Any) -> Optional[Tensor]:
    """An attention mask as a tensor added to the scores: boolean or integer masks keep the
    positions that are True/non-zero (0) and block the others (-1e9); float masks are added as
    they are."""
    if mask is None:
        return None
    check_tensor("attention", "attn_mask", mask)
    data = mask._data
    if data.dtype.kind in "biu":
        xp = get_array_module(data)
        return wrap(xp.where(data.astype(bool), 0.0, -1e9).astype(dtype))
    return mask


def attend(
    query: Tensor, key: Tensor, value: Tensor, mask: Optional[Tensor], dropout_p: float, training: bool, scale: float
) -> tuple:
    """softmax(q k^T * scale + mask) v for [..., L, D] inputs; returns the output and the weights
    (after dropout). One fused op when the inputs allow it (:func:`fused_attention`), else the
    composition of ops (:func:`composed_attention`)."""
    if _fusable(query, key, value, mask, dropout_p):
        return fused_attention(query, key, value, mask, dropout_p if training else 0.0, scale)
    return composed_attention(query, key, value, mask, dropout_p, training, scale)


def _fusable(query: Tensor, key: Tensor, value: Tensor, mask: Optional[Tensor], dropout_p: Any) -> bool:
    """Whether :func:`fused_attention` computes what the composition would: 4-D inputs with the
    same leading axes, a mask that broadcasts to the scores without widening them, a dropout
    probability in [0, 1], dtypes :func:`can_fuse` takes."""
    q, k, v = query._data, key._data, value._data
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or not q.shape[:2] == k.shape[:2] == v.shape[:2]:
        return False
    if not isinstance(dropout_p, (int, float)) or not 0 <= dropout_p <= 1:
        return False
    if mask is None:
        return can_fuse(q, k, v)
    m = mask._data
    scores = q.shape[:3] + k.shape[2:3]
    if m.ndim > 4 or any(n not in (1, s) for n, s in zip(m.shape[::-1], scores[::-1])):
        return False
    return can_fuse(q, k, v, m)


def fused_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Optional[Tensor], dropout_p: float, scale: float
) -> tuple:
    """softmax(q k^T * scale + mask) v as one op, for q [B, H, L, D], k [B, H, S, D],
    v [B, H, S, Dv] and an additive ``mask`` broadcasting to [B, H, L, S]; ``dropout_p`` (0 for
    none) drops weights as :func:`minidp.nn.functional.dropout` does in training. Returns the
    output [B, H, L, Dv] and the weights after dropout, both differentiable."""
    q, k, v = query._data, key._data, value._data
    xp = get_array_module(q)
    probs = matmul_arrays(q, k.swapaxes(-1, -2))
    probs *= scale
    if mask is not None:
        probs += mask._data
    probs -= probs.max(axis=-1, keepdims=True)
    xp.exp(probs, out=probs)
    probs /= probs.sum(axis=-1, keepdims=True)
    keep = dropout_mask(xp, probs.shape, dropout_p, probs.dtype) if dropout_p else None
    weights = probs if keep is None else probs * keep
    out = matmul_arrays(weights, v)
    parents = (query, key, value) if mask is None else (query, key, value, mask)

    def backward(grads: tuple) -> tuple:
        g_out, g_weights = grads
        if g_out is None:
            d_weights, g_value = g_weights.copy(), None
        else:
            d_weights = matmul_arrays(g_out, v.swapaxes(-1, -2))
            if g_weights is not None:
                d_weights += g_weights
            g_value = None if value.stop_gradient else matmul_arrays(weights.swapaxes(-1, -2), g_out)
        if keep is not None:
            d_weights *= keep
        # the softmax's gradient, in place: p * (d - sum(d * p))
        d_scores = d_weights
        d_scores -= (d_weights * probs).sum(axis=-1, keepdims=True)
        d_scores *= probs
        g_mask = None
        if mask is not None and not mask.stop_gradient:
            g_mask = unbroadcast(d_scores, mask._data.shape)
            g_mask = g_mask.copy() if g_mask is d_scores else g_mask
        d_scores *= scale
        g_query = None if query.stop_gradient else matmul_arrays(d_scores, k)
        g_key = None if key.stop_gradient else matmul_arrays(d_scores.swapaxes(-1, -2), q)
        return (g_query, g_key, g_value) if mask is None else (g_query, g_key, g_value, g_mask)

    return results((out, weights), parents, backward)


def composed_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Optional[Tensor], dropout_p: float, training: bool, scale: float
) -> tuple:
    """What :func:`fused_attention` computes, as a composition of differentiable ops (any
    broadcastable shapes and dtypes, auto_cast included)."""
    scores = ops.matmul(query * scale, ops.transpose(key, list(range(key.ndim - 2)) + [key.ndim - 1, key.ndim - 2]))
    if mask is not None:
        scores = scores + mask
    weights = ops.softmax(scores, -1)
    if dropout_p:
        weights = dropout(weights, dropout_p, training=training)
    return ops.matmul(weights, value), weights


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    training: bool = True,
    backend: Optional[str] = None,
    scale: Optional[float] = None,
    enable_gqa: bool = True,
    name: Optional[str] = None,
) -> Tensor:
    """Attention over inputs laid out as Paddle lays them out: [batch, seq_len, num_heads, head_dim].

    ``attn_mask`` broadcasts to [batch, num_heads, L, S]; ``is_causal`` blocks future positions;
    ``scale`` defaults to 1/sqrt(head_dim). With ``enable_gqa`` the key and value may have fewer
    heads than the query (a divisor), each shared by a group of query heads.
    """
    for arg, t in (("query", query), ("key", key), ("value", value)):
        check_tensor("scaled_dot_product_attention", arg, t)
        if t.ndim != 4:
            raise ValueError(
                f"scaled_dot_product_attention: {arg} must be [batch, seq_len, num_heads, head_dim], "
                f"got shape {t.shape}"
            )
    if attn_mask is not None and is_causal:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
    heads, kv_heads = query.shape[2], key.shape[2]
    if heads != kv_heads and not (enable_gqa and heads % kv_heads == 0):
        raise ValueError(
            f"scaled_dot_product_attention: query has {heads} heads and key {kv_heads}; they must "
            "match, or divide with enable_gqa=True"
        )
    q, k, v = (ops.transpose(t, [0, 2, 1, 3]) for t in (query, key, value))
    if heads != kv_heads:
        repeat = heads // kv_heads
        k, v = (
            ops.reshape(ops.expand(ops.unsqueeze(t, 2), [-1, -1, repeat, -1, -1]), [t.shape[0], heads] + t.shape[2:])
            for t in (k, v)
        )
    mask = additive_mask(attn_mask, query._data.dtype)
    if is_causal:
        xp = get_array_module(query._data)
        length, source = q.shape[2], k.shape[2]
        mask = wrap(xp.where(xp.tril(xp.ones((length, source), dtype=bool)), 0.0, -1e9).astype(query._data.dtype))
    out, _ = attend(q, k, v, mask, dropout_p, training, 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale)
    return ops.transpose(out, [0, 2, 1, 3])
