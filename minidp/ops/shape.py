"""Ops that move or select values without computing new ones, with their backward."""

from __future__ import annotations

from typing import Any, Sequence

from ..core import backend
from ..core.tensor import Tensor, tensor_method, tensor_property
from ..core.op_util import (
    as_int,
    check_tensor,
    normalize_axis,
    not_a_tensor,
    result,
    results,
    single_axis,
    tensor_operands,
    unbroadcast,
)

__all__ = [
    "concat",
    "expand",
    "flatten",
    "getitem",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "transpose",
    "unsqueeze",
]


def _as_shape(shape: Any) -> tuple:
    """A shape given as an int, a list/tuple of ints or int tensors, or an int tensor, as a tuple.

    Bools, floats and strings are not sizes: they raise TypeError naming the entry.
    """
    if isinstance(shape, Tensor):
        if shape._data.dtype.kind not in "iu":
            raise TypeError(f"a shape tensor must have an integer dtype, got {shape.dtype}")
        return tuple(int(v) for v in shape._data.reshape(-1).tolist())
    if shape.__class__ is int:
        return (shape,)
    if not isinstance(shape, (list, tuple)):
        return (as_int(shape, "a shape"),)
    return tuple(s if s.__class__ is int else as_int(s, "each shape entry") for s in shape)


def _first_non_tensor(op: str, tensors: tuple) -> TypeError:
    """The TypeError for the first entry of ``tensors`` that is not a Tensor, naming its index."""
    i, value = next((i, t) for i, t in enumerate(tensors) if not isinstance(t, Tensor))
    return not_a_tensor(op, f"x[{i}]", value)


def _check_one_dtype(op: str, arrays: list) -> None:
    """Raise ValueError when the arrays to join differ in dtype: Paddle joins only tensors of one
    dtype, and NumPy would silently promote them."""
    first = arrays[0].dtype
    for i, a in enumerate(arrays):
        if a.dtype != first:
            raise ValueError(
                f"{op}: every tensor in x must have one dtype, but x[0] is {first} and x[{i}] is {a.dtype}; "
                "cast them with .astype first"
            )


@tensor_method("reshape")
def reshape(x: Tensor, shape: Any, name: str = None) -> Tensor:
    """The same values in a new shape; 0 copies that axis from x, -1 is inferred."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("reshape", "x", x) from None
    target = _as_shape(shape)
    if min(target, default=0) < -1:
        raise ValueError(f"reshape: shape entries must be -1 (inferred), 0 (copied) or positive, got {list(target)}")
    if 0 in target:
        if any(s == 0 for s in target[xd.ndim :]):
            raise ValueError(
                f"reshape: a 0 in the shape copies that axis of x, but x has only {xd.ndim} "
                f"axes; got shape {list(target)} for x of shape {list(xd.shape)}"
            )
        target = tuple(xd.shape[i] if s == 0 else s for i, s in enumerate(target))
    return _reshape_to(x, xd, target)


def _reshape_to(x: Tensor, xd: Any, target: Any) -> Tensor:
    """x viewed as ``target`` taken literally (a 0 is an empty axis), for the ops that compute it."""
    try:
        data = xd.reshape(target)
    except ValueError:
        raise ValueError(
            f"reshape: cannot view a tensor of shape {list(xd.shape)} ({xd.size} elements) as {list(target)}"
        ) from None
    in_shape = xd.shape
    return result(data, (x,), lambda g: (g.reshape(in_shape),))


@tensor_method("flatten")
def flatten(x: Tensor, start_axis: int = 0, stop_axis: int = -1, name: str = None) -> Tensor:
    """Merge axes ``start_axis`` to ``stop_axis`` (inclusive) into one."""
    check_tensor("flatten", "x", x)
    shape = x._data.shape
    if not shape:
        return _reshape_to(x, x._data, (1,))
    start, stop = normalize_axis([start_axis, stop_axis], len(shape))
    if start > stop:
        raise ValueError(f"flatten: start_axis ({start_axis}) must not come after stop_axis ({stop_axis})")
    merged = 1
    for n in shape[start : stop + 1]:
        merged *= n
    return _reshape_to(x, x._data, shape[:start] + (merged,) + shape[stop + 1 :])


@tensor_method("transpose", "permute")
def transpose(x: Tensor, perm: Sequence[int], name: str = None) -> Tensor:
    """Permute the axes: axis i of the result is axis ``perm[i]`` of x."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("transpose", "x", x) from None
    perm = normalize_axis(perm, xd.ndim)
    if sorted(perm) != list(range(xd.ndim)):
        raise ValueError(f"transpose: perm {list(perm)} is not a permutation of {xd.ndim} axes")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return result(xd.transpose(perm), (x,), lambda g: (g.transpose(inverse),))


@tensor_property("T")
def _reversed_axes(x: Tensor) -> Tensor:
    """x with its axes in reverse order (``x.T``)."""
    return transpose(x, list(range(x.ndim))[::-1])


@tensor_method("squeeze")
def squeeze(x: Tensor, axis: Any = None, name: str = None) -> Tensor:
    """Drop axes of length 1 (all of them, or those in ``axis`` that have length 1)."""
    check_tensor("squeeze", "x", x)
    shape = x._data.shape
    axes = normalize_axis(axis, len(shape))
    if axes is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    return _reshape_to(x, x._data, tuple(n for i, n in enumerate(shape) if not (i in axes and n == 1)))


