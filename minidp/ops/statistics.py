"""Statistics over axes: var, std, median, nanmedian, quantile.

The order statistics sort a view of x whose reduced axes are moved last and merged into one,
then send each output's gradient back to the elements it was read from.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import normalize_axis, result, results, scatter_add_along, tensor_operands
from ..core.ops import INTEGER_TO_FLOAT
from .reduction import mean, sum
from .unary import sqrt

__all__ = [
    "median",
    "nanmedian",
    "nanquantile",
    "quantile",
    "std",
    "var",
]

_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


@tensor_method("var")
@tensor_operands("x")
def var(
    x: Tensor,
    axis: Any = None,
    unbiased: Optional[bool] = None,
    keepdim: bool = False,
    name: Optional[str] = None,
    *,
    correction: float = 1,
) -> Tensor:
    """Variance over ``axis``, dividing by n - correction (``unbiased=False`` means correction 0)."""
    ddof = correction if unbiased is None else (1 if unbiased else 0)
    axes = normalize_axis(axis, x.ndim)
    count = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    centered = x - mean(x, axis=axis, keepdim=True)
    divisor = count - ddof
    return sum(centered * centered, axis=axis, keepdim=keepdim) * (1.0 / divisor if divisor > 0 else math.nan)


@tensor_method("std")
@tensor_operands("x")
def std(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: Optional[str] = None
) -> Tensor:
    """Standard deviation over ``axis`` (divides by n - 1 unless ``unbiased=False``)."""
    return sqrt(var(x, axis=axis, unbiased=unbiased, keepdim=keepdim))


class _Gathered:
    """x with the reduced axes moved last and merged, and the way back to x's layout."""

    def __init__(self, xd: Any, axis: Any, keepdim: bool) -> None:
        axes = normalize_axis(axis, xd.ndim)
        reduced = tuple(range(xd.ndim)) if axes is None else tuple(sorted(axes))
        kept = tuple(i for i in range(xd.ndim) if i not in reduced)
        order = kept + reduced
        moved = xd.transpose(order)
        self.lead_shape = moved.shape[: len(kept)]
        self.values = moved.reshape(self.lead_shape + (-1,))
        self.inverse = [order.index(i) for i in range(xd.ndim)]
        self.moved_shape = moved.shape
        if keepdim:
            self.out_shape = tuple(1 if i in reduced else n for i, n in enumerate(xd.shape))
        else:
            self.out_shape = self.lead_shape

    def back(self, flat: Any) -> Any:
        """An array laid out like ``values`` returned to x's layout."""
        return flat.reshape(self.moved_shape).transpose(self.inverse)

    def out(self, picked: Any) -> Any:
        """A per-slice result (shape lead_shape) in the output's shape."""
        return picked.reshape(self.out_shape)


