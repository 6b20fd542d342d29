"""Running reductions along an axis (cumsum, cumprod, cummax/cummin, logcumsumexp), their
inverse (diff) and the trapezoidal rule (trapezoid, cumulative_trapezoid).

With ``axis=None`` the running reductions work on the flattened tensor, as in Paddle.
"""

from __future__ import annotations

from typing import Any, Optional

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import as_int, check_tensor, result, results, scatter_add_along, single_axis, tensor_operands
from .reduction import sum
from .shape import concat, getitem

__all__ = [
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "cumulative_trapezoid",
    "diff",
    "logcumsumexp",
    "trapezoid",
]

_INTEGER_SUM_DTYPES = ("bool", "int8", "uint8", "int16", "int32")


def _along(op: str, x: Tensor, axis: Optional[int], dtype: Any) -> tuple:
    """The input array (flattened when axis is None, converted to ``dtype``) and the axis."""
    check_tensor(op, "x", x)
    xd = x._data
    if dtype is not None:
        xd = xd.astype(backend.convert_dtype(dtype), copy=False)
    if axis is None:
        return xd.reshape(-1), 0
    return xd, single_axis(axis, xd.ndim)


def _reverse_cumsum(xp: Any, a: Any, axis: int) -> Any:
    return xp.flip(xp.cumsum(xp.flip(a, axis), axis=axis), axis)


