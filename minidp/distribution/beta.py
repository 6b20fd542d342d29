"""The Beta distribution on [0, 1], the two-category case of the Dirichlet."""

from __future__ import annotations

import numbers
from typing import Any, Sequence

from ..core.tensor import Tensor
from ..ops.creation import full
from ..ops.manipulation import broadcast_tensors, stack
from .dirichlet import Dirichlet
from .distribution import Distribution, value_like

__all__ = ["Beta"]


def _parameter(name: str, value: Any) -> Tensor:
    """A real number as a 0-d tensor of the default dtype; a tensor as it is."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return full([], float(value))
    raise TypeError(f"Beta: {name} must be a real number or a Tensor, got {type(value).__name__}")


class Beta(Distribution):
    """Beta distributions of shapes ``alpha`` and ``beta`` (real numbers or tensors, broadcast
    together), computed through Dirichlet([alpha, beta]). No ``rsample`` and no
    ``kl_divergence`` method (Paddle defines neither); ``minidp.distribution.kl_divergence``
    covers Beta-Beta."""

    def __init__(self, alpha: Any, beta: Any) -> None:
        self.alpha, self.beta = broadcast_tensors([_parameter("alpha", alpha), _parameter("beta", beta)])
        self._dirichlet = Dirichlet(stack([self.alpha, self.beta], axis=-1))
        super().__init__(self._dirichlet.batch_shape)

    @property
    def mean(self) -> Tensor:
        """alpha / (alpha + beta)."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self) -> Tensor:
        """alpha beta / ((alpha + beta)^2 (alpha + beta + 1))."""
        total = self.alpha + self.beta
        return self.alpha * self.beta / (total**2 * (total + 1))

    def log_prob(self, value: Any) -> Tensor:
        """The log density at ``value`` in (0, 1)."""
        value = value_like(self.alpha, value, "Beta.log_prob")
        return self._dirichlet.log_prob(stack([value, 1.0 - value], axis=-1))

    def prob(self, value: Any) -> Tensor:
        """The density at ``value``."""
        return self.log_prob(value).exp()

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Draws of shape ``shape + batch_shape``, not differentiable. As in Paddle, a trailing
        axis of size 1 is squeezed away (Beta(a, b).sample([1]) has shape [])."""
        drawn = self._dirichlet.sample(shape)[..., 0]
        return drawn.squeeze(-1) if drawn.ndim and drawn.shape[-1] == 1 else drawn

    def entropy(self) -> Tensor:
        """The differential entropy, of the batch's shape."""
        return self._dirichlet.entropy()
