"""Shape ops beyond the basic ones in ``shape.py``: tiling, flipping, rolling, splitting helpers,
broadcasting helpers, axis moves and slicing by axes.

Ops that only rearrange values record their own node with a backward that undoes the move;
the rest are compositions of ``reshape``, ``transpose``, ``expand``, ``split`` and ``getitem``, so
their gradients come from those.
"""

from __future__ import annotations

import builtins
import itertools
from typing import Any, Sequence

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import as_int, normalize_axis, result, single_axis, tensor_operands, wrap
from .creation import meshgrid
from .indexing import index_data, index_select
from .shape import _as_shape, concat, expand, getitem, reshape, split, squeeze, stack, transpose

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "block_diag",
    "broadcast_shape",
    "broadcast_shapes",
    "broadcast_tensors",
    "broadcast_to",
    "cartesian_prod",
    "cat",
    "chunk",
    "column_stack",
    "combinations",
    "concatenate",
    "crop",
    "dsplit",
    "dstack",
    "expand_as",
    "flip",
    "hsplit",
    "hstack",
    "moveaxis",
    "narrow",
    "permute",
    "ravel",
    "repeat_interleave",
    "reverse",
    "roll",
    "rot90",
    "row_stack",
    "slice",
    "strided_slice",
    "swapaxes",
    "swapdims",
    "tensor_split",
    "tile",
    "unbind",
    "unflatten",
    "unfold",
    "unstack",
    "view",
    "view_as",
    "vsplit",
    "vstack",
]


@tensor_method("tile")
@tensor_operands("x")
def tile(x: Tensor, repeat_times: Any, name: str = None) -> Tensor:
    """x repeated ``repeat_times[i]`` times along axis i (leading 1s added to the shorter of the two)."""
    reps = _as_shape(repeat_times)
    xd = x._data
    nd = max(len(reps), xd.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - xd.ndim) + xd.shape
    xp = backend.get_array_module(xd)
    data = xp.tile(xd.reshape(shape), reps)
    interleaved = tuple(v for pair in zip(reps, shape) for v in pair)

    def backward(g):
        return (g.reshape(interleaved).sum(axis=tuple(range(0, 2 * nd, 2))).reshape(xd.shape),)

    return result(data, (x,), backward)


@tensor_method("repeat_interleave")
@tensor_operands("x")
def repeat_interleave(x: Tensor, repeats: Any, axis: int = None, name: str = None) -> Tensor:
    """Each element (or slice along ``axis``) repeated ``repeats`` times (an int or one count per slice).

    With ``axis`` None x is flattened first.
    """
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    axis = single_axis(axis, x._data.ndim)
    length = x._data.shape[axis]
    xp = backend.get_array_module(x._data)
    if isinstance(repeats, (int, float, str)):
        counts = as_int(repeats, "repeat_interleave: repeats")
    else:
        counts = index_data(repeats, "repeat_interleave")
    if not isinstance(counts, int) and counts.shape not in ((length,), (1,), ()):
        raise ValueError(
            f"repeat_interleave: repeats must have one count per slice ({length}), got shape {list(counts.shape)}"
        )
    return index_select(x, wrap(xp.repeat(xp.arange(length), counts)), axis)


@tensor_method("flip", "reverse")
@tensor_operands("x")
def flip(x: Tensor, axis: Any, name: str = None) -> Tensor:
    """x with the order of elements reversed along each axis in ``axis``."""
    if axis is None:
        raise TypeError("flip: axis must be an int or a list of ints, got None")
    xd = x._data
    axes = normalize_axis(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    return result(xp.flip(xd, axes), (x,), lambda g: (xp.flip(g, axes),))


@tensor_method("rot90")
@tensor_operands("x")
def rot90(x: Tensor, k: int = 1, axes: Sequence[int] = (0, 1), name: str = None) -> Tensor:
    """x rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first towards the second)."""
    xd = x._data
    axes = normalize_axis(axes, xd.ndim)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"rot90: axes must be two different axes, got {list(axes)}")
    k = as_int(k, "rot90: k")
    xp = backend.get_array_module(xd)
    return result(xp.rot90(xd, k, axes), (x,), lambda g: (xp.rot90(g, -k, axes),))


