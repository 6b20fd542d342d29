"""The Dirichlet distribution over the probability simplex of the last axis."""

from __future__ import annotations

from typing import Any, Sequence

from ..core import backend
from ..core.random import host_generator
from ..core.tensor import Tensor
from ..ops.creation import to_tensor
from ..ops.unary import digamma, lgamma
from .distribution import Distribution, require_tensor, value_like

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """Dirichlet distributions of ``concentration`` (a float tensor of at least one dimension, all
    entries positive): the event is the last axis, the batch every axis before it. Paddle defines
    no ``rsample`` for it: ``sample`` draws Gamma variables on the host and normalises them, with
    no gradient."""

    def __init__(self, concentration: Tensor) -> None:
        self.concentration = require_tensor("Dirichlet", "concentration", concentration)
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self) -> Tensor:
        """concentration / sum(concentration)."""
        return self.concentration / self.concentration.sum(axis=-1, keepdim=True)

    @property
    def variance(self) -> Tensor:
        """a_i (a_0 - a_i) / (a_0^2 (a_0 + 1)) with a_0 = sum(a)."""
        total = self.concentration.sum(axis=-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total**2 * (total + 1))

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Points of the simplex, of shape ``shape + batch_shape + event_shape``; not differentiable."""
        alpha = backend.to_host(self.concentration._data)
        gammas = host_generator().standard_gamma(backend.numpy.broadcast_to(alpha, self._extend_shape(shape)))
        return to_tensor(gammas / gammas.sum(axis=-1, keepdims=True), dtype=self.concentration.dtype)

    def log_prob(self, value: Any) -> Tensor:
        """The log density at the points ``value`` of the simplex (last axis = event)."""
        value = value_like(self.concentration, value, "Dirichlet.log_prob")
        a = self.concentration
        return (value.log() * (a - 1.0)).sum(axis=-1) + lgamma(a.sum(axis=-1)) - lgamma(a).sum(axis=-1)

    def prob(self, value: Any) -> Tensor:
        """The density at ``value``."""
        return self.log_prob(value).exp()

    def entropy(self) -> Tensor:
        """The differential entropy, of the batch's shape."""
        a = self.concentration
        total = a.sum(axis=-1)
        k = a.shape[-1]
        return (
            lgamma(a).sum(axis=-1)
            - lgamma(total)
            - (k - total) * digamma(total)
            - ((a - 1.0) * digamma(a)).sum(axis=-1)
        )
