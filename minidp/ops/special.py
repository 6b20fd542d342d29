"""Special functions NumPy lacks, on arrays of either library.

SciPy (``cupyx.scipy`` for CuPy arrays) computes them when it is installed; without it, NumPy
formulas do: Newton steps on erf for erfinv, ``math.lgamma`` element by element, and for
digamma and trigamma the recurrence up to x >= 6, the asymptotic series there and the
reflection formula below 1/2 (relative error below 1e-10).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy

from ..core import backend


def _library_function(name: str, x: Any) -> Optional[Callable]:
    """``scipy.special.<name>`` (``cupyx.scipy.special`` for GPU arrays), or None without SciPy."""
    if not isinstance(x, numpy.ndarray):
        from cupyx.scipy import special as cupy_special

        return getattr(cupy_special, name)
    try:
        from scipy import special
    except ImportError:
        return None
    return getattr(special, name)


def erfinv(x: Any) -> Any:
    """The inverse error function."""
    library = _library_function("erfinv", x)
    return library(x) if library is not None else _erfinv_by_newton(x)


def lgamma(x: Any) -> Any:
    """log |Gamma(x)| (+inf at the poles 0, -1, -2, ...)."""
    library = _library_function("gammaln", x)
    return library(x) if library is not None else _lgamma_from_math(x)


def digamma(x: Any) -> Any:
    """psi(x), the derivative of lgamma."""
    library = _library_function("digamma", x)
    return library(x) if library is not None else _digamma_by_series(x)


def trigamma(x: Any) -> Any:
    """psi'(x), the derivative of digamma."""
    library = _library_function("polygamma", x)
    return library(1, x).astype(x.dtype, copy=False) if library is not None else _trigamma_by_series(x)


def _erfinv_by_newton(x: numpy.ndarray) -> numpy.ndarray:
    """Winitzki's closed-form estimate refined by three Newton steps on erf."""
    a = 0.147
    with numpy.errstate(divide="ignore", invalid="ignore"):
        w = numpy.log((1 - x) * (1 + x))
        first = 2 / (math.pi * a) + w / 2
        y = numpy.sign(x) * numpy.sqrt(numpy.sqrt(first * first - w / a) - first)
        for _ in range(3):
            y = y - (backend.erf(y) - x) / (2 / math.sqrt(math.pi) * numpy.exp(-y * y))
        y = numpy.where(numpy.abs(x) == 1, numpy.sign(x) * numpy.inf, y)
    return y.astype(x.dtype, copy=False)


def _lgamma_or_pole(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole: 0, -1, -2, ...
        return math.inf


_vectorised_lgamma = numpy.frompyfunc(_lgamma_or_pole, 1, 1)


def _lgamma_from_math(x: numpy.ndarray) -> numpy.ndarray:
    return _vectorised_lgamma(x).astype(x.dtype)


def _shifted_series(x: numpy.ndarray, step: Callable, tail: Callable) -> tuple:
    """Sum ``step(v)`` while raising v = x by ones up to >= 6, then add ``tail(v)``."""
    v = x.astype(numpy.float64)
    total = numpy.zeros_like(v)
    for _ in range(6):
        low = v < 6
        total = total + numpy.where(low, step(numpy.where(low, v, 1.0)), 0.0)
        v = numpy.where(low, v + 1, v)
    return total + tail(v)


def _digamma_by_series(x: numpy.ndarray) -> numpy.ndarray:
    with numpy.errstate(divide="ignore", invalid="ignore"):
        reflect = x < 0.5
        v = numpy.where(reflect, 1 - x, x)

        def tail(w):
            s = 1 / (w * w)
            return numpy.log(w) - 0.5 / w - s * (1 / 12 - s * (1 / 120 - s * (1 / 252 - s * (1 / 240 - s / 132))))

        psi = _shifted_series(v, lambda w: -1 / w, tail)
        psi = numpy.where(reflect, psi - math.pi / numpy.tan(math.pi * x), psi)
    return psi.astype(x.dtype, copy=False)


def _trigamma_by_series(x: numpy.ndarray) -> numpy.ndarray:
    with numpy.errstate(divide="ignore", invalid="ignore"):
        reflect = x < 0.5
        v = numpy.where(reflect, 1 - x, x)

        def tail(w):
            s = 1 / (w * w)
            return 1 / w + s / 2 + s / w * (1 / 6 - s * (1 / 30 - s * (1 / 42 - s * (1 / 30 - s * 5 / 66))))

        psi1 = _shifted_series(v, lambda w: 1 / (w * w), tail)
        psi1 = numpy.where(reflect, (math.pi / numpy.sin(math.pi * x)) ** 2 - psi1, psi1)
    return psi1.astype(x.dtype, copy=False)