@tensor_method("roll")
@tensor_operands("x")
def roll(x: Tensor, shifts: Any, axis: Any = None, name: str = None) -> Tensor:
    """x with elements shifted along ``axis`` (over the flattened tensor when None), wrapping around."""
    xd = x._data
    axes = normalize_axis(axis, xd.ndim)
    if axes is not None:
        shift = _as_shape(shifts)
    else:
        shift = as_int(shifts[0] if isinstance(shifts, (list, tuple)) else shifts, "roll: shifts")
    if axes is not None and len(shift) != len(axes):
        raise ValueError(f"roll: shifts {list(shift)} and axis {list(axes)} must have the same length")
    back = tuple(-s for s in shift) if axes is not None else -shift
    xp = backend.get_array_module(xd)
    return result(xp.roll(xd, shift, axes), (x,), lambda g: (xp.roll(g, back, axes),))


@tensor_method("chunk")
@tensor_operands("x")
def chunk(x: Tensor, chunks: int, axis: int = 0, name: str = None) -> list:
    """x cut into ``chunks`` equal parts along ``axis`` (the length must divide evenly)."""
    return split(x, as_int(chunks, "chunk: chunks"), axis)


@tensor_method("unbind")
@tensor_operands("input")
def unbind(input: Tensor, axis: int = 0) -> list:
    """The slices of ``input`` along ``axis``, each without that axis."""
    axis = single_axis(axis, input._data.ndim)
    return [squeeze(part, axis) for part in split(input, input._data.shape[axis], axis)]


@tensor_method("unstack")
@tensor_operands("x")
def unstack(x: Tensor, axis: int = 0, num: int = None) -> list:
    """The slices of x along ``axis`` (the inverse of :func:`stack`)."""
    if num is not None:
        as_int(num, "unstack: num")
    return unbind(x, axis)


@tensor_method("tensor_split")
@tensor_operands("x")
def tensor_split(x: Tensor, num_or_indices: Any, axis: int = 0, name: str = None) -> list:
    """x cut along ``axis`` into ``n`` nearly equal parts (the first ones one longer), or at the
    given indices, as NumPy's ``array_split``."""
    axis = single_axis(axis, x._data.ndim)
    length = x._data.shape[axis]
    if not isinstance(num_or_indices, (list, tuple, Tensor)):
        num_or_indices = as_int(num_or_indices, "tensor_split: num_or_indices")
        if num_or_indices <= 0:
            raise ValueError(f"tensor_split: the number of sections must be positive, got {num_or_indices}")
        small, extra = divmod(length, num_or_indices)
        return split(x, [small + 1] * extra + [small] * (num_or_indices - extra), axis)
    bounds = [0] + [as_int(i, "tensor_split: each index") for i in num_or_indices] + [length]
    lead = (builtins.slice(None),) * axis
    return [getitem(x, lead + (builtins.slice(a, b),)) for a, b in zip(bounds[:-1], bounds[1:])]


def _split_at(op: str, x: Tensor, num_or_indices: Any, axis: int, min_ndim: int) -> list:
    if x._data.ndim < min_ndim:
        raise ValueError(f"{op}: x needs at least {min_ndim} axes, got shape {x.shape}")
    return tensor_split(x, num_or_indices, axis)


@tensor_method("hsplit")
@tensor_operands("x")
def hsplit(x: Tensor, num_or_indices: Any, name: str = None) -> list:
    """tensor_split along axis 1 (axis 0 for 1-D x)."""
    return _split_at("hsplit", x, num_or_indices, 1 if x._data.ndim > 1 else 0, 1)


@tensor_method("vsplit")
@tensor_operands("x")
def vsplit(x: Tensor, num_or_indices: Any, name: str = None) -> list:
    """tensor_split along axis 0 of an x with at least 2 axes."""
    return _split_at("vsplit", x, num_or_indices, 0, 2)


@tensor_method("dsplit")
@tensor_operands("x")
def dsplit(x: Tensor, num_or_indices: Any, name: str = None) -> list:
    """tensor_split along axis 2 of an x with at least 3 axes."""
    return _split_at("dsplit", x, num_or_indices, 2, 3)


