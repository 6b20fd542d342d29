"""The Bernoulli distribution: 1 with probability ``probs``, else 0."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy

from ..core.engine import no_grad
from ..core.tensor import Tensor
from ..nn.functional import softplus
from ..ops.creation import rand
from ..ops.manipulation import broadcast_tensors
from ..ops.sampling import bernoulli
from ..core.ops import where
from .distribution import Distribution, parameters_from, value_like

__all__ = ["Bernoulli"]


def _log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) without overflow: -softplus(-x)."""
    return -softplus(-x)


class Bernoulli(Distribution):
    """Bernoulli distributions of success probability ``probs`` (a float, list, NumPy array or
    tensor). As in Paddle, ``probs`` is clipped into [eps, 1 - eps] of its dtype, so 0 and 1 give
    finite logits; ``logits`` is log(p / (1 - p)) of the clipped value."""

    def __init__(self, probs: Any, name: Optional[str] = None) -> None:
        self.name = name or "Bernoulli"
        (probs,) = parameters_from("Bernoulli", probs=probs)
        self.dtype = probs.dtype
        eps = float(numpy.finfo(numpy.dtype(str(self.dtype).replace("paddle.", ""))).eps)
        self.probs = probs.clip(eps, 1 - eps)
        self.logits = self.probs.log() - (-self.probs).log1p()
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self) -> Tensor:
        """probs."""
        return self.probs

    @property
    def variance(self) -> Tensor:
        """probs * (1 - probs)."""
        return self.probs * (1 - self.probs)

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """0/1 draws in the parameters' dtype, of shape ``shape + batch_shape``; not differentiable."""
        with no_grad():
            return bernoulli(self.probs.expand(list(self._extend_shape(shape))))

    def rsample(self, shape: Sequence[int] = (), temperature: float = 1.0) -> Tensor:
        """Relaxed draws (Gumbel-softmax's binary case, as Paddle): the logit
        (log u - log(1 - u) + logits) / temperature for u uniform, differentiable in probs.
        Apply sigmoid to get values in (0, 1)."""
        if not isinstance(temperature, float) or temperature <= 0:
            raise ValueError(f"Bernoulli.rsample: temperature must be a positive float, got {temperature!r}")
        u = rand(list(self._extend_shape(shape)), self.dtype)
        return (u.log() - (-u).log1p() + self.logits) / temperature

    def cdf(self, value: Any) -> Tensor:
        """P(X <= value): 0 below 0, 1 - probs on [0, 1), 1 from 1 on."""
        value = value_like(self.probs, value, "Bernoulli.cdf")
        probs, value = broadcast_tensors([self.probs, value])
        return where(value < 0, probs * 0, where(value < 1, 1 - probs, probs * 0 + 1))

    def log_prob(self, value: Any) -> Tensor:
        """value * log(p) + (1 - value) * log(1 - p), computed from the logits."""
        value = value_like(self.probs, value, "Bernoulli.log_prob")
        return value * _log_sigmoid(self.logits) + (1 - value) * _log_sigmoid(-self.logits)

    def entropy(self) -> Tensor:
        """-(p log p + (1 - p) log(1 - p))."""
        return -(self.probs * _log_sigmoid(self.logits) + (1 - self.probs) * _log_sigmoid(-self.logits))

    def kl_divergence(self, other: "Bernoulli") -> Tensor:
        """KL(self || other) between two Bernoulli distributions, elementwise."""
        if not isinstance(other, Bernoulli):
            raise TypeError(f"Bernoulli.kl_divergence: other must be a Bernoulli, got {type(other).__name__}")
        p, a, b = self.probs, self.logits, other.logits
        return p * (_log_sigmoid(a) - _log_sigmoid(b)) + (1 - p) * (_log_sigmoid(-a) - _log_sigmoid(-b))
