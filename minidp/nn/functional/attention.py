"""Scaled dot-product attention, the core of MultiHeadAttention, built from differentiable ops."""

from __future__ import annotations

import math
from typing import Any, Optional

from ... import ops
from ...core.tensor import Tensor
from ...core.backend import get_array_module
from ...core.op_util import wrap
from ._util import check_tensor
from .common import dropout

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
    """softmax(q k^T * scale + mask) v for [..., L, D] inputs; returns the output and the weights."""
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
