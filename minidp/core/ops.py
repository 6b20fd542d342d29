"""Elementwise arithmetic and math functions, each with its backward beside it.

Binary ops broadcast like NumPy; their backward sums each gradient back to its input's shape
(only when the shapes differ). Gradients are computed only for inputs that need them.
"""

from __future__ import annotations

import math
from typing import Any

from . import backend, threads
from .tensor import Tensor, tensor_method
from .op_util import lift, not_a_tensor, result, unbroadcast, wrap

__all__ = [
    "add",
    "add_n",
    "astype",
    "cast",
    "clamp",
    "clip",
    "div",
    "divide",
    "gelu",
    "maximum",
    "minimum",
    "mul",
    "multiply",
    "pow",
    "scale",
    "sub",
    "subtract",
    "true_divide",
    "where",
]

_BFLOAT16 = backend.BFLOAT16
# Paddle computes an integer or bool tensor met by a Python float, and a true division of
# integers, in float32, whatever the default dtype
INTEGER_TO_FLOAT = backend.DTYPES["float32"]


_PYTHON_NUMBERS = (int, float, bool)


def kind(value: Any) -> str:
    """The dtype kind of an array operand, or of the Python number standing for one."""
    if isinstance(value, _PYTHON_NUMBERS):
        return "b" if isinstance(value, bool) else "i" if isinstance(value, int) else "f"
    return value.dtype.kind


def _promote(x: Tensor, y: Tensor) -> tuple:
    """Two tensor operands of different dtypes brought to one, as Paddle 3 does for elementwise
    ops: floating dtypes meet at the wider one, float16 and bfloat16 at float32 (through
    ``astype``, so each gradient returns in its input's dtype); an integer or bool operand follows
    a floating one."""
    xd, yd = x._data, y._data
    x_floating, y_floating = backend.is_floating(xd.dtype), backend.is_floating(yd.dtype)
    if x_floating and y_floating:
        wider = xd.dtype if xd.dtype.itemsize > yd.dtype.itemsize else yd.dtype
        target = backend.DTYPES["float32"] if xd.dtype.itemsize == yd.dtype.itemsize else wider
        x, y = astype(x, target), astype(y, target)
    elif x_floating:
        y = wrap(yd.astype(xd.dtype))
    elif y_floating:
        x = wrap(xd.astype(yd.dtype))
    return x, y, x._data, y._data


def _operands(op: str, x: Any, y: Any):
    x = lift(x, y._data if isinstance(y, Tensor) else None)
    y = lift(y, x._data)
    xd, yd = x._data, y._data
    # A Python float meets a bfloat16 array as a bfloat16 scalar: ml_dtypes would promote the
    # pair to float32, Paddle keeps bfloat16.
    if isinstance(xd, (int, float, bool)):
        if xd.__class__ is float and yd.__class__ is not float:
            if yd.dtype is _BFLOAT16:
                xd = _BFLOAT16.type(xd)
            elif yd.dtype.kind in "iub":
                yd = yd.astype(INTEGER_TO_FLOAT)
        return x, y, xd, yd
    if isinstance(yd, (int, float, bool)):
        if yd.__class__ is float:
            if xd.dtype is _BFLOAT16:
                yd = _BFLOAT16.type(yd)
            elif xd.dtype.kind in "iub":
                xd = xd.astype(INTEGER_TO_FLOAT)
        return x, y, xd, yd
    if xd.dtype is not yd.dtype and xd.dtype != yd.dtype:
        return _promote(x, y)
    return x, y, xd, yd


def _shape_error(op: str, x: Tensor, y: Tensor) -> ValueError:
    return ValueError(
        f"{op}: shapes {list(getattr(x._data, 'shape', ()))} and "
        f"{list(getattr(y._data, 'shape', ()))} cannot be broadcast together; reshape or "
        "unsqueeze one operand so that each axis matches or is 1"
    )


@tensor_method("add", "__add__", "__radd__")
def add(x: Any, y: Any, name: str = None) -> Tensor:
    """x + y with broadcasting."""
    x, y, xd, yd = _operands("add", x, y)
    try:
        data = xd + yd
    except ValueError:
        raise _shape_error("add", x, y) from None

    def backward(g):
        return (
            None if x.stop_gradient else unbroadcast(g, xd.shape),
            None if y.stop_gradient else unbroadcast(g, yd.shape),
        )

    return result(data, (x, y), backward)


