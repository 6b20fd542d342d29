"""The multinomial distribution: counts of ``total_count`` categorical draws."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.ops import where
from ..core.tensor import Tensor
from ..nn.functional import one_hot, softplus
from ..ops.creation import arange, full, zeros_like
from ..ops.manipulation import broadcast_tensors
from ..ops.unary import lgamma
from .categorical import Categorical
from .distribution import Distribution, require_tensor, shape_tuple, value_like

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Multinomial distributions of ``total_count`` trials (a positive int) over the categories of
    the last axis of ``probs`` (a float tensor, normalised along that axis)."""

    def __init__(self, total_count: int, probs: Tensor) -> None:
        if isinstance(total_count, bool) or not isinstance(total_count, int) or total_count < 1:
            raise ValueError(f"Multinomial: total_count must be an int of at least 1, got {total_count!r}")
        require_tensor("Multinomial", "probs", probs)
        self.total_count = total_count
        self.probs = probs / probs.sum(axis=-1, keepdim=True)
        self._categorical = Categorical(probs.log())
        shape = tuple(probs.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self) -> Tensor:
        """total_count * probs."""
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        """total_count * probs * (1 - probs)."""
        return self.total_count * self.probs * (1 - self.probs)

    def log_prob(self, value: Any) -> Tensor:
        """The log probability of the counts ``value`` (last axis = categories); a category of
        probability 0 counted 0 times contributes 0."""
        value = value_like(self.probs, value, "Multinomial.log_prob")
        logits, value = broadcast_tensors([self.probs.log(), value])
        logits = where((value == 0) & logits.isinf(), zeros_like(logits), logits)
        return lgamma(value.sum(axis=-1) + 1) - lgamma(value + 1).sum(axis=-1) + (value * logits).sum(axis=-1)

    def prob(self, value: Any) -> Tensor:
        """The probability of the counts ``value``."""
        return self.log_prob(value).exp()

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Counts of shape ``shape + batch_shape + event_shape`` in probs' dtype; not differentiable."""
        draws = self._categorical.sample([self.total_count, *shape_tuple(shape, "Multinomial.sample")])
        return one_hot(draws, self.probs.shape[-1]).astype(self.probs.dtype).sum(axis=0)

    def entropy(self) -> Tensor:
        """The entropy, summing over the binomial marginals of each category (Paddle's formula)."""
        dtype = self.probs.dtype
        n = full([], self.total_count, dtype)
        support = arange(1, self.total_count + 1, dtype=dtype).reshape([-1] + [1] * self.probs.ndim)
        logits = self.probs.log() - (-self.probs).log1p()
        log_pmf = (
            support * logits - lgamma(support + 1) - lgamma(n - support + 1) - n * softplus(logits) + lgamma(n + 1)
        )
        spread = (log_pmf.exp() * lgamma(support + 1)).sum(axis=[0, -1])
        return n * self._categorical.entropy() - lgamma(n + 1) + spread
