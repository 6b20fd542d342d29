"""Comparisons and logical ops: boolean results that carry no gradient."""
from __future__ import annotations

import operator
from typing import Any, Callable

from .. import backend
from ..autograd.tensor import Tensor
from ._util import wrap


def _compare(fn: Callable) -> Callable:
    def op(x: Any, y: Any, name: str = None) -> Tensor:
        xd = x._data if isinstance(x, Tensor) else x
        yd = y._data if isinstance(y, Tensor) else y
        return wrap(backend.get_array_module(xd).asarray(fn(xd, yd)))

    op.__name__ = fn.__name__
    op.__doc__ = f"Elementwise ``{fn.__name__}`` as a bool tensor (no gradient)."
    return op


equal = _compare(operator.eq)
not_equal = _compare(operator.ne)
less_than = _compare(operator.lt)
less_equal = _compare(operator.le)
greater_than = _compare(operator.gt)
greater_equal = _compare(operator.ge)
logical_and = _compare(operator.and_)
logical_or = _compare(operator.or_)
logical_xor = _compare(operator.xor)


def logical_not(x: Tensor, name: str = None) -> Tensor:
    """Elementwise not, as a bool tensor."""
    return wrap(~x._data.astype(bool))


def isnan(x: Tensor, name: str = None) -> Tensor:
    """Where x is NaN."""
    return wrap(backend.get_array_module(x._data).isnan(x._data))


def isfinite(x: Tensor, name: str = None) -> Tensor:
    """Where x is neither infinite nor NaN."""
    return wrap(backend.get_array_module(x._data).isfinite(x._data))


def allclose(x: Tensor, y: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False,
             name: str = None) -> Tensor:
    """Whether all values are close, as a 0-d bool tensor."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.asarray(xp.allclose(x._data, y._data, rtol=rtol, atol=atol, equal_nan=equal_nan)))