@tensor_method("subtract", "__sub__", "sub", reflected="__rsub__")
def subtract(x: Any, y: Any, name: str = None) -> Tensor:
    """x - y with broadcasting."""
    x, y, xd, yd = _operands("subtract", x, y)
    try:
        data = xd - yd
    except ValueError:
        raise _shape_error("subtract", x, y) from None

    def backward(g):
        return (
            None if x.stop_gradient else unbroadcast(g, xd.shape),
            None if y.stop_gradient else unbroadcast(-g, yd.shape),
        )

    return result(data, (x, y), backward)


@tensor_method("multiply", "__mul__", "__rmul__", "mul")
def multiply(x: Any, y: Any, name: str = None) -> Tensor:
    """x * y with broadcasting."""
    x, y, xd, yd = _operands("multiply", x, y)
    try:
        data = xd * yd
    except ValueError:
        raise _shape_error("multiply", x, y) from None

    def backward(g):
        return (
            None if x.stop_gradient else unbroadcast(g * yd, xd.shape),
            None if y.stop_gradient else unbroadcast(g * xd, yd.shape),
        )

    return result(data, (x, y), backward)


@tensor_method("divide", "__truediv__", "div", "true_divide", reflected="__rtruediv__")
def divide(x: Any, y: Any, name: str = None) -> Tensor:
    """x / y with broadcasting; integers divide in float32, as in Paddle."""
    x, y, xd, yd = _operands("divide", x, y)
    if kind(xd) in "iub" and kind(yd) in "iub":
        xd = xd if isinstance(xd, _PYTHON_NUMBERS) else xd.astype(INTEGER_TO_FLOAT)
        yd = yd if isinstance(yd, _PYTHON_NUMBERS) else yd.astype(INTEGER_TO_FLOAT)
    try:
        data = xd / yd
    except ValueError:
        raise _shape_error("divide", x, y) from None

    def backward(g):
        gx = None if x.stop_gradient else unbroadcast(g / yd, xd.shape)
        gy = None if y.stop_gradient else unbroadcast(-g * data / yd, yd.shape)
        return gx, gy

    return result(data, (x, y), backward)


@tensor_method("pow", "__pow__", reflected="__rpow__")
def pow(x: Any, y: Any, name: str = None) -> Tensor:
    """x ** y; y may be a number or a tensor (then d/dy = x**y * log x)."""
    x, y, xd, yd = _operands("pow", x, y)
    try:
        data = xd**yd
    except ValueError:
        raise _shape_error("pow", x, y) from None

    def backward(g):
        gx = None if x.stop_gradient else unbroadcast(g * yd * xd ** (yd - 1), xd.shape)
        if y.stop_gradient:
            return gx, None
        xp = backend.get_array_module(data)
        return gx, unbroadcast(g * data * xp.log(xd), yd.shape)

    return result(data, (x, y), backward)


def _pick(name: str, x: Any, y: Any) -> Tensor:
    """``maximum``/``minimum`` (the array module's function of that name); at ties x and y share
    the gradient equally, as in Paddle."""
    x, y, xd, yd = _operands(name, x, y)
    xp = backend.get_array_module(xd if not isinstance(xd, (int, float)) else yd)
    try:
        data = getattr(xp, name)(xd, yd)
    except ValueError:
        raise _shape_error(name, x, y) from None

    def backward(g):
        gx = g * (xd == data) - (g * 0.5) * (xd == yd)
        return (
            None if x.stop_gradient else unbroadcast(gx, xd.shape),
            None if y.stop_gradient else unbroadcast(g - gx, yd.shape),
        )

    return result(data, (x, y), backward)


@tensor_method("maximum")
def maximum(x: Any, y: Any, name: str = None) -> Tensor:
    """Elementwise maximum; at ties x and y get half the gradient each."""
    return _pick("maximum", x, y)


@tensor_method("minimum")
def minimum(x: Any, y: Any, name: str = None) -> Tensor:
    """Elementwise minimum; at ties x and y get half the gradient each."""
    return _pick("minimum", x, y)