@tensor_method("cumsum")
def cumsum(x: Tensor, axis: Optional[int] = None, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """Running sum along ``axis``; small integer and bool inputs sum in int64, as in Paddle."""
    check_tensor("cumsum", "x", x)
    if dtype is None and x._data.dtype.name in _INTEGER_SUM_DTYPES:
        dtype = "int64"
    xd, ax = _along("cumsum", x, axis, dtype)
    xp = backend.get_array_module(xd)
    shape = x._data.shape
    data = xp.cumsum(xd, axis=ax)

    def backward(g):
        return (_reverse_cumsum(xp, g, ax).reshape(shape).astype(x._data.dtype, copy=False),)

    return result(data, (x,), backward)


@tensor_method("cumprod")
@tensor_operands("x")
def cumprod(x: Tensor, dim: Optional[int] = None, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """Running product along ``dim``; the gradient is exact where inputs are zero."""
    xd, ax = _along("cumprod", x, dim, dtype)
    xp = backend.get_array_module(xd)
    shape = x._data.shape
    data = xp.cumprod(xd, axis=ax)

    def backward(g):
        if not (xd == 0).any():
            return ((_reverse_cumsum(xp, g * data, ax) / xd).reshape(shape),)
        return (_cumprod_grad_with_zeros(xp, xd, g, ax).reshape(shape),)

    return result(data, (x,), backward)


def _cumprod_grad_with_zeros(xp: Any, xd: Any, g: Any, axis: int) -> Any:
    """d/dx_i of sum_j g_j * prod_{k<=j} x_k without dividing by x_i.

    It is prefix_{i-1} * S_i with S_i = g_i + x_{i+1} * S_{i+1}, a recurrence walked once from
    the end (vectorised over every other axis).
    """
    v = xp.moveaxis(xd, axis, -1)
    gv = xp.moveaxis(g, axis, -1)
    n = v.shape[-1]
    prefix = xp.cumprod(xp.concatenate([xp.ones(v.shape[:-1] + (1,), v.dtype), v[..., :-1]], axis=-1), axis=-1)
    tail = xp.empty_like(gv)
    running = gv[..., n - 1]
    tail[..., n - 1] = running
    for i in range(n - 2, -1, -1):
        running = gv[..., i] + v[..., i + 1] * running
        tail[..., i] = running
    return xp.moveaxis(prefix * tail, -1, axis)


def _running_extreme(x: Tensor, axis: Optional[int], dtype: Any, op: str) -> tuple:
    """``cummax``/``cummin``: running values and the index where each was reached (the latest
    index among ties, as in Paddle), as one node with two outputs."""
    xd, ax = _along(op, x, axis, None)
    xp = backend.get_array_module(xd)
    shape = x._data.shape
    ufunc = xp.maximum if op == "cummax" else xp.minimum
    values = ufunc.accumulate(xd, axis=ax)
    positions = xp.arange(xd.shape[ax]).reshape((-1,) + (1,) * (xd.ndim - ax - 1))
    reached = xp.where(xd == values, positions, -1)
    indices = xp.maximum.accumulate(xp.broadcast_to(reached, xd.shape), axis=ax).astype(backend.convert_dtype(dtype))

    def backward(grads):
        gx = xp.zeros(xd.shape, grads[0].dtype)
        scatter_add_along(xp, gx, indices, grads[0], ax)
        return (gx.reshape(shape),)

    return results((values, indices), (x,), backward, differentiable=(True, False))


@tensor_method("cummax")
@tensor_operands("x")
def cummax(x: Tensor, axis: Optional[int] = None, dtype: Any = "int64", name: Optional[str] = None) -> tuple:
    """Running maximum along ``axis`` and the index of each (the latest among ties)."""
    return _running_extreme(x, axis, dtype, "cummax")


@tensor_method("cummin")
@tensor_operands("x")
def cummin(x: Tensor, axis: Optional[int] = None, dtype: Any = "int64", name: Optional[str] = None) -> tuple:
    """Running minimum along ``axis`` and the index of each (the latest among ties)."""
    return _running_extreme(x, axis, dtype, "cummin")


@tensor_method("logcumsumexp")
@tensor_operands("x")
def logcumsumexp(x: Tensor, axis: Optional[int] = None, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """log(cumsum(exp(x))) along ``axis``, shifted by the maximum so it cannot overflow."""
    xd, ax = _along("logcumsumexp", x, axis, dtype)
    xp = backend.get_array_module(xd)
    shape = x._data.shape
    peak = xd.max(axis=ax, keepdims=True) if xd.size else xp.zeros((), xd.dtype)
    data = xp.log(xp.cumsum(xp.exp(xd - peak), axis=ax)) + peak

    def backward(g):
        weights = _reverse_cumsum(xp, g * xp.exp(peak - data), ax)
        return ((weights * xp.exp(xd - peak)).reshape(shape),)

    return result(data, (x,), backward)


@tensor_method("diff")
@tensor_operands("x", "prepend", "append")
def diff(
    x: Tensor,
    n: int = 1,
    axis: int = -1,
    prepend: Optional[Tensor] = None,
    append: Optional[Tensor] = None,
    name: Optional[str] = None,
) -> Tensor:
    """The n-th forward difference along ``axis`` (after joining ``prepend`` and ``append``)."""
    n = as_int(n, "diff: n")
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    axis = single_axis(axis, x.ndim)
    if prepend is not None or append is not None:
        x = concat([t for t in (prepend, x, append) if t is not None], axis=axis)
    before = (slice(None),) * axis
    for _ in range(n):
        x = getitem(x, before + (slice(1, None),)) - getitem(x, before + (slice(None, -1),))
    return x


def _trapezoids(y: Tensor, x: Optional[Tensor], dx: Optional[float], axis: int, op: str) -> tuple:
    """The area of each trapezoid between neighbouring samples of y along ``axis``, and the axis."""
    if x is not None and dx is not None:
        raise ValueError(f"{op}: give the sample points x or the spacing dx, not both")
    axis = single_axis(axis, y.ndim)
    before = (slice(None),) * axis
    heights = (getitem(y, before + (slice(1, None),)) + getitem(y, before + (slice(None, -1),))) * 0.5
    if x is None:
        return heights * (1.0 if dx is None else float(dx)), axis
    widths = diff(x, axis=-1 if x.ndim == 1 else axis)
    if x.ndim == 1:
        widths = widths.reshape([-1] + [1] * (y.ndim - axis - 1))
    return heights * widths, axis


@tensor_method("trapezoid")
@tensor_operands("y", "x")
def trapezoid(
    y: Tensor, x: Optional[Tensor] = None, dx: Optional[float] = None, axis: int = -1, name: Optional[str] = None
) -> Tensor:
    """The integral of y along ``axis`` by the trapezoidal rule (spacing ``dx``, default 1, or
    sample points ``x``)."""
    areas, axis = _trapezoids(y, x, dx, axis, "trapezoid")
    return sum(areas, axis=axis)


@tensor_method("cumulative_trapezoid")
@tensor_operands("y", "x")
def cumulative_trapezoid(
    y: Tensor, x: Optional[Tensor] = None, dx: Optional[float] = None, axis: int = -1, name: Optional[str] = None
) -> Tensor:
    """The running integral of y along ``axis`` by the trapezoidal rule."""
    areas, axis = _trapezoids(y, x, dx, axis, "cumulative_trapezoid")
    return cumsum(areas, axis=axis)
