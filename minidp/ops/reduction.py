"""Reductions (sum, mean, max, min, argmax) and the softmax family, with their backward."""

from __future__ import annotations

from typing import Any

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import (
    check_tensor,
    normalize_axis,
    not_a_tensor,
    result,
    single_axis,
    tensor_operands,
    unbroadcast,
    wrap,
)

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "nanmean",
    "nansum",
    "prod",
    "reduce_as",
    "softmax",
    "sum",
]


def _reduced_axes(axis: Any, ndim: int) -> Any:
    """The axes a reduction runs over; an empty list means all of them, as in Paddle."""
    return normalize_axis(axis, ndim) or None


def _expand_like(g: Any, shape: tuple, axes: Any, keepdim: bool) -> Any:
    """Re-insert the reduced axes into ``g`` so that it broadcasts against ``shape``."""
    if axes is None:
        return g.reshape((1,) * len(shape))
    if keepdim:
        return g
    return g.reshape(tuple(1 if i in axes else n for i, n in enumerate(shape)))


@tensor_method("sum")
def sum(x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Sum over ``axis`` (an int, a list, or None for all)."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("sum", "x", x) from None
    axes = _reduced_axes(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    data = xd.sum(axis=axes, keepdims=keepdim)
    if dtype is not None:
        data = data.astype(backend.convert_dtype(dtype))
    elif xd.dtype.kind == "b":
        data = data.astype("int64")
    shape = xd.shape

    def backward(g):
        return (xp.broadcast_to(_expand_like(g, shape, axes, keepdim), shape).astype(xd.dtype),)

    return result(xp.asarray(data), (x,), backward)


@tensor_method("mean")
def mean(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean over ``axis`` (computed in ``dtype`` when given)."""
    check_tensor("mean", "x", x)
    if dtype is not None:
        x = x.astype(dtype)
    xd = x._data
    axes = _reduced_axes(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    data = xp.asarray(xd.mean(axis=axes, keepdims=keepdim))
    shape = xd.shape
    count = xd.size // data.size if data.size else 0

    def backward(g):
        scaled = _expand_like(g, shape, axes, keepdim) * (1.0 / count if count else 0.0)
        return (xp.broadcast_to(scaled, shape).astype(xd.dtype),)

    return result(data, (x,), backward)


def _extreme(x: Tensor, axis: Any, keepdim: bool, pick: str) -> Tensor:
    check_tensor(pick, "x", x)
    xd = x._data
    if xd.size == 0:
        raise ValueError(f"{pick}: cannot reduce a tensor with no elements (shape {x.shape})")
    axes = _reduced_axes(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    data = xp.asarray(getattr(xd, pick)(axis=axes, keepdims=keepdim))
    shape = xd.shape

    def backward(g):
        hits = xd == _expand_like(data, shape, axes, keepdim)
        share = hits / hits.sum(axis=axes, keepdims=True)
        return ((_expand_like(g, shape, axes, keepdim) * share).astype(xd.dtype),)

    return result(data, (x,), backward)


@tensor_method("max", "amax")
@tensor_operands("x")
def max(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Largest value over ``axis``; tied maxima share the gradient equally."""
    return _extreme(x, axis, keepdim, "max")


@tensor_method("min", "amin")
@tensor_operands("x")
def min(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Smallest value over ``axis``; tied minima share the gradient equally."""
    return _extreme(x, axis, keepdim, "min")


amax = max
amin = min


def _arg_extreme(x: Tensor, axis: Any, keepdim: bool, dtype: Any, which: str) -> Tensor:
    """``argmax``/``argmin`` (the array module's function named ``which``)."""
    check_tensor(which, "x", x)
    if axis is not None:
        axis = single_axis(axis, x._data.ndim)
    xp = backend.get_array_module(x._data)
    data = getattr(xp, which)(x._data, axis=axis)
    if keepdim and axis is not None:
        data = xp.expand_dims(data, axis)
    return wrap(xp.asarray(data).astype(backend.convert_dtype(dtype)))


@tensor_method("argmax")
@tensor_operands("x")
def argmax(x: Tensor, axis: int = None, keepdim: bool = False, dtype: Any = "int64", name: str = None) -> Tensor:
    """Index of the largest value (over the flattened tensor when ``axis`` is None)."""
    return _arg_extreme(x, axis, keepdim, dtype, "argmax")


@tensor_method("argmin")
@tensor_operands("x")
def argmin(x: Tensor, axis: int = None, keepdim: bool = False, dtype: Any = "int64", name: str = None) -> Tensor:
    """Index of the smallest value (over the flattened tensor when ``axis`` is None)."""
    return _arg_extreme(x, axis, keepdim, dtype, "argmin")


@tensor_method("softmax")
def softmax(x: Tensor, axis: int = -1, dtype: Any = None, name: str = None) -> Tensor:
    """exp(x) normalised along ``axis``, shifted by the maximum so it cannot overflow."""
    try:
        xd = x._data if dtype is None else x._data.astype(backend.convert_dtype(dtype))
    except AttributeError:
        raise not_a_tensor("softmax", "x", x) from None
    xp = backend.get_array_module(xd)
    e = xp.exp(xd - xd.max(axis=axis, keepdims=True))
    data = e / e.sum(axis=axis, keepdims=True)

    def backward(g):
        gy = g * data
        return ((gy - data * gy.sum(axis=axis, keepdims=True)).astype(x._data.dtype, copy=False),)

    return result(data, (x,), backward)


def log_softmax(x: Tensor, axis: int = -1, dtype: Any = None, name: str = None) -> Tensor:
    """log(softmax(x)) computed as x - logsumexp(x), stable for large inputs."""
    try:
        xd = x._data if dtype is None else x._data.astype(backend.convert_dtype(dtype))
    except AttributeError:
        raise not_a_tensor("log_softmax", "x", x) from None
    xp = backend.get_array_module(xd)
    shifted = xd - xd.max(axis=axis, keepdims=True)
    data = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(g):
        gx = g - xp.exp(data) * g.sum(axis=axis, keepdims=True)
        return (gx.astype(x._data.dtype, copy=False),)

    return result(data, (x,), backward)


@tensor_method("logsumexp")
@tensor_operands("x")
def logsumexp(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """log(sum(exp(x))) over ``axis``, stable for large inputs."""
    xd = x._data
    axes = _reduced_axes(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    peak = xd.max(axis=axes, keepdims=True)
    total = xp.exp(xd - peak).sum(axis=axes, keepdims=True)
    kept = xp.log(total) + peak
    data = kept if keepdim else kept.reshape([n for i, n in enumerate(xd.shape) if axes is not None and i not in axes])
    shape = xd.shape

    def backward(g):
        return (_expand_like(g, shape, axes, keepdim) * xp.exp(xd - kept),)

    return result(xp.asarray(data), (x,), backward)


def _truth(x: Tensor, axis: Any, keepdim: bool, which: str) -> Tensor:
    xd = x._data
    return wrap(
        backend.get_array_module(xd).asarray(
            getattr(xd.astype(bool, copy=False), which)(axis=_reduced_axes(axis, xd.ndim), keepdims=keepdim)
        )
    )


@tensor_method("all")
@tensor_operands("x")
def all(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Whether every element over ``axis`` is non-zero, as a bool tensor."""
    return _truth(x, axis, keepdim, "all")


@tensor_method("any")
@tensor_operands("x")
def any(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Whether some element over ``axis`` is non-zero, as a bool tensor."""
    return _truth(x, axis, keepdim, "any")


@tensor_method("count_nonzero")
@tensor_operands("x")
def count_nonzero(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """How many elements over ``axis`` are non-zero, as int64."""
    xd = x._data
    counts = (xd != 0).sum(axis=_reduced_axes(axis, xd.ndim), keepdims=keepdim)
    return wrap(backend.get_array_module(xd).asarray(counts).astype("int64"))


def _products_of_the_others(v: Any, xp: Any) -> Any:
    """For each element along the last axis, the product of all the other elements there.

    Prefix times suffix products, so a zero in the input gives exact gradients (no division).
    """
    ones = xp.ones(v.shape[:-1] + (1,), v.dtype)
    before = xp.cumprod(xp.concatenate([ones, v[..., :-1]], axis=-1), axis=-1)
    after = xp.cumprod(xp.concatenate([ones, v[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


@tensor_method("prod")
@tensor_operands("x")
def prod(x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = None, name: str = None) -> Tensor:
    """Product over ``axis``; the gradient is exact where inputs are zero."""
    if dtype is not None:
        x = x.astype(dtype)
    xd = x._data
    xp = backend.get_array_module(xd)
    axes = _reduced_axes(axis, xd.ndim)
    data = xp.asarray(xd.prod(axis=axes, keepdims=keepdim, dtype=xd.dtype))
    shape = xd.shape
    reduced = tuple(range(xd.ndim)) if axes is None else axes

    def backward(g):
        kept = [i for i in range(len(shape)) if i not in reduced]
        moved = xd.transpose(kept + list(reduced))
        flat = moved.reshape(moved.shape[: len(kept)] + (-1,))
        others = _products_of_the_others(flat, xp).reshape(moved.shape)
        inverse = [0] * len(shape)
        for i, a in enumerate(kept + list(reduced)):
            inverse[a] = i
        return (_expand_like(g, shape, axes, keepdim) * others.transpose(inverse),)

    return result(data, (x,), backward)


@tensor_method("nansum")
@tensor_operands("x")
def nansum(x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Sum over ``axis`` treating NaN as 0 (NaN elements get no gradient)."""
    xd = x._data
    xp = backend.get_array_module(xd)
    return sum(_nan_to_zero(x, xp), axis=axis, dtype=dtype, keepdim=keepdim)


@tensor_method("nanmean")
@tensor_operands("x")
def nanmean(x: Tensor, axis: Any = None, keepdim: bool = False, name: str = None) -> Tensor:
    """Mean over ``axis`` of the elements that are not NaN."""
    xd = x._data
    xp = backend.get_array_module(xd)
    count = (~xp.isnan(xd)).sum(axis=_reduced_axes(axis, xd.ndim), keepdims=keepdim)
    return sum(_nan_to_zero(x, xp), axis=axis, keepdim=keepdim) / wrap(xp.asarray(count).astype(xd.dtype))


def _nan_to_zero(x: Tensor, xp: Any) -> Tensor:
    """x with NaN replaced by 0; the gradient flows only to the other elements."""
    xd = x._data
    keep = ~xp.isnan(xd)
    return result(xp.where(keep, xd, 0).astype(xd.dtype, copy=False), (x,), lambda g: (g * keep,))


@tensor_method("reduce_as")
@tensor_operands("x", "target")
def reduce_as(x: Tensor, target: Tensor, name: str = None) -> Tensor:
    """Sum x over the axes that broadcasting target's shape to x's shape would add or stretch, so
    the result has target's shape (the gradient of a broadcast)."""
    shape = tuple(target._data.shape)
    lead = x._data.ndim - len(shape)
    if lead < 0 or [n for n, m in zip(shape, x._data.shape[lead:]) if n not in (1, m)]:
        raise ValueError(f"reduce_as: target's shape {list(shape)} does not broadcast to x's shape {x.shape}")
    xp = backend.get_array_module(x._data)
    return result(unbroadcast(x._data, shape), (x,), lambda g: (xp.broadcast_to(g, x._data.shape),))
