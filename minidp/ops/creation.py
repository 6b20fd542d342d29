"""Creating tensors: from data, filled with constants, ranges, and random values.

Creation functions take Paddle's signatures (shape first, then dtype) and place new arrays at the
current device (see :func:`minidp.backend.set_device`). Random values come from the process's host
generator (:mod:`minidp.random`), seeded from the OS unless :func:`minidp.seed` is called.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy

from .. import backend
from ..autograd.tensor import Tensor
from ..framework import place_name
from ..random import host_generator, seed  # noqa: F401  (seed is exported from here as an op)
from ._util import wrap
from .shape import _as_shape


def _default_dtype(data: Any) -> Any:
    """Paddle's rule for untyped Python data: floats become float32, ints int64, bools bool."""
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
    if array.dtype.kind == "O":
        raise TypeError(f"to_tensor: cannot build a numeric tensor from {type(data).__name__} data")
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


def zeros_like(x: Tensor, dtype: Any = None, name: str = None) -> Tensor:
    """Zeros with x's shape (and dtype unless given)."""
    return zeros(x.shape, x.dtype if dtype is None else dtype)


def ones_like(x: Tensor, dtype: Any = None, name: str = None) -> Tensor:
    """Ones with x's shape (and dtype unless given)."""
    return ones(x.shape, x.dtype if dtype is None else dtype)


def full_like(x: Tensor, fill_value: Any, dtype: Any = None, name: str = None) -> Tensor:
    """``fill_value`` everywhere, with x's shape (and dtype unless given)."""
    return full(x.shape, fill_value, x.dtype if dtype is None else dtype)


def arange(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: str = None) -> Tensor:
    """Evenly spaced values in [start, end); one argument means [0, start)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = "int64" if all(isinstance(v, int) for v in (start, end, step)) else "float32"
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


def uniform(shape: Any, dtype: Any = None, min: float = -1.0, max: float = 1.0, seed: int = 0,
            name: str = None) -> Tensor:
    """Uniform values in [min, max). A non-zero ``seed`` draws from a generator of its own seeded
    with it (the same values every call, the process's generator untouched), as in Paddle."""
    own = numpy.random.default_rng(seed) if seed else None
    return _random(lambda g, s: g.uniform(min, max, s), shape, dtype, own)


def normal(mean: float = 0.0, std: float = 1.0, shape: Any = None, name: str = None) -> Tensor:
    """Normal values with the given mean and standard deviation."""
    return _random(lambda g, s: g.normal(mean, std, s), [1] if shape is None else shape, None)


def randint(low: int = 0, high: Optional[int] = None, shape: Any = (1,), dtype: Any = None,
            name: str = None) -> Tensor:
    """Integers drawn uniformly from [low, high) (from [0, low) when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    return _random(lambda g, s: g.integers(low, high, s), shape, dtype or "int64")


def randperm(n: int, dtype: Any = "int64", name: str = None) -> Tensor:
    """A random permutation of 0..n-1."""
    return _random(lambda g, s: g.permutation(s[0]), [n], dtype)
