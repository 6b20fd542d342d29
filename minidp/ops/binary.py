"""Elementwise functions of two broadcasting tensors, one table line each (see :mod:`.elementwise`),
and the bitwise ops on integer and bool tensors.

Each line reads: name, what it computes, dtype rule, forward ``(xp, x, y)``, and the partial
derivatives ``(xp, x, y, out)`` with respect to x and y.
"""

from __future__ import annotations

import math

from typing import Any, Callable, Optional

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import named_op, tensor_operands, wrap
from .elementwise import FLOAT, KEEP, ZERO, binary_op
from ..core.ops import _operands, add, multiply, subtract

__all__ = [
    "atan2",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "copysign",
    "floor_divide",
    "floor_mod",
    "fmax",
    "fmin",
    "frexp",
    "gcd",
    "heaviside",
    "hypot",
    "lcm",
    "ldexp",
    "lerp",
    "logaddexp",
    "mod",
    "nextafter",
    "remainder",
]


_LN2 = math.log(2.0)


def _fmax_takes_x(xp: Any, x: Any, y: Any) -> Any:
    """Where fmax's result is x: x is at least y, or y is NaN (ties go to x, as in Paddle)."""
    return (x >= y) | xp.isnan(y)


def _fmin_takes_x(xp: Any, x: Any, y: Any) -> Any:
    return (x <= y) | xp.isnan(y)


def _same_sign(xp: Any, x: Any, y: Any) -> Any:
    """+1 where x and y have the same sign bit, else -1: d copysign(x, y) / dx."""
    return xp.where(xp.signbit(x) == xp.signbit(y), 1.0, -1.0).astype(x.dtype, copy=False)


# name = binary_op(name, doc, dtype rule, forward (xp, x, y), d/dx (xp, x, y, out), d/dy (xp, x, y, out))
atan2 = binary_op(
    "atan2",
    "The angle of the point (y, x): arctan(x / y) in the right quadrant.",
    FLOAT,
    lambda xp, x, y: xp.arctan2(x, y),
    lambda xp, x, y, o: y / (x * x + y * y),
    lambda xp, x, y, o: -x / (x * x + y * y),
)
hypot = binary_op(
    "hypot",
    "sqrt(x ** 2 + y ** 2) without overflow.",
    FLOAT,
    lambda xp, x, y: xp.hypot(x, y),
    lambda xp, x, y, o: x / o,
    lambda xp, x, y, o: y / o,
)
logaddexp = binary_op(
    "logaddexp",
    "log(exp(x) + exp(y)) without overflow.",
    FLOAT,
    lambda xp, x, y: xp.logaddexp(x, y),
    lambda xp, x, y, o: xp.exp(x - o),
    lambda xp, x, y, o: xp.exp(y - o),
)
fmax = binary_op(
    "fmax",
    "Elementwise maximum that ignores NaN; ties send the gradient to x.",
    KEEP,
    lambda xp, x, y: xp.fmax(x, y),
    lambda xp, x, y, o: _fmax_takes_x(xp, x, y),
    lambda xp, x, y, o: ~_fmax_takes_x(xp, x, y),
)
fmin = binary_op(
    "fmin",
    "Elementwise minimum that ignores NaN; ties send the gradient to x.",
    KEEP,
    lambda xp, x, y: xp.fmin(x, y),
    lambda xp, x, y, o: _fmin_takes_x(xp, x, y),
    lambda xp, x, y, o: ~_fmin_takes_x(xp, x, y),
)
copysign = binary_op(
    "copysign",
    "|x| with the sign of y.",
    FLOAT,
    lambda xp, x, y: xp.copysign(x, y),
    lambda xp, x, y, o: _same_sign(xp, x, y),
    ZERO,
)
heaviside = binary_op(
    "heaviside",
    "0 where x < 0, 1 where x > 0, y where x == 0.",
    KEEP,
    lambda xp, x, y: xp.heaviside(x, y),
    ZERO,
    lambda xp, x, y, o: x == 0,
)
remainder = binary_op(
    "remainder",
    "x mod y with the sign of y (Python's %).",
    KEEP,
    lambda xp, x, y: xp.mod(x, y),
    lambda xp, x, y, o: 1,
    lambda xp, x, y, o: -xp.floor(x / y),
)
ldexp = binary_op(
    "ldexp",
    "x * 2 ** y.",
    FLOAT,
    lambda xp, x, y: x * xp.exp2(y),
    lambda xp, x, y, o: xp.exp2(y),
    lambda xp, x, y, o: o * _LN2,
)
mod = floor_mod = tensor_method("mod", "floor_mod", "__mod__", reflected="__rmod__")(remainder)


