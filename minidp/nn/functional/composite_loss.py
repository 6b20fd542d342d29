"""Losses built from other differentiable ops (autograd supplies their gradients).

They are ranking, margin and likelihood losses whose cost is dominated by the few array
operations they are made of, so a fused backward would buy little.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from ._util import check_reduction, check_tensor, reduce_loss
from .distance import pairwise_distance
from .input import one_hot
from .loss import binary_cross_entropy_with_logits, softmax_with_cross_entropy

__all__ = [
    "cosine_embedding_loss",
    "dice_loss",
    "gaussian_nll_loss",
    "margin_ranking_loss",
    "multi_label_margin_loss",
    "multi_label_soft_margin_loss",
    "multi_margin_loss",
    "npair_loss",
    "sigmoid_focal_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) = -(max(-x, 0) + log(1 + exp(-|x|))), finite for any x."""
    return -(ops.relu(-x) + ops.log(ops.exp(-ops.abs(x)) + 1.0))


def _check_all(op: str, **tensors: Any) -> None:
    for arg, value in tensors.items():
        check_tensor(op, arg, value)


def margin_ranking_loss(
    input: Tensor,
    other: Tensor,
    label: Tensor,
    margin: float = 0.0,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """max(0, -label * (input - other) + margin): ``input`` should rank above ``other`` where
    the label is 1, below where it is -1."""
    check_reduction("margin_ranking_loss", reduction)
    _check_all("margin_ranking_loss", input=input, other=other, label=label)
    return reduce_loss(ops.relu(-label * (input - other) + margin), reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    label: Tensor,
    margin: float = 0,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """1 - cos(x1, x2) for pairs labelled 1, max(0, cos(x1, x2) - margin) for pairs labelled -1.

    The inputs are [N, M] (or [M]); the cosine runs along the last axis.
    """
    check_reduction("cosine_embedding_loss", reduction)
    _check_all("cosine_embedding_loss", input1=input1, input2=input2, label=label)
    if not -1 <= margin <= 1:
        raise ValueError(f"cosine_embedding_loss: margin must lie in [-1, 1], got {margin!r}")
    if input1.shape != input2.shape or input1.ndim not in (1, 2):
        raise ValueError(
            f"cosine_embedding_loss: input1 and input2 must share a shape [N, M] or [M], got "
            f"{input1.shape} and {input2.shape}"
        )
    dot = (input1 * input2).sum(axis=-1)
    norms = ops.sqrt((input1 * input1).sum(axis=-1) * (input2 * input2).sum(axis=-1))
    cos = dot / norms
    positive = (label == 1).astype(cos.dtype)
    negative = (label == -1).astype(cos.dtype)
    loss = positive * (1 - cos) + negative * ops.relu(cos - margin)
    return reduce_loss(loss, reduction)


def triplet_margin_with_distance_loss(
    input: Tensor,
    positive: Tensor,
    negative: Tensor,
    distance_function: Optional[Callable] = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with any distance ``d`` (pairwise L2 by default);
    ``swap`` uses min(d(a, n), d(p, n)) as the negative distance."""
    check_reduction("triplet_margin_with_distance_loss", reduction)
    _check_all("triplet_margin_with_distance_loss", input=input, positive=positive, negative=negative)
    distance = distance_function or pairwise_distance
    d_pos = distance(input, positive)
    d_neg = distance(input, negative)
    if swap:
        d_neg = ops.minimum(d_neg, distance(positive, negative))
    return reduce_loss(ops.relu(d_pos - d_neg + margin), reduction)


def triplet_margin_loss(
    input: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    epsilon: float = 1e-06,
    swap: bool = False,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """Triplet loss with the p-norm distance ||a - b + epsilon||_p."""
    return triplet_margin_with_distance_loss(
        input, positive, negative, lambda a, b: pairwise_distance(a, b, p, epsilon), margin, swap, reduction
    )


def multi_margin_loss(
    input: Tensor,
    label: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Optional[Tensor] = None,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """Multi-class hinge: sum over classes i != y of max(0, margin - x[y] + x[i])^p / C, times
    weight[y]; ``input`` is [N, C], ``label`` [N] integers."""
    check_reduction("multi_margin_loss", reduction)
    _check_all("multi_margin_loss", input=input, label=label)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p!r}")
    if input.ndim != 2 or label.shape != input.shape[:1]:
        raise ValueError(f"multi_margin_loss: input must be [N, C] and label [N], got {input.shape} and {label.shape}")
    rows = backend.get_array_module(label._data).arange(input.shape[0])
    target_score = ops.unsqueeze(input[rows, label._data], 1)
    others = 1 - one_hot(label, input.shape[1]).astype(input.dtype)
    margins = ops.relu(input - target_score + margin) ** p * others
    loss = margins.sum(axis=1) / input.shape[1]
    if weight is not None:
        check_tensor("multi_margin_loss", "weight", weight)
        loss = loss * weight[label._data]
    return reduce_loss(loss, reduction)


def multi_label_soft_margin_loss(
    input: Tensor, label: Tensor, weight: Optional[Tensor] = None, reduction: str = "mean", name: Optional[str] = None
) -> Tensor:
    """-mean over classes of y log sigmoid(x) + (1 - y) log sigmoid(-x) (times ``weight``), one
    value per sample of ``input`` [N, C] with 0/1 ``label`` [N, C]."""
    check_reduction("multi_label_soft_margin_loss", reduction)
    _check_all("multi_label_soft_margin_loss", input=input, label=label)
    if input.shape != label.shape:
        raise ValueError(
            f"multi_label_soft_margin_loss: input and label must share a shape, got {input.shape} and {label.shape}"
        )
    label = label.astype(input.dtype)
    per_class = -(label * _log_sigmoid(input) + (1 - label) * _log_sigmoid(-input))
    if weight is not None:
        check_tensor("multi_label_soft_margin_loss", "weight", weight)
        per_class = per_class * weight
    return reduce_loss(per_class.mean(axis=-1), reduction)


def gaussian_nll_loss(
    input: Tensor,
    label: Tensor,
    variance: Tensor,
    full: bool = False,
    epsilon: float = 1e-06,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """0.5 (log v + (x - y)^2 / v) with v = max(variance, epsilon); ``full`` adds 0.5 log(2 pi).

    Negative variances raise. Unlike Paddle 3.3.1, whose clamp detaches the variance, the
    variance gets its gradient (through the clamp, as PyTorch does), so a network can learn it.
    """
    check_reduction("gaussian_nll_loss", reduction)
    _check_all("gaussian_nll_loss", input=input, label=label, variance=variance)
    if bool((variance._data < 0).any()):
        raise ValueError("gaussian_nll_loss: variance has negative entries; it must be >= 0")
    floor = wrap(backend.get_array_module(variance._data).maximum(variance._data, epsilon) - variance._data)
    v = variance + floor
    loss = 0.5 * (ops.log(v) + ops.square(input - label) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


def sigmoid_focal_loss(
    logit: Tensor,
    label: Tensor,
    normalizer: Optional[Tensor] = None,
    alpha: float = 0.25,
    gamma: float = 2.0,
    reduction: str = "sum",
    name: Optional[str] = None,
) -> Tensor:
    """Focal loss: alpha_t (1 - p_t)^gamma BCE(logit, label), divided by ``normalizer``.

    p_t = p y + (1 - p)(1 - y) with p = sigmoid(logit); alpha_t = alpha y + (1 - alpha)(1 - y).
    """
    check_reduction("sigmoid_focal_loss", reduction)
    _check_all("sigmoid_focal_loss", logit=logit, label=label)
    if normalizer is not None and normalizer.ndim > 1:
        raise ValueError(f"sigmoid_focal_loss: normalizer must have at most one axis, got shape {normalizer.shape}")
    label = label.astype(logit.dtype)
    loss = binary_cross_entropy_with_logits(logit, label, reduction="none")
    prob = ops.sigmoid(logit)
    p_t = prob * label + (1 - prob) * (1 - label)
    alpha_t = alpha * label + (1 - alpha) * (1 - label)
    loss = alpha_t * ops.pow(1 - p_t, gamma) * loss
    if normalizer is not None:
        loss = loss / normalizer
    return reduce_loss(loss, reduction)


def dice_loss(input: Tensor, label: Tensor, epsilon: float = 1e-05, name: Optional[str] = None) -> Tensor:
    """Mean over samples of 1 - 2 |X . Y| / (|X| + |Y| + epsilon), with ``input`` probabilities
    [N, ..., C] and ``label`` class ids [N, ..., 1]."""
    _check_all("dice_loss", input=input, label=label)
    if input.ndim < 2 or label.ndim != input.ndim or label.shape[:-1] != input.shape[:-1] or label.shape[-1] != 1:
        raise ValueError(
            f"dice_loss: input must be [N, ..., C] and label [N, ..., 1] with the same leading "
            f"axes, got {input.shape} and {label.shape}"
        )
    target = one_hot(ops.squeeze(label, -1), input.shape[-1]).astype(input.dtype)
    axes = list(range(1, input.ndim))
    overlap = (input * target).sum(axis=axes)
    total = input.sum(axis=axes) + target.sum(axis=axes)
    return (1 - 2 * overlap / (total + epsilon)).mean()


def multi_label_margin_loss(
    input: Tensor, label: Tensor, reduction: str = "mean", name: Optional[str] = None
) -> Tensor:
    """Multi-label hinge: sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C.

    ``label`` [N, C] lists each sample's target classes, ended by the first -1.
    """
    check_reduction("multi_label_margin_loss", reduction)
    _check_all("multi_label_margin_loss", input=input, label=label)
    if input.ndim != 2 or label.shape != input.shape:
        raise ValueError(
            f"multi_label_margin_loss: input and label must both be [N, C], got {input.shape} and {label.shape}"
        )
    ids = label._data
    xp = backend.get_array_module(ids)
    listed = xp.cumprod(ids != -1, axis=1).astype(bool)
    is_target = xp.zeros(input.shape, dtype=bool)
    rows = xp.broadcast_to(xp.arange(ids.shape[0])[:, None], ids.shape)
    is_target[rows[listed], ids[listed]] = True
    pairs = wrap((is_target[:, :, None] & ~is_target[:, None, :]).astype(input._data.dtype))
    margins = ops.relu(1 - (ops.unsqueeze(input, 2) - ops.unsqueeze(input, 1)))
    return reduce_loss((margins * pairs).sum(axis=[1, 2]) / input.shape[1], reduction)


def npair_loss(anchor: Tensor, positive: Tensor, labels: Tensor, l2_reg: float = 0.002) -> Tensor:
    """N-pair loss: soft-label cross-entropy of the anchor-positive similarity matrix against
    "same label" targets, plus ``l2_reg`` / 4 times the mean squared norms of the embeddings."""
    _check_all("npair_loss", anchor=anchor, positive=positive, labels=labels)
    if anchor.ndim != 2 or positive.shape != anchor.shape or labels.shape[0] != anchor.shape[0]:
        raise ValueError(
            f"npair_loss: anchor and positive must be [N, D] and labels [N], got {anchor.shape}, "
            f"{positive.shape} and {labels.shape}"
        )
    ids = labels._data.reshape(-1, 1)
    same = (ids == ids.T).astype(anchor._data.dtype)
    target = wrap(same / same.sum(axis=1, keepdims=True))
    l2 = ((anchor * anchor).sum(axis=1).mean() + (positive * positive).sum(axis=1).mean()) * (0.25 * l2_reg)
    similarity = ops.matmul(anchor, positive, transpose_y=True)
    per_row = softmax_with_cross_entropy(similarity, target, soft_label=True)
    return l2 + (target * per_row).sum(axis=0).mean()
