"""Comparisons and logical ops: boolean results that carry no gradient."""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import named_op, not_a_tensor, tensor_operands, wrap

__all__ = [
    "allclose",
    "eq",
    "equal",
    "equal_all",
    "ge",
    "greater",
    "greater_equal",
    "greater_than",
    "gt",
    "is_complex",
    "is_floating_point",
    "is_integer",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "le",
    "less",
    "less_equal",
    "less_than",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "ne",
    "not_equal",
    "signbit",
]


def _compare(fn: Callable) -> Callable:
    def op(x: Any, y: Any, name: str = None) -> Tensor:
        xd = x._data if isinstance(x, Tensor) else x
        yd = y._data if isinstance(y, Tensor) else y
        return wrap(backend.get_array_module(xd).asarray(fn(xd, yd)))

    return named_op(op, fn.__name__, f"Elementwise ``{fn.__name__}`` as a bool tensor (no gradient).")


equal = tensor_method("equal", "eq", "__eq__")(_compare(operator.eq))
not_equal = tensor_method("not_equal", "ne", "__ne__")(_compare(operator.ne))
less_than = tensor_method("less_than", "less", "lt", "__lt__")(_compare(operator.lt))
less_equal = tensor_method("less_equal", "le", "__le__")(_compare(operator.le))
greater_than = tensor_method("greater_than", "greater", "gt", "__gt__")(_compare(operator.gt))
greater_equal = tensor_method("greater_equal", "ge", "__ge__")(_compare(operator.ge))


def _logical(which: str) -> Callable:
    """``logical_and``/``or``/``xor``, bound as the Tensor method of that name: any dtype, non-zero
    counts as True (Paddle's rule). Both operands must be Tensors of one dtype, as in Paddle (no
    number or array operands: no operator is backed by these)."""

    def op(x: Tensor, y: Tensor, out: Optional[Tensor] = None, name: str = None) -> Tensor:
        xd, yd = x._data, y._data
        if xd.dtype != yd.dtype:
            raise TypeError(f"{which}: x and y must have one dtype, got {xd.dtype} and {yd.dtype}")
        xp = backend.get_array_module(xd)
        return wrap(xp.asarray(getattr(xp, which)(xd, yd)))

    named = named_op(op, which, f"Elementwise ``{which}`` as a bool tensor; non-zero values count as True.")
    return tensor_method(which)(tensor_operands("x", "y")(named))


eq = equal
ne = not_equal
lt = less = less_than
le = less_equal
gt = greater = greater_than
ge = greater_equal


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


@tensor_method("logical_not")
@tensor_operands("x")
def logical_not(x: Tensor, out: Optional[Tensor] = None, name: str = None) -> Tensor:
    """Elementwise not, as a bool tensor; non-zero values count as True."""
    return wrap(backend.get_array_module(x._data).logical_not(x._data))


def _real_test(test: str, doc: str):
    """A bool-valued test of each element (no gradient), bound as the Tensor method ``test``;
    integers are finite and never NaN."""

    def op(x: Tensor, name: Optional[str] = None) -> Tensor:
        try:
            xd = x._data
        except AttributeError:
            raise not_a_tensor(test, "x", x) from None
        xp = backend.get_array_module(xd)
        if xd.dtype.kind not in "fc":
            return wrap(xp.full(xd.shape, test == "isfinite"))
        return wrap(getattr(xp, test)(xd))

    return tensor_method(test)(named_op(op, test, doc))


isnan = _real_test("isnan", "Where x is NaN.")
isinf = _real_test("isinf", "Where x is +inf or -inf.")
isfinite = _real_test("isfinite", "Where x is neither infinite nor NaN.")
isposinf = _real_test("isposinf", "Where x is +inf.")
isneginf = _real_test("isneginf", "Where x is -inf.")


@tensor_method("isreal")
@tensor_operands("x")
def isreal(x: Tensor, name: Optional[str] = None) -> Tensor:
    """Where x has no imaginary part (everywhere, for real dtypes)."""
    xd = x._data
    xp = backend.get_array_module(xd)
    return wrap(xp.isreal(xd) if xd.dtype.kind == "c" else xp.ones(xd.shape, bool))


@tensor_method("allclose")
@tensor_operands("x", "y")
def allclose(
    x: Tensor, y: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False, name: str = None
) -> Tensor:
    """Whether all values are close, as a 0-d bool tensor."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.asarray(xp.allclose(x._data, y._data, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@tensor_method("isclose")
@tensor_operands("x", "y")
def isclose(
    x: Tensor, y: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False, name: str = None
) -> Tensor:
    """Where |x - y| <= atol + rtol * |y|, as a bool tensor."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.isclose(x._data, y._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@tensor_method("equal_all")
@tensor_operands("x", "y")
def equal_all(x: Tensor, y: Tensor, name: str = None) -> Tensor:
    """Whether x and y have the same shape and the same values, as a 0-d bool tensor."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.asarray(x._data.shape == y._data.shape and bool((x._data == y._data).all())))


@tensor_method("signbit")
@tensor_operands("x")
def signbit(x: Tensor, name: str = None) -> Tensor:
    """Where the sign bit is set (negative numbers and -0.0), as a bool tensor."""
    return wrap(backend.get_array_module(x._data).signbit(x._data))


@tensor_method("is_floating_point")
@tensor_operands("x")
def is_floating_point(x: Tensor) -> bool:
    """Whether x holds floating-point numbers (bfloat16 included)."""
    return backend.is_floating(x._data.dtype)


@tensor_method("is_integer")
@tensor_operands("x")
def is_integer(x: Tensor) -> bool:
    """Whether x holds integers (bool is not an integer dtype here, as in Paddle)."""
    return x._data.dtype.kind in "iu"


@tensor_method("is_complex")
@tensor_operands("x")
def is_complex(x: Tensor) -> bool:
    """Whether x holds complex numbers."""
    return x._data.dtype.kind == "c"