@tensor_method("moveaxis")
@tensor_operands("x")
def moveaxis(x: Tensor, source: Any, destination: Any, name: str = None) -> Tensor:
    """x with axes ``source`` moved to positions ``destination`` (the others keep their order)."""
    nd = x._data.ndim
    src, dst = normalize_axis(source, nd), normalize_axis(destination, nd)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have the same length")
    rest = [a for a in range(nd) if a not in src]
    perm = [0] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    placed = set(dst)
    others = iter(rest)
    return transpose(x, [perm[i] if i in placed else next(others) for i in range(nd)])


@tensor_method("swapaxes", "swapdims")
@tensor_operands("x")
def swapaxes(x: Tensor, perm: Any, axis1: int = None, name: str = None) -> Tensor:
    """x with two axes exchanged (``swapaxes(x, 0, 2)``), or permuted by a list (``swapaxes(x, [2, 0, 1])``)."""
    if axis1 is None:
        return transpose(x, perm)
    axes = list(range(x._data.ndim))
    a, b = normalize_axis([perm, axis1], len(axes))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


swapdims = swapaxes


@tensor_method("broadcast_shape")
def broadcast_shape(x_shape: Sequence[int], y_shape: Sequence[int]) -> list:
    """The shape that tensors of ``x_shape`` and ``y_shape`` broadcast to."""
    try:
        return list(backend.numpy.broadcast_shapes(tuple(x_shape), tuple(y_shape)))
    except ValueError:
        raise ValueError(f"broadcast_shape: shapes {list(x_shape)} and {list(y_shape)} do not broadcast") from None


@tensor_method("broadcast_to")
@tensor_operands("x")
def broadcast_to(x: Tensor, shape: Any, name: str = None) -> Tensor:
    """x broadcast to ``shape``; the gradient sums back over the stretched axes."""
    return expand(x, shape)


@tensor_method("broadcast_tensors")
@tensor_operands("input[]")
def broadcast_tensors(input: Sequence[Tensor], name: str = None) -> list:
    """Every tensor of ``input`` broadcast to their common shape."""
    shape = []
    for t in input:
        shape = broadcast_shape(shape, t.shape)
    return [expand(t, shape) for t in input]


