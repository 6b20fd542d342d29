"""Searching and sorting: top-k, sort, k-th value, mode, nonzero, unique, sorted-sequence search.

Ops that return values and indices record one differentiable node for the values (a gather at
the chosen positions, so the gradient flows back to where each value came from); indices are
int64 tensors that need no gradient. Sorting is stable, so equal values keep their order.
"""

from __future__ import annotations

from typing import Any

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import as_int, result, single_axis, tensor_operands, unbroadcast, wrap
from .indexing import broadcast_mask, take_along
from .shape import squeeze

__all__ = [
    "argsort",
    "argwhere",
    "bincount",
    "bucketize",
    "histogram",
    "histogram_bin_edges",
    "isin",
    "kthvalue",
    "masked_select",
    "mode",
    "msort",
    "nonzero",
    "searchsorted",
    "sort",
    "topk",
    "unique",
    "unique_consecutive",
]


def _order(xd: Any, axis: int, descending: bool) -> Any:
    """Stable argsort along ``axis``; descending order keeps equal values in their original order."""
    xp = backend.get_array_module(xd)
    if descending:
        key = -xd if xd.dtype.kind in "fic" else -xd.astype("int64")
    else:
        key = xd
    return xp.argsort(key, axis=axis, kind="stable")


def _axis(x: Tensor, axis: Any) -> int:
    return single_axis(axis, x._data.ndim)


@tensor_method("argsort")
@tensor_operands("x")
def argsort(x: Tensor, axis: int = -1, descending: bool = False, stable: bool = False, name: str = None) -> Tensor:
    """The int64 indices that sort x along ``axis``; the sort is always stable (equal values keep
    their order), whatever ``stable`` says."""
    return wrap(_order(x._data, _axis(x, axis), descending))


@tensor_method("sort")
@tensor_operands("x")
def sort(x: Tensor, axis: int = -1, descending: bool = False, stable: bool = False, name: str = None) -> Tensor:
    """x sorted along ``axis``; the gradient returns to each value's original position."""
    axis = _axis(x, axis)
    return take_along(x, _order(x._data, axis, descending), axis)


@tensor_method("topk")
@tensor_operands("x")
def topk(x: Tensor, k: Any, axis: int = None, largest: bool = True, sorted: bool = True, name: str = None) -> tuple:
    """The ``k`` largest (or smallest) values along ``axis`` (default last) and their int64 indices,
    always in sorted order (which ``sorted=False`` permits)."""
    axis = _axis(x, -1 if axis is None else axis)
    k = as_int(k, "topk: k")
    length = x._data.shape[axis] if x._data.ndim else 1
    if not 0 < k <= length:
        raise ValueError(f"topk: k must be in [1, {length}] for axis {axis}, got {k}")
    order = _order(x._data, axis, largest)
    indices = order[(slice(None),) * axis + (slice(0, k),)]
    return take_along(x, indices, axis), wrap(indices)


@tensor_method("kthvalue")
@tensor_operands("x")
def kthvalue(x: Tensor, k: int, axis: int = None, keepdim: bool = False, name: str = None) -> tuple:
    """The k-th smallest value along ``axis`` (default last, k counts from 1) and its int64 index
    (among equal values, the k-th in a stable sort; Paddle leaves that choice unspecified)."""
    axis = _axis(x, -1 if axis is None else axis)
    k = as_int(k, "kthvalue: k")
    length = x._data.shape[axis]
    if not 1 <= k <= length:
        raise ValueError(f"kthvalue: k must be in [1, {length}] for axis {axis}, got {k}")
    index = _order(x._data, axis, False)[(slice(None),) * axis + (slice(k - 1, k),)]
    values = take_along(x, index, axis)
    if keepdim:
        return values, wrap(index)
    return squeeze(values, axis), wrap(index.squeeze(axis))


@tensor_method("mode")
@tensor_operands("x")
def mode(x: Tensor, axis: int = -1, keepdim: bool = False, name: str = None) -> tuple:
    """The most frequent value along ``axis`` and the int64 index of its last occurrence.

    Among equally frequent values the smallest wins, as in Paddle. Counting compares every pair
    of elements along the axis, so the cost grows with the square of that axis's length.
    """
    xd = x._data
    axis = _axis(x, axis)
    xp = backend.get_array_module(xd)
    rows = xp.moveaxis(xd, axis, -1)
    counts = (rows[..., :, None] == rows[..., None, :]).sum(-1)
    frequent = counts == counts.max(-1, keepdims=True)
    winner = xp.where(frequent, rows, rows.max(-1, keepdims=True)).min(-1, keepdims=True)
    n = rows.shape[-1]
    last = n - 1 - xp.argmax((rows == winner)[..., ::-1], axis=-1)
    index = xp.expand_dims(last, axis)
    values = take_along(x, index, axis)
    if keepdim:
        return values, wrap(index)
    return squeeze(values, axis), wrap(last)


