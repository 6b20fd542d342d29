"""Ops that read or write values at integer positions (gather/scatter families), with backward.

Index tensors must hold integers (int32 or int64, as Paddle requires); positions that are out of
range raise ``ValueError``. Gradients of reads add up at repeated positions; gradients of writes
flow to the values written, and the overwritten input positions get none.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import as_int, lift, normalize_axis, result, single_axis, tensor_operands, unbroadcast, wrap
from ..core.ops import where
from .shape import getitem, squeeze, stack

__all__ = [
    "gather",
    "gather_nd",
    "index_add",
    "index_fill",
    "index_put",
    "index_sample",
    "index_select",
    "masked_fill",
    "masked_scatter",
    "multiplex",
    "put_along_axis",
    "scatter",
    "scatter_add",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_reduce",
    "select_scatter",
    "shard_index",
    "slice_scatter",
    "take",
    "take_along_axis",
    "take_along_dim",
]


def index_data(index: Any, op: str) -> Any:
    """The integer array inside ``index`` (a tensor or a nested list); anything else is a TypeError."""
    data = index._data if isinstance(index, Tensor) else backend.default_array_module().asarray(index)
    if data.dtype.kind not in "iu":
        raise TypeError(
            f"{op}: the index must hold integers (int32 or int64), got {data.dtype}; convert it with .astype('int64')"
        )
    return data


def _out_of_range(op: str, error: Exception) -> ValueError:
    return ValueError(f"{op}: an index is out of range ({error})")


def axis_index(idx: Any, axis: int) -> tuple:
    """The fancy index that picks ``idx`` along ``axis`` and keeps every other position in place.

    ``x[axis_index(idx, axis)]`` equals ``take_along_axis(x, idx, axis)``; used for writes too.
    """
    xp = backend.get_array_module(idx)
    nd = idx.ndim
    return tuple(
        idx if i == axis else xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
        for i, n in enumerate(idx.shape)
    )


def _along(axis: int, idx: Any) -> tuple:
    """The index that selects ``idx`` on ``axis`` and everything on the axes before it."""
    return (slice(None),) * axis + (idx,)


def _take(x: Tensor, idx: Any, axis: int, op: str) -> Tensor:
    """Rows ``idx`` of x along ``axis``; the gradient adds up at repeated rows."""
    xd = x._data
    xp = backend.get_array_module(xd)
    try:
        data = xp.take(xd, idx, axis=axis)
    except IndexError as error:
        raise _out_of_range(op, error) from None

    def backward(g):
        gx = xp.zeros_like(xd)
        xp.add.at(gx, _along(axis, idx), g)
        return (gx,)

    return result(data, (x,), backward)


@tensor_method("gather")
@tensor_operands("x")
def gather(x: Tensor, index: Any, axis: Any = None, name: str = None) -> Tensor:
    """The slices of x at positions ``index`` (1-D, [N, 1] or 0-D) along ``axis`` (default 0)."""
    idx = index_data(index, "gather")
    if idx.ndim == 2 and idx.shape[1] == 1:
        idx = idx.reshape(-1)
    elif idx.ndim > 1:
        raise ValueError(f"gather: the index must be 1-D (or [N, 1]), got shape {list(idx.shape)}")
    return _take(x, idx, single_axis(0 if axis is None else axis, x._data.ndim), "gather")


@tensor_method("index_select")
@tensor_operands("x")
def index_select(x: Tensor, index: Any, axis: int = 0, name: str = None) -> Tensor:
    """The slices of x at the positions in the 1-D ``index`` along ``axis``."""
    idx = index_data(index, "index_select")
    if idx.ndim != 1:
        raise ValueError(f"index_select: the index must be 1-D, got shape {list(idx.shape)}")
    return _take(x, idx, single_axis(axis, x._data.ndim), "index_select")


def _nd_index(index: Any, op: str, ndim: int) -> tuple:
    """The tuple of per-axis index arrays of an [..., k] index into a tensor of ``ndim`` axes."""
    idx = index_data(index, op)
    if idx.ndim == 0 or idx.shape[-1] > ndim:
        raise ValueError(
            f"{op}: the index's last axis ({list(idx.shape)}) must be at most the number of axes of the tensor ({ndim})"
        )
    return tuple(idx[..., i] for i in range(idx.shape[-1]))


@tensor_method("gather_nd")
@tensor_operands("x")
def gather_nd(x: Tensor, index: Any, name: str = None) -> Tensor:
    """``x[index[..., 0], index[..., 1], ...]``: the last axis of ``index`` addresses leading axes of x."""
    xd = x._data
    positions = _nd_index(index, "gather_nd", xd.ndim)
    xp = backend.get_array_module(xd)
    try:
        data = xd[positions]
    except IndexError as error:
        raise _out_of_range("gather_nd", error) from None

    def backward(g):
        gx = xp.zeros_like(xd)
        xp.add.at(gx, positions, g)
        return (gx,)

    return result(data, (x,), backward)


@tensor_method("scatter_nd_add")
@tensor_operands("x", "updates")
def scatter_nd_add(x: Tensor, index: Any, updates: Tensor, name: str = None) -> Tensor:
    """x with ``updates`` added at the positions ``index`` addresses (as in :func:`gather_nd`)."""
    xd, ud = x._data, updates._data
    positions = _nd_index(index, "scatter_nd_add", xd.ndim)
    xp = backend.get_array_module(xd)
    data = xd.copy()
    try:
        xp.add.at(data, positions, ud)
    except IndexError as error:
        raise _out_of_range("scatter_nd_add", error) from None
    except ValueError:
        raise ValueError(
            f"scatter_nd_add: updates of shape {list(ud.shape)} do not match the "
            f"index shape {list(positions[0].shape)} followed by the remaining axes of x "
            f"{list(xd.shape[len(positions) :])}"
        ) from None
    return result(data, (x, updates), lambda g: (g, g[positions]))


@tensor_method("scatter_nd")
@tensor_operands("updates")
def scatter_nd(index: Any, updates: Tensor, shape: Any, name: str = None) -> Tensor:
    """A tensor of zeros of ``shape`` with ``updates`` added at the positions ``index`` addresses."""
    xp = backend.get_array_module(updates._data)
    zeros = wrap(xp.zeros(tuple(int(s) for s in shape), dtype=updates._data.dtype))
    return scatter_nd_add(zeros, index, updates)


@tensor_method("scatter")
@tensor_operands("x", "updates")
def scatter(x: Tensor, index: Any, updates: Tensor, overwrite: bool = True, name: str = None) -> Tensor:
    """x with rows ``index`` (1-D) replaced by the rows of ``updates``.

    With ``overwrite=False`` the selected rows are first zeroed and then every update is added, so
    repeated indices accumulate; with ``overwrite=True`` the last update of a repeated row wins.
    """
    xd, ud = x._data, updates._data
    idx = index_data(index, "scatter").reshape(-1)
    if ud.shape[:1] != idx.shape or ud.shape[1:] != xd.shape[1:]:
        raise ValueError(
            f"scatter: updates must have shape {[idx.size] + list(xd.shape[1:])} "
            f"(one row per index), got {list(ud.shape)}"
        )
    xp = backend.get_array_module(xd)
    data = xd.copy()
    try:
        if overwrite:
            data[idx] = ud
        else:
            data[idx] = 0
            xp.add.at(data, idx, ud)
    except IndexError as error:
        raise _out_of_range("scatter", error) from None

    def backward(g):
        gx = g.copy()
        gx[idx] = 0
        return gx, g[idx]

    return result(data, (x, updates), backward)


@tensor_method("index_add")
@tensor_operands("x", "value")
def index_add(x: Tensor, index: Any, axis: int, value: Tensor, alpha: float = 1, name: str = None) -> Tensor:
    """x with ``alpha * value`` added to the slices at positions ``index`` (1-D) along ``axis``."""
    xd, vd = x._data, value._data
    idx = index_data(index, "index_add")
    axis = single_axis(axis, xd.ndim)
    xp = backend.get_array_module(xd)
    data = xd.copy()
    try:
        xp.add.at(data, _along(axis, idx), vd * alpha if alpha != 1 else vd)
    except IndexError as error:
        raise _out_of_range("index_add", error) from None
    except ValueError:
        raise ValueError(
            f"index_add: value of shape {list(vd.shape)} does not match x's shape "
            f"{list(xd.shape)} with axis {axis} of length {idx.size}"
        ) from None

    def backward(g):
        gv = xp.take(g, idx, axis=axis)
        return g, gv * alpha if alpha != 1 else gv

    return result(data, (x, value), backward)


@tensor_method("index_put")
@tensor_operands("x", "indices[]")
def index_put(x: Tensor, indices: Sequence[Tensor], value: Any, accumulate: bool = False, name: str = None) -> Tensor:
    """x with ``value`` written (or added, with ``accumulate``) at ``x[indices]``.

    ``indices`` is a tuple of integer or boolean tensors, one per leading axis, as in NumPy's
    advanced indexing; ``value`` broadcasts to the selected shape.
    """
    xd = x._data
    positions = tuple(i._data if isinstance(i, Tensor) else i for i in indices)
    if any(p.dtype.kind not in "iub" for p in positions):
        raise TypeError("index_put: indices must be integer or boolean tensors")
    value = lift(value, xd)
    vd = value._data
    xp = backend.get_array_module(xd)
    data = xd.copy()
    try:
        if accumulate:
            xp.add.at(data, positions, vd)
        else:
            data[positions] = vd
    except IndexError as error:
        raise _out_of_range("index_put", error) from None
    except ValueError:
        raise ValueError(
            f"index_put: value of shape {list(xp.shape(vd))} does not broadcast to the "
            f"selected shape {list(xd[positions].shape)}"
        ) from None

    def backward(g):
        gx = g
        if not accumulate:
            gx = g.copy()
            gx[positions] = 0
        return gx, unbroadcast(g[positions], xp.shape(vd))

    return result(data, (x, value), backward)


@tensor_method("index_fill")
@tensor_operands("x")
def index_fill(x: Tensor, index: Any, axis: int, value: Any, name: str = None) -> Tensor:
    """x with the slices at positions ``index`` along ``axis`` set to the scalar ``value``."""
    xd = x._data
    idx = index_data(index, "index_fill")
    axis = single_axis(axis, xd.ndim)
    fill = value.item() if isinstance(value, Tensor) else value
    data = xd.copy()
    try:
        data[_along(axis, idx)] = fill
    except IndexError as error:
        raise _out_of_range("index_fill", error) from None

    def backward(g):
        gx = g.copy()
        gx[_along(axis, idx)] = 0
        return (gx,)

    return result(data, (x,), backward)


def _along_axis_index(op: str, xd: Any, indices: Any, axis: int, broadcast: bool) -> tuple:
    """The normalised axis and the index array (broadcast to x except on ``axis``) of the
    *_along_axis ops; positions out of range raise where they are used."""
    idx = index_data(indices, op)
    axis = single_axis(axis, xd.ndim)
    if idx.ndim != xd.ndim:
        raise ValueError(f"{op}: indices need as many axes as arr ({xd.ndim}), got shape {list(idx.shape)}")
    if broadcast:
        target = xd.shape[:axis] + idx.shape[axis : axis + 1] + xd.shape[axis + 1 :]
        if idx.shape != target:
            try:
                idx = backend.get_array_module(idx).broadcast_to(idx, target)
            except ValueError:
                raise ValueError(
                    f"{op}: indices of shape {list(idx.shape)} do not broadcast against arr "
                    f"of shape {list(xd.shape)} outside axis {axis}"
                ) from None
    return axis, idx


@tensor_operands("x")
def take_along(x: Tensor, idx: Any, axis: int) -> Tensor:
    """Values of x at the valid index array ``idx`` (x's rank, non-negative ``axis``) along ``axis``.

    The unchecked core of :func:`take_along_axis`, for ops that computed ``idx`` themselves.
    """
    xd = x._data
    xp = backend.get_array_module(xd)

    def backward(g):
        gx = xp.zeros_like(xd)
        xp.add.at(gx, axis_index(idx, axis), g)
        return (gx,)

    return result(xp.take_along_axis(xd, idx, axis), (x,), backward)


@tensor_method("take_along_axis")
@tensor_operands("arr")
def take_along_axis(arr: Tensor, indices: Any, axis: int, broadcast: bool = True) -> Tensor:
    """Values of arr at ``indices`` along ``axis`` (as NumPy's ``take_along_axis``)."""
    axis, idx = _along_axis_index("take_along_axis", arr._data, indices, axis, broadcast)
    try:
        return take_along(arr, idx, axis)
    except IndexError as error:
        raise _out_of_range("take_along_axis", error) from None


def _multiply_at(target: Any, positions: tuple, values: Any, axis: int) -> None:
    """``target[positions] *= values`` with repeated positions multiplied in, one slice of ``axis``
    at a time (positions within one slice never repeat, and CuPy has no ``multiply.at``)."""
    for j in range(values.shape[axis]):
        step = (slice(None),) * axis + (slice(j, j + 1),)
        target[tuple(p[step] if p.shape[axis] > 1 else p for p in positions)] *= values[step]


@tensor_method("put_along_axis")
@tensor_operands("arr")
def put_along_axis(
    arr: Tensor,
    indices: Any,
    values: Any,
    axis: int,
    reduce: str = "assign",
    include_self: bool = True,
    broadcast: bool = True,
) -> Tensor:
    """arr with ``values`` combined into the positions ``indices`` selects along ``axis``.

    ``reduce`` is how: 'assign' (replace), 'add', 'mul'/'multiply', 'mean', 'amin' or 'amax'; with
    ``include_self=False`` the original values at written positions take no part. With 'assign'
    the last value written to a position gets its gradient; with 'amin' and 'amax' tied winners
    share it; with 'mul' the gradient of a value divides by it, so it needs non-zero values.
    """
    xd = arr._data
    axis, idx = _along_axis_index("put_along_axis", xd, indices, axis, broadcast)
    positions = axis_index(idx, axis)
    values = lift(values, xd)
    xp = backend.get_array_module(xd)
    vd = xp.broadcast_to(xp.asarray(values._data, dtype=xd.dtype), positions[axis].shape)
    touched = xp.zeros(xd.shape, dtype=bool)
    try:
        touched[positions] = True
    except IndexError as error:
        raise _out_of_range("put_along_axis", error) from None
    if reduce == "assign":
        data = xd.copy()
        data[positions] = vd
    elif reduce in ("add", "mean"):
        data = xd.copy() if include_self else xp.where(touched, 0, xd).astype(xd.dtype)
        xp.add.at(data, positions, vd)
        if reduce == "mean":
            count = xp.where(touched, 1 if include_self else 0, 1).astype(xd.dtype)
            xp.add.at(count, positions, 1)
            data = data / count
    elif reduce in ("mul", "multiply"):
        data = xd.copy() if include_self else xp.where(touched, 1, xd).astype(xd.dtype)
        _multiply_at(data, positions, vd, axis)
    elif reduce in ("amin", "amax"):
        ufunc = xp.minimum if reduce == "amin" else xp.maximum
        data = xd.copy()
        if not include_self:
            data[touched] = vd.max() if reduce == "amin" else vd.min()
        ufunc.at(data, positions, vd)
    else:
        raise ValueError(
            f"put_along_axis: reduce must be one of 'assign', 'add', 'mul', 'multiply', "
            f"'mean', 'amin', 'amax', got {reduce!r}"
        )

    def backward(g):
        if reduce == "assign":
            order = xp.arange(vd.size).reshape(vd.shape)
            writer = xp.full(xd.shape, -1)
            writer[positions] = order
            gx = xp.where(touched, 0, g)
            gv = xp.where(writer[positions] == order, g[positions], 0)
        elif reduce == "add":
            gx = g if include_self else xp.where(touched, 0, g)
            gv = g[positions]
        elif reduce == "mean":
            share = g / count
            gx = share if include_self else xp.where(touched, 0, share)
            gv = share[positions]
        elif reduce in ("mul", "multiply"):
            product = xp.ones_like(xd)
            _multiply_at(product, positions, vd, axis)
            gx = g * product if include_self else xp.where(touched, 0, g)
            gv = (g * data)[positions] / vd
        else:
            self_wins = (xd == data) & touched & include_self
            value_wins = vd == data[positions]
            ties = self_wins.astype(xd.dtype)
            xp.add.at(ties, positions, value_wins.astype(xd.dtype))
            share = g / xp.where(touched, ties, 1)
            gx = xp.where(touched, xp.where(self_wins, share, 0), g)
            gv = xp.where(value_wins, share[positions], 0)
        return gx, unbroadcast(gv, xp.shape(values._data))

    return result(data, (arr, values), backward)


@tensor_method("masked_fill")
@tensor_operands("x", "mask")
def masked_fill(x: Tensor, mask: Tensor, value: Any, name: str = None) -> Tensor:
    """x with ``value`` wherever the boolean ``mask`` (broadcast against x) is True."""
    if mask._data.dtype.kind != "b":
        raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask._data.dtype}")
    if isinstance(value, Tensor) and value._data.dtype != x._data.dtype:
        value = value.astype(x._data.dtype)
    return where(mask, value, x)


def broadcast_mask(op: str, xd: Any, md: Any) -> tuple:
    """``(xp, mask, shape)`` for the masked ops: the array module, the bool mask array ``md``
    broadcast against ``xd``, and their common shape. A mask that is not bool, or that does not
    broadcast, raises."""
    if md.dtype.kind != "b":
        raise TypeError(f"{op}: mask must be a bool tensor, got {md.dtype}")
    xp = backend.get_array_module(xd)
    try:
        shape = xp.broadcast_shapes(xd.shape, md.shape)
    except ValueError:
        raise ValueError(
            f"{op}: mask of shape {list(md.shape)} does not broadcast against x of shape {list(xd.shape)}"
        ) from None
    return xp, xp.broadcast_to(md, shape), shape


@tensor_method("masked_scatter")
@tensor_operands("x", "mask", "value")
def masked_scatter(x: Tensor, mask: Tensor, value: Tensor, name: str = None) -> Tensor:
    """x with the positions where ``mask`` is True filled, in order, from the leading elements of value."""
    xd, vd = x._data, value._data
    xp, md, shape = broadcast_mask("masked_scatter", xd, mask._data)
    count = int(md.sum())
    if count > vd.size:
        raise ValueError(f"masked_scatter: the mask selects {count} positions but value has only {vd.size} elements")
    data = xp.broadcast_to(xd, shape).copy()
    data[md] = vd.reshape(-1)[:count]

    def backward(g):
        gv = xp.zeros(vd.size, dtype=g.dtype)
        gv[:count] = g[md]
        return unbroadcast(xp.where(md, 0, g), xd.shape), gv.reshape(vd.shape)

    return result(data, (x, value), backward)


@tensor_method("take")
@tensor_operands("x")
def take(x: Tensor, index: Any, mode: str = "raise", name: str = None) -> Tensor:
    """Elements of the flattened x at ``index`` (any shape); 'wrap' and 'clip' modes as in NumPy."""
    xd = x._data
    idx = index_data(index, "take")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    n = xd.size
    xp = backend.get_array_module(xd)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = xp.clip(idx, 0, n - 1)
    elif idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        raise ValueError(f"take: an index is out of range for a tensor of {n} elements")
    flat = xd.reshape(-1)

    def backward(g):
        gx = xp.zeros(n, dtype=xd.dtype)
        xp.add.at(gx, idx, g)
        return (gx.reshape(xd.shape),)

    return result(flat[idx], (x,), backward)


@tensor_method("index_sample")
@tensor_operands("x")
def index_sample(x: Tensor, index: Any) -> Tensor:
    """Row i of the result is ``x[i, index[i]]`` (x is [N, D], index [N, K])."""
    if x._data.ndim != 2:
        raise ValueError(f"index_sample: x must be 2-D, got shape {x.shape}")
    return take_along_axis(x, index, 1, broadcast=False)


@tensor_method("take_along_dim")
@tensor_operands("arr")
def take_along_dim(arr: Tensor, indices: Any, axis: int, broadcast: bool = True) -> Tensor:
    """The same as :func:`take_along_axis` (Paddle's PyTorch-style name)."""
    return take_along_axis(arr, indices, axis, broadcast)


_SCATTER_REDUCE_MODES = {"sum": "add", "prod": "mul", "mean": "mean", "amin": "amin", "amax": "amax"}


@tensor_method("scatter_reduce")
@tensor_operands("input", "src")
def scatter_reduce(
    input: Tensor, dim: int, index: Any, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """input with ``src[i][j]...`` combined into position ``index[i][j]...`` along ``dim`` by ``reduce``
    ('sum', 'prod', 'mean', 'amin', 'amax'); only the leading block of src shaped like index is used."""
    if reduce not in _SCATTER_REDUCE_MODES:
        raise ValueError(f"scatter_reduce: reduce must be one of {sorted(_SCATTER_REDUCE_MODES)}, got {reduce!r}")
    idx = index_data(index, "scatter_reduce")
    if idx.ndim != src._data.ndim or any(i > s for i, s in zip(idx.shape, src._data.shape)):
        raise ValueError(
            f"scatter_reduce: index of shape {list(idx.shape)} must have src's rank and fit "
            f"inside src's shape {src.shape}"
        )
    block = src if idx.shape == src._data.shape else getitem(src, tuple(slice(0, n) for n in idx.shape))
    return put_along_axis(input, index, block, dim, _SCATTER_REDUCE_MODES[reduce], include_self, broadcast=False)


@tensor_method("scatter_add")
@tensor_operands("input", "src")
def scatter_add(input: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """input with ``src`` added at positions ``index`` along ``dim`` (:func:`scatter_reduce` with 'sum')."""
    return scatter_reduce(input, dim, index, src, "sum")


def assign_at(op: str, target: Any, index: Any, values: Any) -> None:
    """``target[index] = values`` for arrays; a value that does not fit is a ValueError naming both shapes."""
    try:
        target[index] = values
    except ValueError:
        raise ValueError(
            f"{op}: a value of shape {list(backend.get_array_module(target).shape(values))} does "
            f"not fit the selected block of shape {list(target[index].shape)}"
        ) from None


@tensor_operands("x")
def write_at(op: str, x: Tensor, value: Any, index: tuple) -> Tensor:
    """x with ``value`` (broadcast) written at ``x[index]``; the overwritten positions get no gradient."""
    xd = x._data
    value = lift(value, xd)
    xp = backend.get_array_module(xd)
    data = xd.copy()
    assign_at(op, data, index, value._data)

    def backward(g):
        gx = g.copy()
        gx[index] = 0
        return gx, unbroadcast(g[index], xp.shape(value._data))

    return result(data, (x, value), backward)


@tensor_method("select_scatter")
@tensor_operands("x")
def select_scatter(x: Tensor, values: Any, axis: int, index: int, name: str = None) -> Tensor:
    """x with the slice at position ``index`` of ``axis`` replaced by ``values``."""
    axis = single_axis(axis, x._data.ndim)
    index = as_int(index, "select_scatter: index")
    length = x._data.shape[axis]
    if not -length <= index < length:
        raise ValueError(f"select_scatter: index {index} is out of range for axis {axis} of length {length}")
    return write_at("select_scatter", x, values, _along(axis, index))


@tensor_method("slice_scatter")
@tensor_operands("x")
def slice_scatter(
    x: Tensor,
    value: Any,
    axes: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    strides: Sequence[int],
    name: str = None,
) -> Tensor:
    """x with the strided block ``starts:ends:strides`` on ``axes`` replaced by ``value``."""
    axes = normalize_axis(axes, x._data.ndim)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError("slice_scatter: axes, starts, ends and strides must have the same length")
    index = [slice(None)] * x._data.ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[a] = slice(int(s), int(e), int(st))
    return write_at("slice_scatter", x, value, tuple(index))


@tensor_method("multiplex")
@tensor_operands("inputs[]")
def multiplex(inputs: Sequence[Tensor], index: Any, name: str = None) -> Tensor:
    """Row i of the result is row i of ``inputs[index[i]]`` (index is [N, 1])."""
    idx = index_data(index, "multiplex").reshape(-1)
    stacked = stack(list(inputs))
    if idx.size != stacked._data.shape[1]:
        raise ValueError(f"multiplex: index needs one entry per row ({stacked._data.shape[1]}), got {idx.size}")
    if idx.size and (int(idx.max()) >= len(inputs) or int(idx.min()) < 0):
        raise ValueError(f"multiplex: an index is out of range for {len(inputs)} inputs")
    picks = idx.reshape((1, -1) + (1,) * (stacked._data.ndim - 2))
    target = list(stacked._data.shape)
    target[0] = 1
    picked = take_along(stacked, backend.get_array_module(idx).broadcast_to(picks, target), 0)
    return squeeze(picked, 0)


@tensor_method("shard_index")
@tensor_operands("input")
def shard_index(input: Tensor, index_num: int, nshards: int, shard_id: int, ignore_value: int = -1) -> Tensor:
    """Indices local to shard ``shard_id``: the indices [0, index_num) are cut into ``nshards``
    shards of ceil(index_num / nshards); an index in this shard becomes its offset in the shard,
    any other becomes ``ignore_value``."""
    if input._data.dtype.kind not in "iu":
        raise TypeError(f"shard_index: input must hold integer indices, got {input.dtype}")
    index_num, nshards = as_int(index_num, "shard_index: index_num"), as_int(nshards, "shard_index: nshards")
    shard_id = as_int(shard_id, "shard_index: shard_id")
    ignore_value = as_int(ignore_value, "shard_index: ignore_value")
    if nshards <= 0 or not 0 <= shard_id < nshards:
        raise ValueError(f"shard_index: need nshards > 0 and 0 <= shard_id < nshards, got {nshards}, {shard_id}")
    shard_size = -(-index_num // nshards)
    data = input._data
    xp = backend.get_array_module(data)
    return wrap(xp.where(data // shard_size == shard_id, data % shard_size, ignore_value).astype(data.dtype))