@tensor_method("frexp")
@tensor_operands("x")
def frexp(x: Tensor, name: Optional[str] = None) -> tuple:
    """Mantissa in [0.5, 1) and exponent with x = mantissa * 2 ** exponent (both in x's dtype)."""
    xd = x._data
    mantissa, exponent = backend.get_array_module(xd).frexp(xd)
    return wrap(mantissa), wrap(exponent.astype(xd.dtype))


@tensor_method("floor_divide", "__floordiv__", reflected="__rfloordiv__")
def floor_divide(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    """x // y rounded toward -inf; no gradient, as in Paddle."""
    x, y, xd, yd = _operands("floor_divide", x, y)
    xp = backend.get_array_module(yd if isinstance(xd, (int, float, bool)) else xd)
    return wrap(xp.asarray(xp.floor_divide(xd, yd)))


@tensor_method("lerp")
def lerp(x: Tensor, y: Tensor, weight: Any, name: Optional[str] = None) -> Tensor:
    """x + weight * (y - x); ``weight`` is a number or a broadcasting tensor."""
    return add(x, multiply(weight, subtract(y, x)))


def _without_gradient(which: str, doc: str) -> Callable:
    """A broadcasting binary op that records no gradient, the array module's ``which``, bound as
    the Tensor method ``which``."""

    def op(x: Any, y: Any, out: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
        x, y, xd, yd = _operands(which, x, y)
        xp = backend.get_array_module(yd if isinstance(xd, (int, float, bool)) else xd)
        return wrap(xp.asarray(getattr(xp, which)(xd, yd)))

    return tensor_method(which)(named_op(op, which, doc))


bitwise_and = tensor_method("__and__", "__rand__")(
    _without_gradient("bitwise_and", "Bitwise and of integer or bool tensors.")
)
bitwise_or = tensor_method("__or__", "__ror__")(
    _without_gradient("bitwise_or", "Bitwise or of integer or bool tensors.")
)
bitwise_xor = tensor_method("__xor__", "__rxor__")(
    _without_gradient("bitwise_xor", "Bitwise exclusive or of integer or bool tensors.")
)
gcd = _without_gradient("gcd", "Greatest common divisor of integer tensors (non-negative).")
lcm = _without_gradient("lcm", "Least common multiple of integer tensors (non-negative).")
nextafter = _without_gradient("nextafter", "The next floating-point value after x in the direction of y.")


@tensor_method("bitwise_not", "__invert__", "bitwise_invert")
@tensor_operands("x")
def bitwise_not(x: Tensor, out: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
    """Bitwise not of an integer or bool tensor."""
    return wrap(backend.get_array_module(x._data).invert(x._data))


bitwise_invert = bitwise_not


@tensor_method("bitwise_left_shift", "__lshift__")
def bitwise_left_shift(
    x: Tensor, y: Tensor, is_arithmetic: bool = True, out: Optional[Tensor] = None, name: Optional[str] = None
) -> Tensor:
    """x shifted left by y bits."""
    x, y, xd, yd = _operands("bitwise_left_shift", x, y)
    return wrap(backend.get_array_module(xd).left_shift(xd, yd))


@tensor_method("bitwise_right_shift", "__rshift__")
def bitwise_right_shift(
    x: Tensor, y: Tensor, is_arithmetic: bool = True, out: Optional[Tensor] = None, name: Optional[str] = None
) -> Tensor:
    """x shifted right by y bits: copying the sign bit (``is_arithmetic``) or filling with zeros."""
    x, y, xd, yd = _operands("bitwise_right_shift", x, y)
    xp = backend.get_array_module(xd)
    if is_arithmetic or xd.dtype.kind == "u":
        return wrap(xp.right_shift(xd, yd))
    unsigned = xd.dtype.str.replace("i", "u")
    return wrap(xp.right_shift(xd.view(unsigned), yd.astype(unsigned)).view(xd.dtype))