@tensor_method("where")
def where(condition: Any, x: Any, y: Any, name: str = None) -> Tensor:
    """Pick x where ``condition`` holds, else y (broadcasting all three)."""
    cond = condition._data if isinstance(condition, Tensor) else condition
    x, y, xd, yd = _operands("where", x, y)
    xp = backend.get_array_module(cond)
    data = xp.where(cond, xd, yd)

    def backward(g):
        zero = xp.zeros((), dtype=g.dtype)
        return (
            None if x.stop_gradient else unbroadcast(xp.where(cond, g, zero), xd.shape),
            None if y.stop_gradient else unbroadcast(xp.where(cond, zero, g), yd.shape),
        )

    return result(data, (x, y), backward)


_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu(x: Tensor, approximate: Any = False, name: str = None) -> Tensor:
    """Gaussian error linear unit, x * Phi(x): the exact erf form (``approximate`` False or
    ``'none'``) or the tanh approximation (True or ``'tanh'``). The exact form's forward and
    backward run over cache-sized pieces, shared out over :mod:`minidp.core.threads`."""
    if approximate not in (False, True, "none", "tanh"):
        raise ValueError(f"gelu: approximate must be a bool, 'none' or 'tanh', got {approximate!r}")
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("gelu", "x", x) from None
    xp = backend.get_array_module(xd)
    if approximate is True or approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = k * (xd + 0.044715 * xd**3)
        t = xp.tanh(inner)
        data = 0.5 * xd * (1 + t)

        def backward(g):
            d_inner = k * (1 + 3 * 0.044715 * xd * xd)
            return (g * (0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * d_inner),)

        return result(data, (x,), backward)
    flat = xd.reshape(-1)
    cdf, data = xp.empty_like(flat), xp.empty_like(flat)

    def forward(start: int, stop: int) -> None:
        part = flat[start:stop]
        phi = backend.erf(part * _SQRT_HALF)
        phi += 1
        phi *= 0.5
        cdf[start:stop] = phi
        xp.multiply(part, phi, out=data[start:stop])

    threads.for_each_chunk(flat, flat.size, forward, threads.CACHE_BLOCK)

    def backward(g):
        g_flat = g.reshape(-1)
        gx = xp.empty(flat.shape, xp.result_type(g, cdf))

        def chain(start: int, stop: int) -> None:
            part = flat[start:stop]
            density = part * _INV_SQRT_2PI
            density *= xp.exp(-0.5 * part * part)
            density += cdf[start:stop]
            xp.multiply(g_flat[start:stop], density, out=gx[start:stop])

        threads.for_each_chunk(flat, flat.size, chain, threads.CACHE_BLOCK)
        return (gx.reshape(xd.shape),)

    return result(data.reshape(xd.shape), (x,), backward)


@tensor_method("clip", "clamp")
def clip(x: Tensor, min: float = None, max: float = None, name: str = None) -> Tensor:
    """Limit values to [min, max]; the gradient flows only where x was inside the range."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("clip", "x", x) from None
    xp = backend.get_array_module(xd)
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    if lo > hi:
        raise ValueError(f"clip: min ({min}) must not exceed max ({max})")
    data = xp.clip(xd, lo, hi).astype(xd.dtype, copy=False)
    return result(data, (x,), lambda g: (g * ((xd >= lo) & (xd <= hi)),))


@tensor_method("scale")
def scale(x: Tensor, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True, name: str = None) -> Tensor:
    """scale * x + bias (or scale * (x + bias)), Paddle's ``scale`` op."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("scale", "x", x) from None
    data = xd * scale + bias if bias_after_scale else (xd + bias) * scale
    return result(data.astype(xd.dtype, copy=False), (x,), lambda g: (g * scale,))


@tensor_method("astype", "cast")
def astype(x: Tensor, dtype: Any) -> Tensor:
    """The values converted to ``dtype``; the gradient is converted back."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("astype", "x", x) from None
    target = backend.convert_dtype(dtype)
    if xd.dtype == target:
        return result(xd, (x,), lambda g: (g,))
    data = xd.astype(target)
    if target.kind != "c" and not backend.is_floating(target):
        return wrap(data)
    return result(data, (x,), lambda g: (g.astype(xd.dtype),))


cast = astype


@tensor_method("add_n")
def add_n(inputs: Any, name: str = None) -> Tensor:
    """The elementwise sum of a list of tensors (or of one tensor)."""
    tensors = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not tensors:
        raise ValueError("add_n: needs at least one tensor")
    total = tensors[0]
    for t in tensors[1:]:
        total = add(total, t)
    return total


clamp = clip
div = divide
true_divide = divide
mul = multiply
sub = subtract
