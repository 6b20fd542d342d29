"""Elementwise math functions of one tensor, one table line each (see :mod:`.elementwise`).

Each line reads: name, what it computes, dtype rule, forward ``(xp, x)``, derivative
``(xp, x, y)`` with ``y`` the output. Ops with extra arguments (``round``, ``logit``, ``stanh``)
follow the table, built on the same :func:`~.elementwise.elementwise`.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from .elementwise import FLOAT, KEEP, ZERO, elementwise, unary_op
from . import special

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "cos",
    "cosh",
    "deg2rad",
    "digamma",
    "erf",
    "erfinv",
    "exp",
    "expm1",
    "floor",
    "frac",
    "gammaln",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logit",
    "nan_to_num",
    "neg",
    "negative",
    "positive",
    "rad2deg",
    "reciprocal",
    "relu",
    "round",
    "rsqrt",
    "sgn",
    "sigmoid",
    "sign",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "stanh",
    "tan",
    "tanh",
    "trunc",
]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _sinc_slope(xp: Any, x: Any, y: Any) -> Any:
    """d sinc / dx = (cos(pi x) - sinc(x)) / x, and 0 at x = 0."""
    safe = xp.where(x == 0, 1, x).astype(x.dtype, copy=False)
    return xp.where(x == 0, 0, (xp.cos(math.pi * x) - y) / safe).astype(x.dtype, copy=False)


def _sigmoid(xp: Any, x: Any) -> Any:
    """1 / (1 + e ** -x) without overflow: e ** -|x| never exceeds 1."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


# name = unary_op(name, doc, dtype rule, forward: xp function name or (xp, x), dy/dx (xp, x, y))
sin = unary_op("sin", "Sine.", FLOAT, "sin", lambda xp, x, y: xp.cos(x))
cos = unary_op("cos", "Cosine.", FLOAT, "cos", lambda xp, x, y: -xp.sin(x))
tan = unary_op("tan", "Tangent.", FLOAT, "tan", lambda xp, x, y: 1 + y * y)
asin = unary_op("asin", "Inverse sine.", FLOAT, "arcsin", lambda xp, x, y: 1 / xp.sqrt(1 - x * x))
acos = unary_op("acos", "Inverse cosine.", FLOAT, "arccos", lambda xp, x, y: -1 / xp.sqrt(1 - x * x))
atan = unary_op("atan", "Inverse tangent.", FLOAT, "arctan", lambda xp, x, y: 1 / (1 + x * x))
sinh = unary_op("sinh", "Hyperbolic sine.", FLOAT, "sinh", lambda xp, x, y: xp.cosh(x))
cosh = unary_op("cosh", "Hyperbolic cosine.", FLOAT, "cosh", lambda xp, x, y: xp.sinh(x))
tanh = unary_op("tanh", "Hyperbolic tangent.", FLOAT, "tanh", lambda xp, x, y: 1 - y * y)
asinh = unary_op("asinh", "Inverse hyperbolic sine.", FLOAT, "arcsinh", lambda xp, x, y: 1 / xp.sqrt(x * x + 1))
acosh = unary_op("acosh", "Inverse hyperbolic cosine.", FLOAT, "arccosh", lambda xp, x, y: 1 / xp.sqrt(x * x - 1))
atanh = unary_op("atanh", "Inverse hyperbolic tangent.", FLOAT, "arctanh", lambda xp, x, y: 1 / (1 - x * x))
exp = unary_op("exp", "e ** x.", FLOAT, "exp", lambda xp, x, y: y)
expm1 = unary_op("expm1", "e ** x - 1, exact near 0.", FLOAT, "expm1", lambda xp, x, y: y + 1)
log = unary_op("log", "Natural logarithm.", FLOAT, "log", lambda xp, x, y: 1 / x)
log2 = unary_op("log2", "Base-2 logarithm.", FLOAT, "log2", lambda xp, x, y: 1 / (x * _LN2))
log10 = unary_op("log10", "Base-10 logarithm.", FLOAT, "log10", lambda xp, x, y: 1 / (x * _LN10))
log1p = unary_op("log1p", "log(1 + x), exact near 0.", FLOAT, "log1p", lambda xp, x, y: 1 / (1 + x))
sqrt = unary_op("sqrt", "Square root.", FLOAT, "sqrt", lambda xp, x, y: 0.5 / y)
rsqrt = unary_op("rsqrt", "1 / sqrt(x).", FLOAT, lambda xp, x: 1 / xp.sqrt(x), lambda xp, x, y: -0.5 * y / x)
square = unary_op("square", "x * x.", KEEP, lambda xp, x: x * x, lambda xp, x, y: 2 * x)
reciprocal = unary_op("reciprocal", "1 / x.", FLOAT, lambda xp, x: 1 / x, lambda xp, x, y: -y * y)
erf = unary_op(
    "erf",
    "The error function.",
    FLOAT,
    lambda xp, x: backend.erf(x),
    lambda xp, x, y: _TWO_OVER_SQRT_PI * xp.exp(-x * x),
)
erfinv = unary_op(
    "erfinv",
    "Inverse of erf.",
    FLOAT,
    lambda xp, x: special.erfinv(x),
    lambda xp, x, y: xp.exp(y * y) / _TWO_OVER_SQRT_PI,
)
sigmoid = unary_op("sigmoid", "1 / (1 + e ** -x).", FLOAT, _sigmoid, lambda xp, x, y: y * (1 - y))
relu = unary_op(
    "relu", "max(x, 0); the gradient at 0 is 0.", KEEP, lambda xp, x: xp.maximum(x, 0), lambda xp, x, y: x > 0
)
floor = unary_op("floor", "Largest integer <= x (gradient 0).", KEEP, "floor", ZERO)
ceil = unary_op("ceil", "Smallest integer >= x (gradient 0).", KEEP, "ceil", ZERO)
trunc = unary_op("trunc", "x rounded toward 0 (gradient 0).", KEEP, "trunc", ZERO)
frac = unary_op("frac", "x - trunc(x).", KEEP, lambda xp, x: x - xp.trunc(x), lambda xp, x, y: 1)
sign = unary_op("sign", "-1, 0 or 1 by the sign of x (gradient 0).", KEEP, "sign", ZERO)
abs = tensor_method("__abs__")(
    unary_op("abs", "|x|; the gradient at 0 is 0.", KEEP, "abs", lambda xp, x, y: xp.sign(x))
)
neg = tensor_method("__neg__")(unary_op("neg", "-x.", KEEP, lambda xp, x: -x, lambda xp, x, y: -1))
deg2rad = unary_op(
    "deg2rad", "Degrees to radians.", FLOAT, lambda xp, x: x * (math.pi / 180), lambda xp, x, y: math.pi / 180
)
rad2deg = unary_op(
    "rad2deg", "Radians to degrees.", FLOAT, lambda xp, x: x * (180 / math.pi), lambda xp, x, y: 180 / math.pi
)
lgamma = unary_op(
    "lgamma", "log |Gamma(x)|.", FLOAT, lambda xp, x: special.lgamma(x), lambda xp, x, y: special.digamma(x)
)
digamma = unary_op(
    "digamma",
    "psi(x), the derivative of lgamma.",
    FLOAT,
    lambda xp, x: special.digamma(x),
    lambda xp, x, y: special.trigamma(x),
)
sinc = unary_op("sinc", "sin(pi x) / (pi x), and 1 at 0.", FLOAT, "sinc", _sinc_slope)
positive = unary_op("positive", "x itself (+x).", KEEP, lambda xp, x: x, lambda xp, x, y: 1)
sgn = tensor_method("sgn")(sign)
negative = tensor_method("negative")(neg)
gammaln = tensor_method("gammaln")(lgamma)