@tensor_method("nonzero")
@tensor_operands("x")
def nonzero(x: Tensor, as_tuple: bool = False) -> Any:
    """Positions of the non-zero elements: an int64 [N, ndim] tensor, or one [N] tensor per axis."""
    xp = backend.get_array_module(x._data)
    positions = xp.nonzero(x._data)
    if as_tuple:
        return tuple(wrap(p.astype("int64")) for p in positions)
    return wrap(xp.stack(positions, axis=1).astype("int64"))


@tensor_method("masked_select")
@tensor_operands("x", "mask")
def masked_select(x: Tensor, mask: Tensor, name: str = None) -> Tensor:
    """The elements of x where the boolean ``mask`` (broadcast against x) is True, as a 1-D tensor."""
    xd = x._data
    xp, md, shape = broadcast_mask("masked_select", xd, mask._data)

    def backward(g):
        gx = xp.zeros(shape, dtype=g.dtype)
        gx[md] = g
        return (unbroadcast(gx, xd.shape),)

    return result(xp.broadcast_to(xd, shape)[md], (x,), backward)


@tensor_operands("sorted_sequence", "values")
def searchsorted(
    sorted_sequence: Tensor, values: Tensor, out_int32: bool = False, right: bool = False, name: str = None
) -> Tensor:
    """Where each of ``values`` would be inserted to keep ``sorted_sequence`` sorted (last axis).

    A 1-D sequence serves every value; an N-D one has one sequence per leading position, and
    ``values`` must share those leading axes.
    """
    seq, vals = sorted_sequence._data, values._data
    xp = backend.get_array_module(seq)
    side = "right" if right else "left"
    if seq.ndim <= 1:
        data = xp.searchsorted(seq, vals, side=side)
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise ValueError(
                f"searchsorted: sorted_sequence {list(seq.shape)} and values "
                f"{list(vals.shape)} must share every axis but the last"
            )
        rows, queries = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        data = xp.stack([xp.searchsorted(r, q, side=side) for r, q in zip(rows, queries)])
        data = data.reshape(vals.shape)
    return wrap(xp.asarray(data).astype("int32" if out_int32 else "int64"))


@tensor_method("bucketize")
@tensor_operands("x", "sorted_sequence")
def bucketize(
    x: Tensor, sorted_sequence: Tensor, out_int32: bool = False, right: bool = False, name: str = None
) -> Tensor:
    """The bucket of each element of x among the boundaries of the 1-D ``sorted_sequence``."""
    if sorted_sequence._data.ndim != 1:
        raise ValueError(f"bucketize: sorted_sequence must be 1-D, got shape {sorted_sequence.shape}")
    return searchsorted(sorted_sequence, x, out_int32, right)


def _outputs(values: Any, extras: list, dtype: Any) -> Any:
    """The tensor alone, or the tuple (values, requested extras...) that unique* return."""
    target = backend.convert_dtype(dtype)
    if not extras:
        return wrap(values)
    return (wrap(values),) + tuple(wrap(e.astype(target)) for e in extras)


