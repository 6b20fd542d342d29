"""The few helpers every op module shares: building results and undoing broadcasting."""
from __future__ import annotations

from typing import Any, Callable

from numpy import generic as _numpy_scalar

from .. import backend
from ..autograd import engine
from ..autograd.engine import Node
from ..autograd.tensor import Tensor

wrap = Tensor._wrap


def result(data: Any, parents: tuple, backward: Callable) -> Tensor:
    """Wrap an op's output array; record the op when gradients are on and an input needs one.

    NumPy turns 0-d results into scalars; they are made arrays again here, in one place.
    """
    if isinstance(data, _numpy_scalar):
        data = backend.numpy.asarray(data)
    out = wrap(data)
    if engine._grad_enabled:
        for p in parents:
            if not p.stop_gradient:
                out.stop_gradient = False
                out._node = Node(parents, backward)
                break
    return out


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
