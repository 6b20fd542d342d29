"""The categorical distribution over the indices of the last axis.

Paddle's Categorical reads ``logits`` two ways, and minidp keeps both so that results match:
``sample``, ``entropy`` and ``kl_divergence`` treat them as log-probabilities (softmax), while
``probs``, ``prob`` and ``log_prob`` treat them as unnormalised probabilities (logits / sum).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ..core.tensor import Tensor
from ..nn.functional import log_softmax, softmax
from ..ops.indexing import take_along_axis
from ..ops.sampling import multinomial
from .distribution import Distribution, parameters_from, shape_tuple

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Categorical distributions over the last axis of ``logits`` (a float, list, NumPy array or
    tensor); the batch shape is every axis before the last."""

    def __init__(self, logits: Any, name: Optional[str] = None) -> None:
        self.name = name or "Categorical"
        (self.logits,) = parameters_from("Categorical", logits=logits)
        self.dtype = self.logits.dtype
        self._prob = self.logits / self.logits.sum(axis=-1, keepdim=True)
        super().__init__(tuple(self.logits.shape[:-1]))

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Indices (int64) of shape ``shape + batch_shape``, drawn with probabilities softmax(logits)."""
        shape = shape_tuple(shape, "Categorical.sample")
        count = math.prod(shape)
        if self.logits.ndim <= 1:
            return multinomial(softmax(self.logits, axis=-1), count, True).reshape(list(shape))
        rows = self.logits.reshape([-1, self.logits.shape[-1]])
        drawn = multinomial(softmax(rows, axis=-1), count, True)
        return drawn.transpose([1, 0]).reshape(list(shape + self._batch_shape))

    def entropy(self) -> Tensor:
        """-sum(p log p) with p = softmax(logits), of the batch's shape."""
        log_p = log_softmax(self.logits, axis=-1)
        return -(log_p.exp() * log_p).sum(axis=-1)

    def kl_divergence(self, other: "Categorical") -> Tensor:
        """KL(self || other) of the softmax distributions, with a kept last axis of size 1 (Paddle's shape)."""
        if not isinstance(other, Categorical):
            raise TypeError(f"Categorical.kl_divergence: other must be a Categorical, got {type(other).__name__}")
        log_p = log_softmax(self.logits, axis=-1)
        return (log_p.exp() * (log_p - log_softmax(other.logits, axis=-1))).sum(axis=-1, keepdim=True)

    def probs(self, value: Tensor) -> Tensor:
        """logits / sum(logits) at the integer indices ``value``.

        With one-dimensional logits any shape of indices works; otherwise a one-dimensional
        ``value`` is looked up in every distribution of the batch, and a value of the logits' rank
        is taken along the last axis.
        """
        if not isinstance(value, Tensor) or value.is_floating_point():
            raise TypeError("Categorical.probs: value must be an integer Tensor of category indices")
        if self._prob.ndim == 1:
            return take_along_axis(self._prob, value.reshape([-1]), axis=0).reshape(value.shape)
        if value.ndim == 1:
            value = value.reshape([1] * (self._prob.ndim - 1) + [-1])
        return take_along_axis(self._prob, value, axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """log(probs(value))."""
        return self.probs(value).log()
