"""The few helpers every op module shares: building results and undoing broadcasting.

``result``, ``results`` and ``wrap`` live in :mod:`minidp.autograd.function` (autograd must not
import the ops); they are re-exported here because op modules take their helpers from this one
place.
"""
from __future__ import annotations

from typing import Any

from .. import backend
from ..autograd.function import result, results, wrap
from ..autograd.tensor import Tensor

__all__ = ["result", "results", "wrap", "lift", "unbroadcast", "normalize_axis", "scatter_add_along"]


def lift(value: Any, like: Any = None) -> Tensor:
    """A tensor for an operand that may be a Python number, an array or already a tensor.

    Python numbers stay Python numbers inside the wrapper, so the array library applies its own
    promotion rules (a float32 tensor times 0.5 stays float32).
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (int, float, bool)):
        return wrap(value)
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
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    return grad.sum(axis=axes, keepdims=True).reshape(shape) if axes else grad.reshape(shape)


def normalize_axis(axis: Any, ndim: int) -> Any:
    """An int or list axis as a tuple of non-negative ints (None stays None)."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of range for a tensor with {ndim} dimensions")
        out.append(a % max(ndim, 1))
    return tuple(out)


def scatter_add_along(xp: Any, target: Any, indices: Any, values: Any, axis: int) -> None:
    """``target[..., indices[i], ...] += values[i]`` along ``axis``; repeated indices add up.

    ``indices`` and ``values`` have one shape, equal to target's except along ``axis`` (the
    backward of take_along_axis, cummax, sort and the like).
    """
    axis = axis % target.ndim
    grid = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (indices.ndim - d - 1))
            for d, n in enumerate(indices.shape)]
    grid[axis] = indices
    xp.add.at(target, tuple(grid), values)
