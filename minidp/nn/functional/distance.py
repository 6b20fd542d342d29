"""Similarity and distance between the rows of two tensors, built from differentiable ops."""

from __future__ import annotations

import math
from typing import Optional

from ... import ops
from ...core.tensor import Tensor
from ...core.backend import get_array_module
from ._util import check_tensor

__all__ = [
    "cosine_similarity",
    "pairwise_distance",
    "pdist",
]


def cosine_similarity(x1: Tensor, x2: Tensor, axis: int = 1, eps: float = 1e-08) -> Tensor:
    """x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2)) along ``axis`` (the inputs broadcast)."""
    check_tensor("cosine_similarity", "x1", x1)
    check_tensor("cosine_similarity", "x2", x2)
    dot = (x1 * x2).sum(axis=axis)
    squares = (x1 * x1).sum(axis=axis) * (x2 * x2).sum(axis=axis)
    return dot / ops.sqrt(ops.clip(squares, min=eps * eps))


def p_norm(values: Tensor, p: float, axis: int, keepdim: bool) -> Tensor:
    """The p-norm of ``values`` along ``axis``; p may be inf, -inf or 0 (a count)."""
    size = ops.abs(values)
    if p == math.inf:
        return size.max(axis=axis, keepdim=keepdim)
    if p == -math.inf:
        return size.min(axis=axis, keepdim=keepdim)
    if p == 0:
        return (size != 0).astype(values.dtype).sum(axis=axis, keepdim=keepdim)
    return ops.pow((size**p).sum(axis=axis, keepdim=keepdim), 1.0 / p)


def pairwise_distance(
    x: Tensor, y: Tensor, p: float = 2.0, epsilon: float = 1e-06, keepdim: bool = False, name: Optional[str] = None
) -> Tensor:
    """||x - y + epsilon||_p along the last axis (epsilon keeps the gradient finite at x == y)."""
    check_tensor("pairwise_distance", "x", x)
    check_tensor("pairwise_distance", "y", y)
    if not isinstance(p, (int, float)):
        raise TypeError(f"pairwise_distance: p must be a number, got {type(p).__name__}")
    return p_norm(x - y + epsilon, float(p), -1, keepdim)


def pdist(x: Tensor, p: float = 2.0, name: Optional[str] = None) -> Tensor:
    """The p-norm distance of every pair of rows i < j of ``x`` [N, M], in row-major pair order."""
    check_tensor("pdist", "x", x)
    if x.ndim != 2:
        raise ValueError(f"pdist: expects a 2-D input [N, M], got shape {x.shape}")
    first, second = get_array_module(x._data).triu_indices(x.shape[0], 1)
    return p_norm(x[first] - x[second], float(p), -1, False)