@tensor_method("unique")
@tensor_operands("x")
def unique(
    x: Tensor,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int = None,
    dtype: Any = "int64",
    sorted: bool = True,
    name: str = None,
) -> Any:
    """The sorted distinct values (or distinct slices along ``axis``), optionally with the index of
    each one's first occurrence, the inverse map that rebuilds x, and the counts (in ``dtype``).

    The values always come sorted; ``sorted`` is accepted for Paddle's signature.
    """
    xd = x._data
    xp = backend.get_array_module(xd)
    if axis is not None:
        axis = _axis(x, axis)
    values, first, inverse, counts = xp.unique(
        xd, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    if axis is None:
        inverse = inverse.reshape(-1)
    extras = [e for e, wanted in ((first, return_index), (inverse, return_inverse), (counts, return_counts)) if wanted]
    return _outputs(values, extras, dtype)


@tensor_method("unique_consecutive")
@tensor_operands("x")
def unique_consecutive(
    x: Tensor,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int = None,
    dtype: Any = "int64",
    name: str = None,
) -> Any:
    """x with each run of equal consecutive elements (or slices along ``axis``) collapsed to one."""
    xd = x._data
    xp = backend.get_array_module(xd)
    if axis is None:
        rows = xd.reshape(-1, 1)
    else:
        axis = _axis(x, axis)
        rows = xp.moveaxis(xd, axis, 0).reshape(xd.shape[axis], -1)
    n = rows.shape[0]
    starts = xp.ones(n, dtype=bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    positions = xp.nonzero(starts)[0]
    if axis is None:
        values = xd.reshape(-1)[positions]
    else:
        values = xp.take(xd, positions, axis=axis)
    inverse = xp.cumsum(starts) - 1
    counts = xp.diff(xp.append(positions, n))
    extras = [e for e, wanted in ((inverse, return_inverse), (counts, return_counts)) if wanted]
    return _outputs(values, extras, dtype)


@tensor_method("argwhere")
@tensor_operands("input")
def argwhere(input: Tensor) -> Tensor:
    """The int64 [N, ndim] positions of the non-zero elements (as :func:`nonzero`)."""
    return nonzero(input)


@tensor_method("msort")
@tensor_operands("input")
def msort(input: Tensor) -> Tensor:
    """input sorted along its first axis."""
    return sort(input, axis=0)


@tensor_method("isin")
@tensor_operands("x", "test_x")
def isin(x: Tensor, test_x: Tensor, assume_unique: bool = False, invert: bool = False, name: str = None) -> Tensor:
    """A bool tensor: whether each element of x occurs in ``test_x`` (the opposite with ``invert``)."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.isin(x._data, test_x._data, assume_unique=assume_unique, invert=invert))


@tensor_method("bincount")
@tensor_operands("x", "weights")
def bincount(x: Tensor, weights: Tensor = None, minlength: int = 0, name: str = None) -> Tensor:
    """How often each value 0..max(x) occurs in the 1-D non-negative integer x (or the sum of the
    ``weights`` at its occurrences); at least ``minlength`` bins."""
    xd = x._data
    if xd.ndim != 1 or xd.dtype.kind not in "iu":
        raise TypeError(f"bincount: x must be a 1-D integer tensor, got {xd.dtype} of shape {x.shape}")
    if xd.size and int(xd.min()) < 0:
        raise ValueError("bincount: x must not hold negative values")
    xp = backend.get_array_module(xd)
    wd = None if weights is None else weights._data
    counts = xp.bincount(xd, weights=wd, minlength=minlength)
    return wrap(counts.astype("int64" if wd is None else wd.dtype))


def _histogram_range(xd: Any, min: float, max: float) -> tuple:
    if min == 0 and max == 0:
        if not xd.size:
            return 0.0, 1.0
        min, max = float(xd.min()), float(xd.max())
    if min > max:
        raise ValueError(f"histogram: min ({min}) must not exceed max ({max})")
    return (min - 0.5, max + 0.5) if min == max else (min, max)


@tensor_method("histogram")
@tensor_operands("input", "weight")
def histogram(
    input: Tensor,
    bins: int = 100,
    min: float = 0.0,
    max: float = 0.0,
    weight: Tensor = None,
    density: bool = False,
    name: str = None,
) -> Tensor:
    """Counts of the elements in ``bins`` equal-width bins over [min, max] (the data's range when both
    are 0): int64 counts, or float32 sums of ``weight`` / a density when those are asked for."""
    bins = as_int(bins, "histogram: bins")
    xd = input._data
    xp = backend.get_array_module(xd)
    low, high = _histogram_range(xd, min, max)
    wd = None if weight is None else weight._data.reshape(-1)
    counts, _ = xp.histogram(xd.reshape(-1), bins=bins, range=(low, high), weights=wd, density=density)
    if wd is None and not density:
        return wrap(counts.astype("int64"))
    return wrap(counts.astype(backend.DEFAULT_FLOAT))


@tensor_method("histogram_bin_edges")
@tensor_operands("input")
def histogram_bin_edges(input: Tensor, bins: int = 100, min: float = 0.0, max: float = 0.0, name: str = None) -> Tensor:
    """The ``bins + 1`` edges :func:`histogram` uses (float32, as Paddle's)."""
    bins = as_int(bins, "histogram_bin_edges: bins")
    xd = input._data
    xp = backend.get_array_module(xd)
    low, high = _histogram_range(xd, min, max)
    return wrap(xp.linspace(low, high, bins + 1).astype(backend.DEFAULT_FLOAT))
