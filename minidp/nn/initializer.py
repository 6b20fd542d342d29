"""Parameter initializers with Paddle's names, defaults and fan rules (the base class, the two
defaults and the global override are in :mod:`minidp.core.initializer`).

An initializer is called on a parameter and overwrites its values in place (the array keeps its
identity). Random values are drawn on the host from the process generator that
:func:`minidp.seed` resets, then moved to the parameter's device, so a seeded model starts from
the same weights on every rank and on CPU and GPU alike.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy

from ..core.initializer import (
    Constant,
    Initializer,
    XavierUniform,
    _Xavier,
    compute_fans,
    set_global_initializer,
)
from ..core.random import host_generator
from ..core.tensor import Tensor

__all__ = [
    "Initializer",
    "Constant",
    "Normal",
    "TruncatedNormal",
    "Uniform",
    "XavierUniform",
    "XavierNormal",
    "KaimingNormal",
    "KaimingUniform",
    "Assign",
    "calculate_gain",
    "Orthogonal",
    "Dirac",
    "Bilinear",
    "set_global_initializer",
    "ConstantInitializer",
    "NormalInitializer",
    "TruncatedNormalInitializer",
    "UniformInitializer",
    "NumpyArrayInitializer",
    "XavierInitializer",
    "MSRAInitializer",
]


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The recommended scale of initial weights for a nonlinearity (Paddle's table)."""
    gains = {
        "sigmoid": 1.0,
        "linear": 1.0,
        "conv1d": 1.0,
        "conv2d": 1.0,
        "conv3d": 1.0,
        "conv1d_transpose": 1.0,
        "conv2d_transpose": 1.0,
        "conv3d_transpose": 1.0,
        "tanh": 5.0 / 3,
        "relu": math.sqrt(2.0),
        "selu": 3.0 / 4,
    }
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope * slope))
    if nonlinearity not in gains:
        raise ValueError(
            f"calculate_gain: unknown nonlinearity {nonlinearity!r}; use one of {sorted(gains) + ['leaky_relu']}"
        )
    return gains[nonlinearity]