@tensor_method("expand_as")
@tensor_operands("x", "y")
def expand_as(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """x broadcast to y's shape."""
    return expand(x, y.shape)


@tensor_method("view")
@tensor_operands("x")
def view(x: Tensor, shape_or_dtype: Any, name: str = None) -> Tensor:
    """x in a new shape (as :func:`reshape`), or its bytes reinterpreted as another dtype."""
    if isinstance(shape_or_dtype, (list, tuple, Tensor)):
        return reshape(x, shape_or_dtype)
    target = backend.convert_dtype(shape_or_dtype)
    try:
        return wrap(x._data.view(target))
    except ValueError as error:
        raise ValueError(
            f"view: cannot reinterpret a {x._data.dtype} tensor of shape {x.shape} as {target} ({error})"
        ) from None


@tensor_method("view_as")
@tensor_operands("x", "other")
def view_as(x: Tensor, other: Tensor, name: str = None) -> Tensor:
    """x reshaped to other's shape."""
    return reshape(x, other.shape)


@tensor_method("unflatten")
@tensor_operands("x")
def unflatten(x: Tensor, axis: int, shape: Any, name: str = None) -> Tensor:
    """x with axis ``axis`` split into the axes of ``shape`` (one entry may be -1)."""
    dims = x._data.shape
    axis = single_axis(axis, len(dims))
    return reshape(x, list(dims[:axis]) + list(_as_shape(shape)) + list(dims[axis + 1 :]))


def _at_least(inputs: tuple, pad: Any) -> Any:
    out = [reshape(t, pad(t.shape)) for t in inputs]
    return out[0] if len(out) == 1 else out


@tensor_method("atleast_1d")
@tensor_operands("*inputs")
def atleast_1d(*inputs: Tensor, name: str = None) -> Any:
    """Each input with at least one axis (a list when several are given)."""
    return _at_least(inputs, lambda s: s or [1])


@tensor_method("atleast_2d")
@tensor_operands("*inputs")
def atleast_2d(*inputs: Tensor, name: str = None) -> Any:
    """Each input with at least two axes (1-D becomes [1, n])."""
    return _at_least(inputs, lambda s: [1] * (2 - len(s)) + s if len(s) < 2 else s)


@tensor_method("atleast_3d")
@tensor_operands("*inputs")
def atleast_3d(*inputs: Tensor, name: str = None) -> Any:
    """Each input with at least three axes (1-D becomes [1, n, 1], 2-D [m, n, 1])."""
    pads = {0: lambda s: [1, 1, 1], 1: lambda s: [1] + s + [1], 2: lambda s: s + [1]}
    return _at_least(inputs, lambda s: pads[len(s)](s) if len(s) < 3 else s)


@tensor_method("strided_slice")
@tensor_operands("x")
def strided_slice(x: Tensor, axes: Sequence[int], starts: Any, ends: Any, strides: Any, name: str = None) -> Tensor:
    """x[starts[i]:ends[i]:strides[i]] on each axis in ``axes`` (other axes whole)."""
    nd = x._data.ndim
    axes = normalize_axis(axes, nd)
    starts, ends, strides = _as_shape(starts), _as_shape(ends), _as_shape(strides)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError("slice: axes, starts, ends (and strides) must have the same length")
    index = [builtins.slice(None)] * nd
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[a] = builtins.slice(s, e, st)
    return getitem(x, tuple(index))


@tensor_method("slice")
@tensor_operands("input")
def slice(input: Tensor, axes: Sequence[int], starts: Any, ends: Any) -> Tensor:
    """input[starts[i]:ends[i]] on each axis in ``axes`` (ends past the end are clipped)."""
    return strided_slice(input, axes, starts, ends, [1] * len(_as_shape(starts)))


@tensor_operands("x")
def crop(x: Tensor, shape: Any = None, offsets: Any = None, name: str = None) -> Tensor:
    """The block of x of size ``shape`` (-1: to the end) that starts at ``offsets`` (default 0)."""
    dims = x._data.shape
    size = list(dims) if shape is None else list(_as_shape(shape))
    start = [0] * len(dims) if offsets is None else list(_as_shape(offsets))
    if len(size) != len(dims) or len(start) != len(dims):
        raise ValueError(f"crop: shape and offsets need one entry per axis of x ({len(dims)})")
    ends = [n if s == -1 else o + s for n, s, o in zip(dims, size, start)]
    if any(e > n or o < 0 for e, n, o in zip(ends, dims, start)):
        raise ValueError(f"crop: the block at offsets {start} of shape {size} leaves x's shape {list(dims)}")
    return slice(x, list(range(len(dims))), start, ends)


cat = concatenate = concat
permute = transpose
reverse = flip


@tensor_method("ravel")
@tensor_operands("input")
def ravel(input: Tensor) -> Tensor:
    """input flattened to one axis."""
    return reshape(input, [-1])


@tensor_method("narrow")
@tensor_operands("input")
def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The ``length`` slices of ``input`` along ``dim`` starting at ``start``."""
    start = as_int(start, "narrow: start")
    length = as_int(length, "narrow: length")
    size = input._data.shape[single_axis(dim, input._data.ndim)]
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise ValueError(f"narrow: start {start} and length {length} leave axis {dim} of length {size}")
    return slice(input, [dim], [start], [start + length])


@tensor_method("broadcast_shapes")
def broadcast_shapes(*shapes: Sequence[int]) -> list:
    """The shape that tensors of all of ``shapes`` broadcast to."""
    out: list = []
    for shape in shapes:
        out = broadcast_shape(out, shape)
    return out


@tensor_operands("x[]")
def hstack(x: Sequence[Tensor], name: str = None) -> Tensor:
    """Tensors joined along axis 1 (axis 0 for 1-D ones)."""
    parts = [atleast_1d(t) for t in x]
    return concat(parts, axis=0 if parts[0]._data.ndim == 1 else 1)


@tensor_operands("x[]")
def vstack(x: Sequence[Tensor], name: str = None) -> Tensor:
    """Tensors joined along axis 0, 1-D ones as rows."""
    return concat([atleast_2d(t) for t in x], axis=0)


row_stack = vstack


@tensor_operands("x[]")
def dstack(x: Sequence[Tensor], name: str = None) -> Tensor:
    """Tensors joined along axis 2, 1-D and 2-D ones raised to 3-D first."""
    return concat([atleast_3d(t) for t in x], axis=2)


@tensor_operands("x[]")
def column_stack(x: Sequence[Tensor], name: str = None) -> Tensor:
    """1-D tensors as columns (2-D ones as they are) joined along axis 1."""
    return concat([reshape(t, [-1, 1]) if t._data.ndim < 2 else t for t in x], axis=1)


@tensor_method("block_diag")
@tensor_operands("inputs[]")
def block_diag(inputs: Sequence[Tensor], name: str = None) -> Tensor:
    """A matrix with the inputs (each made 2-D) along its diagonal and zeros elsewhere."""
    blocks = [atleast_2d(t) for t in inputs]
    if any(b._data.ndim != 2 for b in blocks):
        raise ValueError(f"block_diag: inputs must have at most 2 axes, got {[t.shape for t in inputs]}")
    xp = backend.get_array_module(blocks[0]._data)
    dtype = blocks[0]._data.dtype
    width = builtins.sum(b._data.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        height, cols = b._data.shape
        pieces = [wrap(xp.zeros((height, left), dtype)), b, wrap(xp.zeros((height, width - left - cols), dtype))]
        rows.append(concat(pieces, axis=1))
        left += cols
    return concat(rows, axis=0)


@tensor_operands("x[]")
def cartesian_prod(x: Sequence[Tensor], name: str = None) -> Tensor:
    """Every combination of one element from each 1-D tensor, one per row ([N1 * N2 * ..., len(x)])."""
    tensors = list(x)
    if len(tensors) == 1:
        return tensors[0]
    return stack([reshape(g, [-1]) for g in meshgrid(tensors)], axis=1)


@tensor_method("combinations")
@tensor_operands("x")
def combinations(x: Tensor, r: int = 2, with_replacement: bool = False, name: str = None) -> Tensor:
    """Every length-``r`` combination of the elements of the 1-D x, one per row (as itertools')."""
    if x._data.ndim != 1:
        raise ValueError(f"combinations: x must be 1-D, got shape {x.shape}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    positions = [p for combo in pick(range(x._data.shape[0]), r) for p in combo]
    xp = backend.get_array_module(x._data)
    chosen = index_select(x, wrap(xp.asarray(positions, dtype="int64")), 0)
    return reshape(chosen, [len(positions) // r if r else 0, r])


@tensor_method("unfold")
@tensor_operands("x")
def unfold(x: Tensor, axis: int, size: int, step: int, name: str = None) -> Tensor:
    """Windows of ``size`` elements every ``step`` along ``axis``: that axis counts the windows and a
    new last axis holds each window."""
    size, step = as_int(size, "unfold: size"), as_int(step, "unfold: step")
    nd = x._data.ndim
    axis = single_axis(axis, nd)
    length = x._data.shape[axis]
    if size <= 0 or step <= 0 or size > length:
        raise ValueError(f"unfold: size ({size}) must be in [1, {length}] and step ({step}) positive")
    count = (length - size) // step + 1
    xp = backend.get_array_module(x._data)
    positions = (xp.arange(count)[:, None] * step + xp.arange(size)[None, :]).reshape(-1)
    windows = index_select(x, wrap(positions), axis)
    shape = list(x._data.shape)
    shape[axis : axis + 1] = [count, size]
    return moveaxis(reshape(windows, shape), axis + 1, -1)


@tensor_method("repeat")
@tensor_operands("input")
def repeat(input: Tensor, *repeats: Any) -> Tensor:
    """``Tensor.repeat``: input tiled ``repeats`` times per axis, given as ints or as one list."""
    if len(repeats) == 1 and not isinstance(repeats[0], int):
        repeats = repeats[0]
    return tile(input, repeats)


@tensor_method("split_with_sizes")
@tensor_operands("x")
def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> list:
    """``Tensor.split_with_sizes``: x cut along ``dim`` into parts of the given sizes."""
    return split(x, list(split_sizes), dim)


@tensor_method("is_same_shape")
@tensor_operands("x", "y")
def is_same_shape(x: Tensor, y: Tensor) -> bool:
    """``Tensor.is_same_shape``: whether x and y have one shape."""
    return x._data.shape == y._data.shape
