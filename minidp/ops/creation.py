"""Creating tensors: from data, filled with constants, ranges, and random values.

Creation functions take Paddle's signatures (shape first, then dtype) and place new arrays at the
current device (see :func:`minidp.core.backend.set_device`). Random values come from the process's host
generator (:mod:`minidp.core.random`), seeded from the OS unless :func:`minidp.seed` is called.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy

from ..core import backend, versions
from ..core.tensor import Tensor, tensor_method
from ..framework import place_name
from ..core.random import host_generator, seed  # noqa: F401  (seed is exported from here as an op)
from ..core.op_util import check_tensor, result, tensor_operands, wrap
from .linalg import diag_embed, diagonal
from ..core.ops import add
from .shape import _as_shape, expand, reshape

__all__ = [
    "arange",
    "as_tensor",
    "asarray",
    "assign",
    "clone",
    "diag",
    "diagflat",
    "empty",
    "empty_like",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "is_empty",
    "is_tensor",
    "linspace",
    "logspace",
    "meshgrid",
    "normal",
    "numel",
    "ones",
    "ones_like",
    "rand",
    "randint",
    "randn",
    "randperm",
    "rank",
    "seed",
    "to_tensor",
    "tolist",
    "tril_indices",
    "triu_indices",
    "uniform",
    "zeros",
    "zeros_like",
]


def _default_dtype(data: Any) -> Any:
    """Paddle's rule for untyped Python data: floats take the default float dtype, ints int64, bools bool."""
    kind = numpy.asarray(data).dtype.kind
    if kind == "f":
        return backend.DEFAULT_FLOAT
    if kind in "iu":
        return numpy.dtype("int64")
    return None


