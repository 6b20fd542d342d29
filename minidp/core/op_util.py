"""The few helpers every op module shares: building results and undoing broadcasting.

``result``, ``results`` and ``wrap`` live in :mod:`minidp.core.function` (autograd must not
import the ops); they are re-exported here because op modules take their helpers from this one
place.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as _np

from . import backend
from .function import result, results, wrap
from .tensor import Tensor

__all__ = [
    "result",
    "results",
    "wrap",
    "lift",
    "unbroadcast",
    "normalize_axis",
    "scatter_add_along",
    "not_a_tensor",
    "check_tensor",
    "as_int",
    "check_size",
    "single_axis",
    "tensor_operands",
    "named_op",
]


def not_a_tensor(op: str, arg: str, value: Any) -> TypeError:
    """The error for an operand that must be a Tensor but is not (ops raise it after an isinstance test)."""
    return TypeError(f"{op}: {arg} must be a Tensor, got {type(value).__name__}; wrap arrays with minidp.to_tensor")


def named_op(op: Callable, name: str, doc: str) -> Callable:
    """``op``, made by an op factory, under its public ``name`` and docstring ``doc``, so that
    help() and tracebacks show the op rather than the factory's inner function."""
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def check_tensor(op: str, arg: str, value: Any) -> None:
    """Raise TypeError unless ``value`` is a Tensor."""
    if not isinstance(value, Tensor):
        raise not_a_tensor(op, arg, value)


def tensor_operands(*names: str) -> Callable:
    """Decorator for an op whose named parameters must be Tensors: anything else raises ``not_a_tensor``.

    ``"x"`` is one Tensor (``None`` passes when the parameter defaults to ``None``), ``"x[]"`` a list or
    tuple of Tensors, ``"*x"`` the Tensors of a var-positional parameter. The check is a few
    ``isinstance`` tests per call (about 0.25 us with the extra frame), done once at the boundary
    instead of an AttributeError from inside. Ops on the per-step path (the elementwise family, sum,
    mean, softmax, reshape, split, expand, matmul, astype) catch the AttributeError of their first
    ``._data`` access instead, which costs nothing when the operand is a Tensor.
    """

    def decorate(op: Callable) -> Callable:
        params = inspect.signature(op).parameters
        positions = list(params)
        checks = []
        for spec in names:
            kind = "many" if spec.endswith("[]") else "star" if spec.startswith("*") else "one"
            name = spec.strip("*[]")
            param = params[name]
            checks.append((name, positions.index(name), kind, param.default is None))

        def check(args: tuple, kwargs: dict) -> None:
            for name, position, kind, optional in checks:
                if kind == "star":
                    for i, value in enumerate(args[position:]):
                        if not isinstance(value, Tensor):
                            raise not_a_tensor(op.__name__, f"{name}[{i}]", value)
                    continue
                value = args[position] if position < len(args) else kwargs.get(name)
                if kind == "one":
                    if not isinstance(value, Tensor) and not (optional and value is None):
                        raise not_a_tensor(op.__name__, name, value)
                elif not isinstance(value, (list, tuple)):
                    raise TypeError(
                        f"{op.__name__}: {name} must be a list or tuple of Tensors, got {type(value).__name__}"
                    )
                else:
                    for i, item in enumerate(value):
                        if not isinstance(item, Tensor):
                            raise not_a_tensor(op.__name__, f"{name}[{i}]", item)

        @functools.wraps(op)
        def checked(*args: Any, **kwargs: Any) -> Any:
            check(args, kwargs)
            return op(*args, **kwargs)

        return checked

    return decorate


def as_int(value: Any, what: str) -> int:
    """``value`` as a Python int; bools, floats, strings and the like raise TypeError.

    NumPy integers and one-element integer tensors count as ints (Paddle takes both in shapes).
    """
    if value.__class__ is int:
        return value
    if isinstance(value, Tensor):
        value = value._data
        if value.size == 1 and value.dtype.kind in "iu":
            return int(value.reshape(()))
    elif not isinstance(value, bool) and isinstance(value, (int, _np.integer)):
        return int(value)
    raise TypeError(f"{what} must be an int, got {value!r} ({type(value).__name__})")


def check_size(op: str, arg: str, value: Any) -> int:
    """A layer's size argument (features, channels, embeddings): a positive int, not a bool or float."""
    if value.__class__ is not int and (isinstance(value, bool) or not isinstance(value, (int, _np.integer))):
        raise TypeError(f"{op}: {arg} must be a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{op}: {arg} must be a positive int, got {value}")
    return int(value)


_PYTHON_SCALARS = (int, float, bool)


def lift(value: Any, like: Any = None) -> Tensor:
    """A tensor for an operand that may be a Python number, an array or already a tensor.

    Python numbers stay Python numbers inside the wrapper, so the array library applies its own
    promotion rules (a float32 tensor times 0.5 stays float32). A NumPy scalar counts as the
    Python number it holds, as in Paddle (a float32 tensor times np.float64(0.5) stays float32).
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (int, float, bool)):
        return wrap(value if value.__class__ in _PYTHON_SCALARS else value.item())
    if isinstance(value, _np.generic) and value.dtype.kind in "biuf":
        return wrap(value.item())
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"an operand must be a Tensor, a number or an array, got {type(value).__name__}")
    xp = backend.get_array_module(like) if like is not None else backend.default_array_module()
    return wrap(xp.asarray(value))


def matmul_arrays(a: Any, b: Any) -> Any:
    """``a @ b`` in ``a``'s dtype (ml_dtypes' matmul returns float32 for bfloat16 operands)."""
    out = a @ b
    return out if out.dtype is a.dtype else out.astype(a.dtype)


def unbroadcast(grad: Any, shape: tuple) -> Any:
    """Sum ``grad`` over the axes that broadcasting added or stretched, back to ``shape``."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    return grad.sum(axis=axes, keepdims=True).reshape(shape) if axes else grad.reshape(shape)


def normalize_axis(axis: Any, ndim: int) -> Any:
    """An int or list axis as a tuple of non-negative ints (None stays None).

    Bools, floats and strings raise TypeError, out-of-range axes ValueError.
    """
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    if axis.__class__ is int:
        axes = (axis,)
    elif isinstance(axis, (list, tuple)):
        axes = axis
    else:
        axes = tuple(axis) if hasattr(axis, "__iter__") and not isinstance(axis, str) else (axis,)
    out = []
    for a in axes:
        if a.__class__ is not int:
            a = as_int(a, "axis")
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of range for a tensor with {ndim} dimensions")
        out.append(a % max(ndim, 1))
    return tuple(out)


def single_axis(axis: Any, ndim: int) -> int:
    """One axis (an int, or a list/tuple/tensor holding one) as a non-negative int."""
    axes = normalize_axis(axis, ndim)
    if axes is None or len(axes) != 1:
        raise TypeError(f"axis must be a single int, got {axis!r}")
    return axes[0]


def scatter_add_along(xp: Any, target: Any, indices: Any, values: Any, axis: int) -> None:
    """``target[..., indices[i], ...] += values[i]`` along ``axis``; repeated indices add up.

    ``indices`` and ``values`` have one shape, equal to target's except along ``axis`` (the
    backward of take_along_axis, cummax, sort and the like).
    """
    axis = axis % target.ndim
    grid = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (indices.ndim - d - 1)) for d, n in enumerate(indices.shape)]
    grid[axis] = indices
    xp.add.at(target, tuple(grid), values)