def _median(x: Tensor, axis: Any, keepdim: bool, mode: str, ignore_nan: bool, op: str) -> Any:
    if mode not in ("avg", "min"):
        raise ValueError(f"{op}: mode must be 'avg' or 'min', got {mode!r}")
    xd = x._data
    if xd.dtype.kind != "f":
        xd = xd.astype(INTEGER_TO_FLOAT)
    xp = backend.get_array_module(xd)
    gathered = _Gathered(xd, axis, keepdim)
    v = gathered.values
    if v.shape[-1] == 0:
        raise ValueError(f"{op}: cannot reduce an axis of length 0")
    order = xp.argsort(v, axis=-1, kind="stable")  # NaN sorts last
    ordered = xp.take_along_axis(v, order, axis=-1)
    nan = xp.isnan(v)
    count = (~nan).sum(axis=-1, keepdims=True) if ignore_nan else xp.full(v.shape[:-1] + (1,), v.shape[-1])
    low = xp.maximum((count - 1) // 2, 0)  # the two middle positions, equal for odd counts
    high = xp.maximum(count // 2, 0)
    poisoned = (count == 0) if ignore_nan else nan.any(axis=-1, keepdims=True)
    lo = xp.take_along_axis(ordered, low, axis=-1)
    if mode == "min":
        picked = xp.where(poisoned, xp.nan, lo)
        index = xp.take_along_axis(order, low, axis=-1)

        def backward_min(grads):
            gv = xp.zeros(gathered.values.shape, grads[0].dtype)
            scatter_add_along(xp, gv, index, grads[0].reshape(index.shape), -1)
            return (gathered.back(gv),)

        values = gathered.out(picked[..., 0])
        if axis is None:
            return result(values, (x,), lambda g: backward_min((g,)))
        return results(
            (values, gathered.out(index[..., 0]).astype("int64")), (x,), backward_min, differentiable=(True, False)
        )
    hi = xp.take_along_axis(ordered, high, axis=-1)
    picked = xp.where(poisoned, xp.nan, (lo + hi) / 2)

    def backward(g):
        g = g.reshape(lo.shape)
        at_lo, at_hi = v == lo, v == hi
        share = at_lo / xp.maximum(at_lo.sum(axis=-1, keepdims=True), 1) + at_hi / xp.maximum(
            at_hi.sum(axis=-1, keepdims=True), 1
        )
        return (gathered.back(g * 0.5 * share).astype(xd.dtype, copy=False),)

    return result(gathered.out(picked[..., 0]), (x,), backward)


@tensor_method("median")
@tensor_operands("x")
def median(x: Tensor, axis: Any = None, keepdim: bool = False, mode: str = "avg", name: Optional[str] = None) -> Any:
    """The middle value over ``axis``: the mean of the two middle ones (``mode='avg'``) or the
    lower one (``'min'``, which with an axis also returns its index). NaN anywhere gives NaN.

    In 'avg' mode each of the two middle values sends half the gradient, shared among the
    elements equal to it, as Paddle does.
    """
    return _median(x, axis, keepdim, mode, False, "median")


@tensor_method("nanmedian")
@tensor_operands("x")
def nanmedian(x: Tensor, axis: Any = None, keepdim: bool = False, mode: str = "avg", name: Optional[str] = None) -> Any:
    """:func:`median` of the elements that are not NaN (NaN where a slice has none)."""
    return _median(x, axis, keepdim, mode, True, "nanmedian")


def _quantile(x: Tensor, q: Any, axis: Any, keepdim: bool, interpolation: str, ignore_nan: bool, op: str) -> Tensor:
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    qs = q.tolist() if isinstance(q, Tensor) else q
    single = isinstance(qs, (int, float))
    qs = [float(qs)] if single else [float(v) for v in qs]
    if not qs or any(not 0.0 <= v <= 1.0 for v in qs):
        raise ValueError(f"{op}: q must be in [0, 1] (one number or a non-empty list), got {q!r}")
    xd = x._data
    xp = backend.get_array_module(xd)
    gathered = _Gathered(xd, axis, keepdim)
    v = gathered.values
    order = xp.argsort(v, axis=-1, kind="stable")  # NaN sorts last
    ordered = xp.take_along_axis(v, order, axis=-1)
    nan = xp.isnan(v)
    count = (~nan).sum(axis=-1, keepdims=True) if ignore_nan else xp.full(v.shape[:-1] + (1,), v.shape[-1])
    poisoned = (count == 0) if ignore_nan else nan.any(axis=-1, keepdims=True)
    picks = []  # per q: the sorted positions below and above it, and the weight of the one above
    for value in qs:
        position = value * xp.maximum(count - 1, 0)
        below = xp.floor(position)
        weight = {
            "linear": position - below,
            "lower": 0 * position,
            "higher": 0 * position + 1,
            "midpoint": 0 * position + 0.5,
            "nearest": (xp.round(position) > below) * 1.0,
        }[interpolation]
        picks.append((below.astype("int64"), xp.ceil(position).astype("int64"), weight.astype(v.dtype)))
    outs = []
    for below, above, w in picks:
        picked = xp.take_along_axis(ordered, below, axis=-1) * (1 - w) + xp.take_along_axis(ordered, above, axis=-1) * w
        outs.append(gathered.out(xp.where(poisoned, xp.nan, picked)[..., 0]))
    data = outs[0] if single else xp.stack(outs)

    def backward(g):
        gv = xp.zeros(v.shape, g.dtype)
        for i, (below, above, w) in enumerate(picks):
            gi = (g if single else g[i]).reshape(v.shape[:-1] + (1,))
            scatter_add_along(xp, gv, xp.take_along_axis(order, below, axis=-1), gi * (1 - w), -1)
            scatter_add_along(xp, gv, xp.take_along_axis(order, above, axis=-1), gi * w, -1)
        return (gathered.back(gv),)

    return result(data, (x,), backward)


@tensor_method("quantile")
@tensor_operands("x")
def quantile(
    x: Tensor,
    q: Union[float, Sequence[float], Tensor],
    axis: Any = None,
    keepdim: bool = False,
    interpolation: str = "linear",
    name: Optional[str] = None,
) -> Tensor:
    """The q-th quantiles over ``axis`` (NaN where a slice holds NaN); a list of q adds a leading
    axis, one entry per q."""
    return _quantile(x, q, axis, keepdim, interpolation, False, "quantile")


@tensor_method("nanquantile")
@tensor_operands("x")
def nanquantile(
    x: Tensor,
    q: Union[float, Sequence[float], Tensor],
    axis: Any = None,
    keepdim: bool = False,
    interpolation: str = "linear",
    name: Optional[str] = None,
) -> Tensor:
    """:func:`quantile` of the elements that are not NaN (NaN where a slice has none)."""
    return _quantile(x, q, axis, keepdim, interpolation, True, "nanquantile")
