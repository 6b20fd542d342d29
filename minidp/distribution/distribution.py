"""The base class of every distribution, and the argument rules the distributions share.

A distribution holds its parameters as tensors and builds ``log_prob``, ``entropy``, ``mean`` and
friends from minidp's differentiable ops, so gradients reach the parameters through them. The
conversion rules follow Paddle's: Python numbers and lists become float32 tensors, a float64 NumPy
array keeps float64, and tensors are taken as they are (all or none of the arguments may be tensors).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Sequence, Tuple

import numpy

from ..core.tensor import Tensor
from ..ops.creation import to_tensor

__all__ = ["Distribution"]


def shape_tuple(shape: Any, where: str) -> Tuple[int, ...]:
    """A sample shape as a tuple of ints; ``shape`` must be a list or tuple (Paddle's rule)."""
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{where}: shape must be a list or tuple of ints, got {type(shape).__name__}; pass e.g. [3]")
    return tuple(int(n) for n in shape)


def parameters_from(owner: str, **arguments: Any) -> Tuple[Tensor, ...]:
    """The named arguments of ``owner`` as tensors of one float dtype, broadcast to one shape.

    Either all arguments are tensors (taken as they are) or none is: ints and floats, lists, tuples
    and NumPy arrays become float32, except that a float64 array makes all of them float64.
    """
    values = list(arguments.values())
    tensors = [isinstance(v, Tensor) for v in values]
    if all(tensors):
        return tuple(values)
    if any(tensors):
        given = ", ".join(f"{k}={type(v).__name__}" for k, v in arguments.items())
        raise ValueError(f"{owner}: if one argument is a Tensor, all must be ({given}); wrap the others in to_tensor")
    dtype = "float32"
    for name, value in arguments.items():
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, list, tuple, numpy.ndarray)):
            raise TypeError(
                f"{owner}: {name} must be a float, list, tuple, numpy.ndarray or Tensor, got {type(value).__name__}"
            )
        if dtype == "float32" and isinstance(value, numpy.ndarray) and value.dtype == numpy.float64:
            dtype = "float64"
    arrays = numpy.broadcast_arrays(*(numpy.asarray(v, dtype=dtype) for v in values))
    return tuple(to_tensor(a, dtype=dtype) for a in arrays)


def value_like(parameter: Tensor, value: Any, where: str) -> Tensor:
    """``value`` as a tensor of the parameter's dtype: a float tensor of another dtype is cast with
    a warning (as Paddle does), integer tensors and Python numbers or lists are converted."""
    if not isinstance(value, Tensor):
        return to_tensor(value, dtype=parameter.dtype)
    if value.dtype == parameter.dtype:
        return value
    if value.is_floating_point():
        warnings.warn(f"{where}: value has dtype {value.dtype}, the parameters {parameter.dtype}; value is cast")
    return value.astype(parameter.dtype)


def require_tensor(owner: str, name: str, value: Any) -> Tensor:
    """``value`` itself, which must be a float tensor of at least one dimension with elements."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: {name} must be a Tensor, got {type(value).__name__}; wrap it in to_tensor")
    if value.ndim < 1 or value.size == 0:
        raise ValueError(f"{owner}: {name} must have at least one dimension and one element, got shape {value.shape}")
    return value


class Distribution:
    """A batch of probability distributions of one kind.

    ``batch_shape`` is the shape of the batch of independent distributions, ``event_shape`` the shape
    of one draw (``()`` for a scalar distribution, ``(k,)`` for a k-dimensional one); a sample of
    shape ``s`` has shape ``s + batch_shape + event_shape``. Subclasses fill in what they define;
    the rest raises NotImplementedError, as in Paddle.
    """

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = ()) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)

    @property
    def batch_shape(self) -> Tuple[int, ...]:
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> Tuple[int, ...]:
        """The shape of a single draw."""
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        """The mean of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} does not define mean")

    @property
    def variance(self) -> Tensor:
        """The variance of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} does not define variance")

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Draws of shape ``shape + batch_shape + event_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not define sample")

    def rsample(self, shape: Sequence[int] = ()) -> Tensor:
        """Reparameterised draws: gradients reach the parameters through them."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sample (rsample)")

    def entropy(self) -> Tensor:
        """The entropy of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} does not define entropy")

    def kl_divergence(self, other: "Distribution") -> Tensor:
        """KL(self || other); minidp.distribution.kl_divergence covers the registered pairs."""
        raise NotImplementedError(f"{type(self).__name__} does not define kl_divergence as a method")

    def log_prob(self, value: Any) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not define log_prob")

    def prob(self, value: Any) -> Tensor:
        """The density (or mass) at ``value``: exp(log_prob(value))."""
        return self.log_prob(value).exp()

    def _extend_shape(self, shape: Sequence[int]) -> Tuple[int, ...]:
        return shape_tuple(shape, f"{type(self).__name__}.sample") + self._batch_shape + self._event_shape
