"""The continuous uniform distribution on [low, high)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ..core.tensor import Tensor
from ..core.ops import where
from ..ops.creation import full_like, rand, zeros_like
from ..ops.manipulation import broadcast_shape
from .distribution import Distribution, parameters_from, value_like

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform distributions on [low, high) (floats, lists, NumPy arrays or tensors, broadcast
    together). ``sample`` shifts and scales uniform draws, so gradients reach ``low`` and ``high``
    through it, as in Paddle. Paddle 3.3.1 defines no ``rsample``, ``mean``, ``variance`` or
    ``kl_divergence`` for Uniform; they raise NotImplementedError here too."""

    def __init__(self, low: Any, high: Any, name: Optional[str] = None) -> None:
        self.name = name or "Uniform"
        self.low, self.high = parameters_from("Uniform", low=low, high=high)
        self.dtype = self.low.dtype
        super().__init__(broadcast_shape(self.low.shape, self.high.shape))

    def sample(self, shape: Sequence[int] = (), seed: int = 0) -> Tensor:
        """Draws of shape ``shape + batch_shape``; ``seed`` is accepted for Paddle's signature and
        ignored (minidp.seed governs every draw)."""
        return self.low + rand(list(self._extend_shape(shape)), self.dtype) * (self.high - self.low)

    def _inside(self, value: Tensor) -> Tensor:
        """True where low < value < high."""
        return (self.low < value) & (value < self.high)

    def log_prob(self, value: Any) -> Tensor:
        """-log(high - low) inside the interval, -inf outside."""
        value = value_like(self.low, value, "Uniform.log_prob")
        density = zeros_like(value) - (self.high - self.low).log()
        return where(self._inside(value), density, full_like(density, -math.inf))

    def prob(self, value: Any) -> Tensor:
        """1 / (high - low) inside the interval, 0 outside."""
        value = value_like(self.low, value, "Uniform.prob")
        return self._inside(value).astype(value.dtype) / (self.high - self.low)

    def probs(self, value: Any) -> Tensor:
        """The density at ``value`` (Paddle's older name for ``prob``)."""
        return self.prob(value)

    def entropy(self) -> Tensor:
        """log(high - low)."""
        return (self.high - self.low).log()
