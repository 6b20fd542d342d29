"""The normal (Gaussian) distribution N(loc, scale^2)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ..core.tensor import Tensor
from ..ops.manipulation import broadcast_shape
from ..ops.creation import randn
from .distribution import Distribution, parameters_from, value_like

__all__ = ["Normal"]


class Normal(Distribution):
    """Normal distributions with mean ``loc`` and standard deviation ``scale`` (floats, lists,
    NumPy arrays or tensors, broadcast together). ``sample`` and ``rsample`` both scale and shift
    standard normal draws, so gradients reach ``loc`` and ``scale`` through either, as in Paddle.
    A non-positive scale is not rejected (Paddle does not check it); its results are NaN."""

    def __init__(self, loc: Any, scale: Any, name: Optional[str] = None) -> None:
        self.name = name or "Normal"
        self.loc, self.scale = parameters_from("Normal", loc=loc, scale=scale)
        self.dtype = self.loc.dtype
        super().__init__(broadcast_shape(self.loc.shape, self.scale.shape))

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale squared."""
        return self.scale.pow(2)

    def sample(self, shape: Sequence[int] = (), seed: int = 0) -> Tensor:
        """Draws of shape ``shape + batch_shape``; ``seed`` is accepted for Paddle's signature and
        ignored (minidp.seed governs every draw)."""
        return self.rsample(shape)

    def rsample(self, shape: Sequence[int] = ()) -> Tensor:
        """loc + scale * eps with eps standard normal: differentiable in loc and scale."""
        return self.loc + randn(list(self._extend_shape(shape)), self.dtype) * self.scale

    def entropy(self) -> Tensor:
        """0.5 + log(sqrt(2 pi) scale), of the batch's shape."""
        return (self.scale + self.loc * 0).log() + (0.5 + 0.5 * math.log(2 * math.pi))

    def log_prob(self, value: Any) -> Tensor:
        """The log density at ``value``."""
        value = value_like(self.loc, value, "Normal.log_prob")
        return -((value - self.loc) ** 2) / (2 * self.scale**2) - (self.scale.log() + 0.5 * math.log(2 * math.pi))

    def probs(self, value: Any) -> Tensor:
        """The density at ``value`` (Paddle's older name for ``prob``)."""
        return self.prob(value)

    def kl_divergence(self, other: "Normal") -> Tensor:
        """KL(self || other) between two normal distributions, elementwise."""
        if not isinstance(other, Normal):
            raise TypeError(f"Normal.kl_divergence: other must be a Normal, got {type(other).__name__}")
        ratio = (self.scale / other.scale) ** 2
        shift = ((self.loc - other.loc) / other.scale) ** 2
        return 0.5 * (ratio + shift - 1.0 - ratio.log())