def to_tensor(data: Any, dtype: Any = None, place: Any = None, stop_gradient: bool = True) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested list, NumPy/CuPy array or tensor,
    or a list of tensors). ``place`` is a string or a ``CPUPlace``/``CUDAPlace``; NumPy scalars
    keep their dtype, Python floats become float32 and ints int64 (Paddle's rules)."""
    if isinstance(data, Tensor):
        data = data._data
    if place is not None:
        place = place_name(place)
    target = None if dtype is None else backend.convert_dtype(dtype)
    on_device = place is not None and place != "cpu" or (place is None and backend.get_device() != "cpu")
    xp = backend._cupy() if on_device else numpy
    if backend.get_array_module(data) is not numpy and not on_device:
        data = backend.to_host(data)
    if target is None and isinstance(data, (list, tuple, int, float, bool)) and not isinstance(data, numpy.generic):
        target = _default_dtype(data)
    if xp is numpy and not isinstance(data, numpy.ndarray) and not numpy.isscalar(data):
        data = numpy.array(data)
    array = xp.array(data, dtype=target, copy=True)
    if array.dtype.kind in "OUS" or (array.dtype.kind == "V" and array.dtype != backend.BFLOAT16):
        raise TypeError(f"to_tensor: data must hold numbers or bools, got elements of NumPy dtype {array.dtype}")
    tensor = wrap(array)
    tensor.stop_gradient = stop_gradient
    return tensor


def _make(fill, shape: Any, dtype: Any) -> Tensor:
    xp = backend.default_array_module()
    return wrap(fill(xp, _as_shape(shape), backend.convert_dtype(dtype)))


def zeros(shape: Any, dtype: Any = None, name: str = None) -> Tensor:
    """A tensor of zeros."""
    return _make(lambda xp, s, d: xp.zeros(s, d), shape, dtype)


def ones(shape: Any, dtype: Any = None, name: str = None) -> Tensor:
    """A tensor of ones."""
    return _make(lambda xp, s, d: xp.ones(s, d), shape, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, name: str = None) -> Tensor:
    """A tensor with every element equal to ``fill_value``."""
    return _make(lambda xp, s, d: xp.full(s, fill_value, d), shape, dtype)


@tensor_operands("x")
def zeros_like(x: Tensor, dtype: Any = None, name: str = None) -> Tensor:
    """Zeros with x's shape (and dtype unless given)."""
    return zeros(x.shape, x.dtype if dtype is None else dtype)


@tensor_operands("x")
def ones_like(x: Tensor, dtype: Any = None, name: str = None) -> Tensor:
    """Ones with x's shape (and dtype unless given)."""
    return ones(x.shape, x.dtype if dtype is None else dtype)


@tensor_operands("x")
def full_like(x: Tensor, fill_value: Any, dtype: Any = None, name: str = None) -> Tensor:
    """``fill_value`` everywhere, with x's shape (and dtype unless given)."""
    return full(x.shape, fill_value, x.dtype if dtype is None else dtype)


def arange(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: str = None) -> Tensor:
    """Evenly spaced values in [start, end); one argument means [0, start)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if dtype is None:
        dtype = "int64" if all(isinstance(v, int) for v in (start, end, step)) else backend.DEFAULT_FLOAT
    xp = backend.default_array_module()
    return wrap(xp.arange(start, end, step, dtype=backend.convert_dtype(dtype)))


def eye(num_rows: int, num_columns: Optional[int] = None, dtype: Any = None, name: str = None) -> Tensor:
    """An identity matrix."""
    xp = backend.default_array_module()
    return wrap(xp.eye(num_rows, num_columns, dtype=backend.convert_dtype(dtype)))


def _random(draw, shape: Any, dtype: Any, generator: Optional[numpy.random.Generator] = None) -> Tensor:
    """Draw on ``generator`` (default: the host generator) and move the result to the current place."""
    target = backend.convert_dtype(dtype)
    values = draw(generator or host_generator(), _as_shape(shape)).astype(target, copy=False)
    return wrap(backend.default_array_module().asarray(values))


def randn(shape: Any, dtype: Any = None, name: str = None) -> Tensor:
    """Standard normal values."""
    return _random(lambda g, s: g.standard_normal(s), shape, dtype)


def rand(shape: Any, dtype: Any = None, name: str = None) -> Tensor:
    """Uniform values in [0, 1)."""
    return _random(lambda g, s: g.random(s), shape, dtype)


def uniform(
    shape: Any,
    dtype: Any = None,
    min: float = -1.0,
    max: float = 1.0,
    seed: int = 0,  # noqa: F811
    name: str = None,
) -> Tensor:
    """Uniform values in [min, max). A non-zero ``seed`` draws from a generator of its own seeded
    with it (the same values every call, the process's generator untouched), as in Paddle.

    The values are ``min + (max - min) * u`` for ``u`` uniform in [0, 1), the draws of NumPy's
    ``Generator.uniform``; like Paddle (and unlike NumPy), any bounds are taken: ``min > max``
    gives values in (max, min], infinite or NaN bounds infinite or NaN values."""
    own = numpy.random.default_rng(seed) if seed else None

    def draw(generator: numpy.random.Generator, shape: tuple) -> numpy.ndarray:
        with numpy.errstate(invalid="ignore", over="ignore"):
            return min + (max - min) * generator.random(shape)

    return _random(draw, shape, dtype, own)


def normal(mean: float = 0.0, std: float = 1.0, shape: Any = None, name: str = None) -> Tensor:
    """Normal values with the given mean and standard deviation."""
    return _random(lambda g, s: g.normal(mean, std, s), [1] if shape is None else shape, None)


def randint(low: int = 0, high: Optional[int] = None, shape: Any = (1,), dtype: Any = None, name: str = None) -> Tensor:
    """Integers drawn uniformly from [low, high) (from [0, low) when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    return _random(lambda g, s: g.integers(low, high, s), shape, dtype or "int64")


def randperm(n: int, dtype: Any = "int64", name: str = None) -> Tensor:
    """A random permutation of 0..n-1."""
    return _random(lambda g, s: g.permutation(s[0]), [n], dtype)


def empty(shape: Any, dtype: Any = None, name: str = None) -> Tensor:
    """A tensor whose values are whatever the memory held (fill it before reading)."""
    return _make(lambda xp, s, d: xp.empty(s, d), shape, dtype)


@tensor_operands("x")
def empty_like(x: Tensor, dtype: Any = None, name: str = None) -> Tensor:
    """An uninitialised tensor with x's shape (and dtype unless given)."""
    return empty(x.shape, x.dtype if dtype is None else dtype)


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, Tensor) else value


def linspace(start: Any, stop: Any, num: Any, dtype: Any = None, name: str = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (the default float dtype unless given)."""
    xp = backend.default_array_module()
    values = xp.linspace(_scalar(start), _scalar(stop), int(_scalar(num)))
    return wrap(values.astype(backend.convert_dtype(dtype)))


def logspace(start: Any, stop: Any, num: Any, base: Any = 10.0, dtype: Any = None, name: str = None) -> Tensor:
    """``base`` raised to ``num`` evenly spaced exponents from ``start`` to ``stop``."""
    xp = backend.default_array_module()
    values = xp.logspace(_scalar(start), _scalar(stop), int(_scalar(num)), base=_scalar(base))
    return wrap(values.astype(backend.convert_dtype(dtype)))


@tensor_method("diag")
@tensor_operands("x")
def diag(x: Tensor, offset: int = 0, padding_value: Any = 0, name: str = None) -> Tensor:
    """A 1-D x as the ``offset`` diagonal of a square matrix (``padding_value`` elsewhere), or the
    ``offset`` diagonal of a 2-D x."""
    nd = x._data.ndim
    if nd == 2:
        return diagonal(x, offset, 0, 1)
    if nd != 1:
        raise ValueError(f"diag: expects a 1-D or 2-D tensor, got shape {x.shape}")
    matrix = diag_embed(x, offset)
    if padding_value == 0:
        return matrix
    xp = backend.get_array_module(x._data)
    off_diagonal = 1 - xp.eye(matrix._data.shape[0], k=offset, dtype=matrix._data.dtype)
    return add(matrix, wrap(off_diagonal * padding_value))


@tensor_method("diagflat")
def diagflat(x: Tensor, offset: int = 0, name: str = None) -> Tensor:
    """The flattened x as the ``offset`` diagonal of a square matrix."""
    return diag_embed(reshape(x, [-1]), offset)


def meshgrid(*args: Any, **kwargs: Any) -> list:
    """Coordinate grids ('ij' indexing) from 1-D tensors, given separately or as one list."""
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    for i, t in enumerate(tensors):
        check_tensor("meshgrid", f"args[{i}]", t)
    if any(t._data.ndim > 1 for t in tensors):
        raise ValueError(f"meshgrid: expects 1-D tensors, got shapes {[t.shape for t in tensors]}")
    if len({t._data.dtype for t in tensors}) > 1:
        raise TypeError(
            f"meshgrid: all tensors need one dtype, got {[str(t.dtype) for t in tensors]}; "
            "convert them with .astype first"
        )
    shape = [t._data.size for t in tensors]
    n = len(tensors)
    return [expand(reshape(t, [1] * i + [-1] + [1] * (n - i - 1)), shape) for i, t in enumerate(tensors)]


@tensor_method("clone")
@tensor_operands("x")
def clone(x: Tensor, name: str = None) -> Tensor:
    """A copy of x that stays in the graph (the gradient passes through unchanged)."""
    return result(x._data.copy(), (x,), lambda g: (g,))


def assign(x: Any, output: Optional[Tensor] = None) -> Tensor:
    """A copy of x (a tensor, array, number or nested list), written into ``output`` when given.

    Copying a tensor keeps it in the graph; ``output`` then takes the copy's values and graph.
    A value outside the graph written into a leaf (loading a parameter's weights) only replaces
    its array, as Paddle's does: the leaf keeps ``stop_gradient`` and ``inplace_version``, ops
    that read it before still send their gradient to it, and no snapshot keeps the old array.
    """
    if output is not None:
        check_tensor("assign", "output", output)
    copy = clone(x) if isinstance(x, Tensor) else to_tensor(x)
    if output is None:
        return copy
    if list(output._data.shape) != copy.shape and output._data.size:
        raise ValueError(f"assign: output has shape {output.shape} but x has shape {copy.shape}")
    if output._node is None and copy._node is None and copy.stop_gradient:
        output._data = copy._data.astype(output._data.dtype, copy=False)
        return output
    versions.mark_updated(output, versions.snapshot(output))
    output._data = copy._data.astype(output._data.dtype, copy=False)
    output._node = copy._node
    output.stop_gradient = copy.stop_gradient
    return output


def _index_pairs(rows: Any, cols: Any, dtype: Any) -> Tensor:
    xp = backend.default_array_module()
    return wrap(xp.stack([xp.asarray(rows), xp.asarray(cols)]).astype(backend.convert_dtype(dtype)))


def tril_indices(row: int, col: int, offset: int = 0, dtype: Any = "int64") -> Tensor:
    """The [2, N] row and column indices of the lower triangle of a row x col matrix."""
    return _index_pairs(*backend.default_array_module().tril_indices(row, offset, col), dtype)


def triu_indices(row: int, col: Optional[int] = None, offset: int = 0, dtype: Any = "int64") -> Tensor:
    """The [2, N] row and column indices of the upper triangle of a row x col matrix (col defaults to row)."""
    return _index_pairs(*backend.default_array_module().triu_indices(row, offset, row if col is None else col), dtype)


@tensor_method("numel")
@tensor_operands("x")
def numel(x: Tensor, name: str = None) -> Tensor:
    """The number of elements of x, as an int64 0-D tensor."""
    return wrap(backend.get_array_module(x._data).asarray(x._data.size, dtype="int64"))


def shape(input: Tensor) -> Tensor:
    """The shape of ``input`` as a 1-D int64 tensor."""
    return wrap(backend.get_array_module(input._data).asarray(input._data.shape, dtype="int64"))


@tensor_method("rank")
@tensor_operands("input")
def rank(input: Tensor) -> Tensor:
    """The number of axes of ``input`` as an int32 0-D tensor."""
    return wrap(backend.get_array_module(input._data).asarray(input._data.ndim, dtype="int32"))


def as_tensor(
    data: Any, dtype: Any = None, device: Optional[str] = None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A tensor from ``data`` (as :func:`to_tensor`); ``requires_grad`` is the opposite of stop_gradient."""
    return to_tensor(data, dtype, device, stop_gradient=not requires_grad)


def asarray(
    obj: Any,
    *,
    dtype: Any = None,
    device: Optional[str] = None,
    copy: Optional[bool] = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor from ``obj`` (as :func:`as_tensor`); a tensor of the right dtype is returned as it is
    unless ``copy`` is True."""
    if isinstance(obj, Tensor) and not copy and (dtype is None or obj._data.dtype == backend.convert_dtype(dtype)):
        return obj
    return as_tensor(obj, dtype, device, requires_grad)


def from_numpy(ndarray: Any) -> Tensor:
    """A CPU tensor sharing memory with the NumPy array (writes to one show in the other)."""
    if not isinstance(ndarray, numpy.ndarray):
        raise TypeError(f"from_numpy: expects a numpy.ndarray, got {type(ndarray).__name__}")
    return wrap(ndarray)


@tensor_method("is_tensor")
def is_tensor(x: Any) -> bool:
    """Whether x is a minidp Tensor."""
    return isinstance(x, Tensor)


@tensor_method("is_empty")
@tensor_operands("x")
def is_empty(x: Tensor, name: str = None) -> Tensor:
    """A bool 0-D tensor: whether x has no elements."""
    return wrap(backend.get_array_module(x._data).asarray(x._data.size == 0))


@tensor_operands("x")
def tolist(x: Tensor) -> list:
    """x's values as (nested) Python lists."""
    return x.tolist()


def _new_like(var: Tensor, size: Any, fill: Any, dtype: Any, device: Optional[str], requires_grad: bool) -> Tensor:
    """A new tensor of ``size`` on var's device unless ``device`` names one, in var's dtype unless given."""
    target = var._data.dtype if dtype is None else backend.convert_dtype(dtype)
    xp = backend.get_array_module(var._data) if device is None else (numpy if device == "cpu" else backend._cupy())
    tensor = wrap(fill(xp, _as_shape(size), target))
    tensor.stop_gradient = not requires_grad
    return tensor


@tensor_method("new_empty")
def new_empty(
    var: Tensor,
    size: Any,
    *,
    dtype: Any = None,
    device: Optional[str] = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``Tensor.new_empty``: an uninitialised tensor of ``size`` like var (dtype, device)."""
    return _new_like(var, size, lambda xp, s, d: xp.empty(s, d), dtype, device, requires_grad)


@tensor_method("new_zeros")
def new_zeros(
    var: Tensor,
    size: Any,
    *,
    dtype: Any = None,
    device: Optional[str] = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``Tensor.new_zeros``: zeros of ``size`` like var (dtype, device)."""
    return _new_like(var, size, lambda xp, s, d: xp.zeros(s, d), dtype, device, requires_grad)


@tensor_method("new_ones")
def new_ones(
    var: Tensor,
    size: Any,
    *,
    dtype: Any = None,
    device: Optional[str] = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``Tensor.new_ones``: ones of ``size`` like var (dtype, device)."""
    return _new_like(var, size, lambda xp, s, d: xp.ones(s, d), dtype, device, requires_grad)


@tensor_method("new_full")
def new_full(
    var: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: Any = None,
    device: Optional[str] = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``Tensor.new_full``: ``fill_value`` everywhere in a tensor of ``size`` like var (dtype, device)."""
    value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    return _new_like(var, size, lambda xp, s, d: xp.full(s, value, d), dtype, device, requires_grad)