class Normal(Initializer):
    """Gaussian values with the given mean and standard deviation."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, name: Optional[str] = None) -> None:
        self.mean, self.std = float(mean), float(std)

    def _values(self, shape: tuple) -> numpy.ndarray:
        return host_generator().normal(self.mean, self.std, shape)


class TruncatedNormal(Initializer):
    """Gaussian values with the given mean and std, redrawn until they fall within [a, b].

    As in Paddle, ``a`` and ``b`` are absolute cut-offs (default [-2, 2]), not multiples of
    ``std``.
    """

    def __init__(
        self, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, name: Optional[str] = None
    ) -> None:
        self.mean, self.std, self.a, self.b = float(mean), float(std), float(a), float(b)
        if not self.a < self.b:
            raise ValueError(f"TruncatedNormal: the cut-offs must satisfy a < b, got a={a}, b={b}")
        if self.std <= 0:
            raise ValueError(f"TruncatedNormal: std must be positive, got {std}")
        mass = 0.5 * (
            math.erf((self.b - self.mean) / (self.std * math.sqrt(2.0)))
            - math.erf((self.a - self.mean) / (self.std * math.sqrt(2.0)))
        )
        if mass < 1e-3:
            raise ValueError(
                f"TruncatedNormal: [{a}, {b}] holds a fraction {mass:.2g} of N({mean}, {std}**2); "
                "choose cut-offs near the mean (they are absolute values, not multiples of std)"
            )

    def _values(self, shape: tuple) -> numpy.ndarray:
        generator = host_generator()
        values = generator.normal(self.mean, self.std, shape)
        outside = (values < self.a) | (values > self.b)
        while outside.any():
            values[outside] = generator.normal(self.mean, self.std, int(outside.sum()))
            outside = (values < self.a) | (values > self.b)
        return values


class Uniform(Initializer):
    """Uniform values in [low, high)."""

    def __init__(self, low: float = -1.0, high: float = 1.0, name: Optional[str] = None) -> None:
        if low > high:
            raise ValueError(f"Uniform: low ({low}) must not exceed high ({high})")
        self.low, self.high = float(low), float(high)

    def _values(self, shape: tuple) -> numpy.ndarray:
        return host_generator().uniform(self.low, self.high, shape)


class XavierNormal(_Xavier):
    """Glorot normal: std ``gain * sqrt(2 / (fan_in + fan_out))``."""

    def _values(self, shape: tuple) -> numpy.ndarray:
        std = self.gain * math.sqrt(2.0 / self._fan_sum(shape))
        return host_generator().normal(0.0, std, shape)


class _Kaiming(Initializer):
    """He scaling from ``fan_in`` (or, with ``mode='fan_out'``, the fan-out), as Paddle computes it."""

    def __init__(
        self,
        fan_in: Optional[float] = None,
        negative_slope: float = 0.0,
        nonlinearity: str = "relu",
        mode: str = "fan_in",
    ) -> None:
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"{type(self).__name__}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
        if mode == "fan_out" and fan_in is not None:
            raise ValueError(
                f"{type(self).__name__}: mode='fan_out' takes the fan-out from the shape; leave fan_in as None"
            )
        self.fan_in, self.mode = fan_in, mode
        self.gain = calculate_gain(nonlinearity, negative_slope)

    def _fan(self, shape: tuple) -> float:
        if self.fan_in is not None:
            return self.fan_in
        fan_in, fan_out = compute_fans(shape)
        return fan_in if self.mode == "fan_in" else fan_out


class KaimingNormal(_Kaiming):
    """He normal: std ``gain / sqrt(fan)`` with the gain of ``nonlinearity``."""

    def _values(self, shape: tuple) -> numpy.ndarray:
        return host_generator().normal(0.0, self.gain / math.sqrt(self._fan(shape)), shape)


class KaimingUniform(_Kaiming):
    """He uniform: limit ``gain * sqrt(3 / fan)`` with the gain of ``nonlinearity``."""

    def _values(self, shape: tuple) -> numpy.ndarray:
        limit = self.gain * math.sqrt(3.0 / self._fan(shape))
        return host_generator().uniform(-limit, limit, shape)


class Assign(Initializer):
    """Exactly the given values (a list, NumPy array or tensor of the parameter's shape)."""

    def __init__(self, value: Any, name: Optional[str] = None) -> None:
        self.value = numpy.asarray(value.numpy() if isinstance(value, Tensor) else value, dtype=numpy.float64)

    def _values(self, shape: tuple) -> numpy.ndarray:
        if self.value.shape != shape:
            raise ValueError(
                f"Assign: the value has shape {list(self.value.shape)} but the parameter has shape {list(shape)}"
            )
        return self.value


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix over [shape[0], prod(shape[1:])], times ``gain``: the Q of a
    Gaussian matrix's QR decomposition, signs fixed by R's diagonal, as Paddle draws it."""

    def __init__(self, gain: float = 1.0, name: Optional[str] = None) -> None:
        self.gain = float(gain)

    def _values(self, shape: tuple) -> numpy.ndarray:
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: needs a parameter with 2 or more axes, got shape {list(shape)}")
        rows, cols = shape[0], math.prod(shape[1:])
        q, r = numpy.linalg.qr(host_generator().normal(0.0, 1.0, (max(rows, cols), min(rows, cols))))
        q = q * numpy.sign(numpy.diag(r))
        if rows < cols:
            q = q.T
        return self.gain * q.reshape(shape)


class Dirac(Initializer):
    """Identity convolution kernels: within each of ``groups`` groups, output channel i copies input
    channel i at the kernel's centre (a [O, I, *k] weight with 3 to 5 axes)."""

    def __init__(self, groups: int = 1, name: Optional[str] = None) -> None:
        if not isinstance(groups, int) or groups < 1:
            raise ValueError(f"Dirac: groups must be a positive int, got {groups!r}")
        self.groups = groups

    def _values(self, shape: tuple) -> numpy.ndarray:
        if len(shape) not in (3, 4, 5) or shape[0] % self.groups:
            raise ValueError(
                f"Dirac: needs a [O, I, *kernel] weight with 3 to 5 axes and O divisible by "
                f"groups={self.groups}, got shape {list(shape)}"
            )
        values = numpy.zeros(shape)
        per_group = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for i in range(min(per_group, shape[1])):
                values[(g * per_group + i, i) + centre] = 1.0
        return values


class Bilinear(Initializer):
    """Bilinear-interpolation kernels for a [C_in, C_out, K, K] transposed convolution that upsamples
    by a factor of about K / 2 (Paddle's formula, including its fractional row index)."""

    def _values(self, shape: tuple) -> numpy.ndarray:
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError(f"Bilinear: needs a [C_in, C_out, K, K] weight, got shape {list(shape)}")
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        index = numpy.arange(math.prod(shape))
        x, y = index % size, (index / size) % size
        return ((1 - numpy.abs(x / f - c)) * (1 - numpy.abs(y / f - c))).reshape(shape)


# Paddle's older initializer classes, with their argument names (``seed`` is accepted and unused:
# every draw comes from the generator that minidp.seed resets).
class ConstantInitializer(Constant):
    """The older name of :class:`Constant`."""

    def __init__(self, value: float = 0.0, force_cpu: bool = False) -> None:
        super().__init__(value)


class NormalInitializer(Normal):
    """The older form of :class:`Normal`: mean ``loc``, std ``scale``."""

    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0) -> None:
        super().__init__(loc, scale)


class TruncatedNormalInitializer(TruncatedNormal):
    """The older form of :class:`TruncatedNormal`: mean ``loc``, std ``scale``."""

    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0, a: float = -2.0, b: float = 2.0) -> None:
        super().__init__(loc, scale, a, b)


class UniformInitializer(Uniform):
    """The older form of :class:`Uniform` (its diagonal options are not supported)."""

    def __init__(
        self,
        low: float = -1.0,
        high: float = 1.0,
        seed: int = 0,
        diag_num: int = 0,
        diag_step: int = 0,
        diag_val: float = 1.0,
    ) -> None:
        if diag_num:
            raise ValueError("UniformInitializer: diag_num/diag_step/diag_val are not supported; leave diag_num=0")
        super().__init__(low, high)


class NumpyArrayInitializer(Assign):
    """The older name of :class:`Assign`."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)


class XavierInitializer(Initializer):
    """The older Xavier initializer: uniform (default) or normal Glorot scaling."""

    def __init__(
        self,
        uniform: bool = True,
        fan_in: Optional[float] = None,
        fan_out: Optional[float] = None,
        seed: int = 0,
        gain: float = 1.0,
    ) -> None:
        self._init = (XavierUniform if uniform else XavierNormal)(fan_in, fan_out, gain)

    def _values(self, shape: tuple) -> numpy.ndarray:
        return self._init._values(shape)


class MSRAInitializer(Initializer):
    """The older Kaiming (MSRA) initializer: uniform (default) or normal He scaling."""

    def __init__(
        self,
        uniform: bool = True,
        fan_in: Optional[float] = None,
        seed: int = 0,
        negative_slope: float = 0,
        nonlinearity: str = "relu",
        mode: str = "fan_in",
    ) -> None:
        self._init = (KaimingUniform if uniform else KaimingNormal)(fan_in, negative_slope, nonlinearity, mode)

    def _values(self, shape: tuple) -> numpy.ndarray:
        return self._init._values(shape)
