"""What a new parameter starts from: the initializer protocol, Paddle's two defaults (zeros for a
bias, Xavier-uniform for a weight) and the global override.

An initializer is called on a parameter and overwrites its values in place (the array keeps its
identity). Random values are drawn on the host from the process generator that
:func:`minidp.seed` resets, then moved to the parameter's device, so a seeded model starts from
the same weights on every rank and on CPU and GPU alike. The other initializers with Paddle's
names are in :mod:`minidp.nn.initializer`.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy

from .random import host_generator
from .tensor import Tensor


def compute_fans(shape: Sequence[int]) -> tuple:
    """(fan_in, fan_out) as Paddle computes them.

    A Linear weight ``[in, out]`` gives (in, out); a convolution weight ``[out_c, in_c, *k]``
    gives (in_c * prod(k), out_c * prod(k)); a vector gives its length twice.
    """
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Base class: a subclass defines ``_values(shape)``, a float64 NumPy array of that shape.

    Calling the initializer on a parameter writes those values into it, in the parameter's dtype.
    """

    def __call__(self, param: Tensor, block: Any = None) -> Tensor:
        param.set_value(self._values(tuple(param._data.shape)))
        return param


class Constant(Initializer):
    """Every element equal to ``value``."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def _values(self, shape: tuple) -> numpy.ndarray:
        return numpy.full(shape, self.value)


class _Xavier(Initializer):
    """Glorot scaling from ``fan_in + fan_out`` (taken from the shape unless given)."""

    def __init__(
        self,
        fan_in: Optional[float] = None,
        fan_out: Optional[float] = None,
        gain: float = 1.0,
        name: Optional[str] = None,
    ) -> None:
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, float(gain)

    def _fan_sum(self, shape: tuple) -> float:
        fan_in, fan_out = compute_fans(shape)
        return (fan_in if self.fan_in is None else self.fan_in) + (fan_out if self.fan_out is None else self.fan_out)


class XavierUniform(_Xavier):
    """Glorot uniform: limit ``gain * sqrt(6 / (fan_in + fan_out))`` (Paddle's default weight init)."""

    def _values(self, shape: tuple) -> numpy.ndarray:
        limit = self.gain * math.sqrt(6.0 / self._fan_sum(shape))
        return host_generator().uniform(-limit, limit, shape)


_global_initializers: dict = {"weight": None, "bias": None}


def set_global_initializer(weight_init: Optional[Initializer], bias_init: Optional[Initializer] = None) -> None:
    """Initializers that every parameter created afterwards uses instead of its layer's default
    (a ParamAttr's own initializer still wins); None restores the defaults."""
    for kind, value in (("weight", weight_init), ("bias", bias_init)):
        if value is not None and not isinstance(value, Initializer):
            raise TypeError(
                f"set_global_initializer: {kind}_init must be an Initializer or None, got {type(value).__name__}"
            )
        _global_initializers[kind] = value


def global_initializer(is_bias: bool) -> Optional[Initializer]:
    """The initializer set by :func:`set_global_initializer` for biases or for weights, if any."""
    return _global_initializers["bias" if is_bias else "weight"]