@tensor_method("unsqueeze")
def unsqueeze(x: Tensor, axis: Any, name: str = None) -> Tensor:
    """Insert axes of length 1 at the positions in ``axis`` (positions in the result)."""
    check_tensor("unsqueeze", "x", x)
    shape = list(x._data.shape)
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    for a in axes:
        a = as_int(a, "unsqueeze: each axis")
        if not -len(shape) - 1 <= a <= len(shape):
            raise ValueError(
                f"unsqueeze: axis {a} is out of range for inserting into {len(shape)} axes; "
                f"expected an int in [{-len(shape) - 1}, {len(shape)}]"
            )
        shape.insert(a if a >= 0 else len(shape) + a + 1, 1)
    return _reshape_to(x, x._data, tuple(shape))


@tensor_method("concat")
@tensor_operands("x[]")
def concat(x: Sequence[Tensor], axis: int = 0, name: str = None) -> Tensor:
    """Join tensors along an existing axis."""
    tensors = tuple(x)
    if not tensors:
        raise ValueError("concat: needs at least one tensor")
    try:
        arrays = [t._data for t in tensors]
    except AttributeError:
        raise _first_non_tensor("concat", tensors) from None
    _check_one_dtype("concat", arrays)
    xp = backend.get_array_module(arrays[0])
    axis = single_axis(axis, arrays[0].ndim)
    try:
        data = xp.concatenate(arrays, axis=axis)
    except ValueError:
        raise ValueError(f"concat: shapes {[list(a.shape) for a in arrays]} differ outside axis {axis}") from None
    bounds = []
    total = 0
    for a in arrays[:-1]:
        total += a.shape[axis]
        bounds.append(total)
    return result(data, tensors, lambda g: tuple(xp.split(g, bounds, axis=axis)))


@tensor_method("stack")
@tensor_operands("x[]")
def stack(x: Sequence[Tensor], axis: int = 0, name: str = None) -> Tensor:
    """Join tensors of one shape along a new axis."""
    tensors = tuple(x)
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    try:
        arrays = [t._data for t in tensors]
    except AttributeError:
        raise _first_non_tensor("stack", tensors) from None
    _check_one_dtype("stack", arrays)
    axis = single_axis(axis, arrays[0].ndim + 1)
    xp = backend.get_array_module(arrays[0])
    try:
        data = xp.stack(arrays, axis=axis)
    except ValueError:
        raise ValueError(f"stack: all shapes must be equal, got {[list(a.shape) for a in arrays]}") from None
    return result(data, tensors, lambda g: tuple(g.take(i, axis=axis) for i in range(len(arrays))))


@tensor_method("split")
def split(x: Tensor, num_or_sections: Any, axis: int = 0, name: str = None) -> list:
    """Cut x along ``axis`` into equal parts (an int) or parts of the given sizes (-1 once allowed)."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("split", "x", x) from None
    axis = single_axis(axis, xd.ndim)
    length = xd.shape[axis]
    if not isinstance(num_or_sections, (list, tuple)):
        num_or_sections = as_int(num_or_sections, "split: num_or_sections")
        if num_or_sections <= 0 or length % num_or_sections:
            raise ValueError(
                f"split: axis {axis} has length {length}, which {num_or_sections} parts cannot divide evenly"
            )
        sizes = [length // num_or_sections] * num_or_sections
    else:
        sizes = [as_int(size, "split: each section size") for size in num_or_sections]
        if sizes.count(-1) > 1:
            raise ValueError("split: at most one section size may be -1")
        if -1 in sizes:
            sizes[sizes.index(-1)] = length - (sum(sizes) + 1)
        if sum(sizes) != length or any(s < 0 for s in sizes):
            raise ValueError(f"split: section sizes {list(num_or_sections)} do not add up to {length}")
    xp = backend.get_array_module(xd)
    bounds = []
    total = 0
    for size in sizes[:-1]:
        total += size
        bounds.append(total)
    parts = xp.split(xd, bounds, axis=axis)

    def backward(grads):
        filled = [xp.zeros(p.shape, p.dtype) if g is None else g for g, p in zip(grads, parts)]
        return (xp.concatenate(filled, axis=axis),)

    return list(results(parts, (x,), backward))


def index_arrays(index: Any) -> Any:
    """Replace tensors inside an index by their arrays."""
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return backend.default_array_module().asarray(index)
    return index


def _is_basic(index: Any) -> bool:
    """True for indexes made of ints, slices, None and Ellipsis only (they select a view)."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, slice)) or i is None or i is Ellipsis for i in parts)


@tensor_method("__getitem__")
@tensor_operands("x")
def getitem(x: Tensor, index: Any) -> Tensor:
    """x[index] with slices, integer arrays or boolean masks; repeated indices add up in backward."""
    xd = x._data
    index = index_arrays(index)
    try:
        data = xd[index]
    except IndexError as error:
        raise IndexError(f"index {index!r} is invalid for a tensor of shape {list(xd.shape)}: {error}") from None
    xp = backend.get_array_module(xd)
    basic = _is_basic(index)

    def backward(g):
        gx = xp.zeros_like(xd)
        if basic:
            gx[index] = g
        else:
            xp.add.at(gx, index, g)
        return (gx,)

    return result(data, (x,), backward)


@tensor_method("expand")
def expand(x: Tensor, shape: Any, name: str = None) -> Tensor:
    """Broadcast x to ``shape`` (-1 keeps an axis); the gradient sums back."""
    try:
        xd = x._data
    except AttributeError:
        raise not_a_tensor("expand", "x", x) from None
    target = list(_as_shape(shape))
    lead = len(target) - xd.ndim
    for i, n in enumerate(xd.shape):
        if target[lead + i] == -1:
            target[lead + i] = n
    xp = backend.get_array_module(xd)
    try:
        data = xp.broadcast_to(xd, target)
    except ValueError:
        raise ValueError(f"expand: cannot broadcast shape {list(xd.shape)} to {target}") from None
    return result(data, (x,), lambda g: (unbroadcast(g, xd.shape),))
