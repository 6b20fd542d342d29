"""Special functions NumPy lacks, on arrays of either library (SciPy/CuPy when present)."""
from __future__ import annotations

import math
from typing import Any

import numpy

from .. import backend


def erfinv(x: Any) -> Any:
    """The inverse error function; without SciPy, Newton steps on erf give full precision."""
    if not isinstance(x, numpy.ndarray):
        from cupyx.scipy.special import erfinv as cupy_erfinv

        return cupy_erfinv(x)
    try:
        from scipy.special import erfinv as scipy_erfinv
    except ImportError:
        return _erfinv_by_newton(x)
    return scipy_erfinv(x)


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