@tensor_method("nan_to_num")
def nan_to_num(
    x: Tensor,
    nan: float = 0.0,
    posinf: Optional[float] = None,
    neginf: Optional[float] = None,
    name: Optional[str] = None,
) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the dtype's
    largest and smallest values); they get no gradient."""
    return elementwise(
        x,
        lambda xp, v: xp.nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf),
        lambda xp, v, y: xp.isfinite(v),
        KEEP,
        "nan_to_num",
    )


@tensor_method("round")
def round(x: Tensor, decimals: int = 0, name: Optional[str] = None) -> Tensor:
    """Round half to even at ``decimals`` digits (gradient 0)."""
    return elementwise(x, lambda xp, v: xp.round(v, decimals), ZERO, KEEP, "round")


@tensor_method("logit")
def logit(x: Tensor, eps: Optional[float] = None, name: Optional[str] = None) -> Tensor:
    """log(x / (1 - x)); with ``eps`` x is first clipped to [eps, 1 - eps] (gradient 0 outside)."""
    if eps is None:
        return elementwise(x, lambda xp, v: xp.log(v / (1 - v)), lambda xp, v, y: 1 / (v * (1 - v)), FLOAT, "logit")
    lo, hi = float(eps), 1.0 - float(eps)

    def derivative(xp, v, y):
        inside = (v >= lo) & (v <= hi)
        return inside / (v * (1 - v))

    return elementwise(
        x, lambda xp, v: xp.log(xp.clip(v, lo, hi) / (1 - xp.clip(v, lo, hi))), derivative, FLOAT, "logit"
    )


@tensor_method("stanh")
def stanh(x: Tensor, scale_a: float = 0.67, scale_b: float = 1.7159, name: Optional[str] = None) -> Tensor:
    """scale_b * tanh(scale_a * x)."""
    return elementwise(
        x,
        lambda xp, v: scale_b * xp.tanh(scale_a * v),
        lambda xp, v, y: scale_a * (scale_b - y * y / scale_b),
        FLOAT,
        "stanh",
    )
