"""The machinery behind table-defined elementwise ops: one line gives an op its whole meaning.

A unary op is ``unary_op(name, doc, rule, forward, derivative)``:

- ``forward`` names the array-module function that computes the output (``"exp"``), or is
  ``forward(xp, x)`` when that takes more than one call;
- ``derivative(xp, x, y)`` is dy/dx at input ``x`` with output ``y``; backward multiplies the
  incoming gradient by it, so it must be an array of x's dtype, a bool array or a Python number
  (never a float64 array for a float32 input). ``ZERO`` marks a piecewise-constant op (floor,
  sign): its gradient is 0;
- ``rule`` is the dtype rule, as in Paddle: ``FLOAT`` ops compute integer inputs in float32,
  whatever the default dtype (``exp(int64)`` is float32), ``KEEP`` ops keep the input's dtype (``abs(int64)``
  is int64). Bool inputs are refused by both.

A binary op is ``binary_op(name, doc, rule, forward, dx, dy)`` with ``forward(xp, x, y)`` and
partial derivatives ``dx(xp, x, y, out)`` / ``dy(xp, x, y, out)`` (``ZERO`` allowed); operands
broadcast and are lifted from Python numbers as in ``add``.

Ops with parameters (``leaky_relu(x, negative_slope)``) call :func:`elementwise` directly with
closures over their parameters. Integer results never record a gradient.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..core import backend
from ..core.backend import get_array_module
from ..core.tensor import Tensor, tensor_method
from ..core.op_util import named_op, not_a_tensor, result, unbroadcast, wrap
from ..core.ops import _PYTHON_NUMBERS, INTEGER_TO_FLOAT, _operands, _shape_error, kind

FLOAT = "float"
KEEP = "keep"
ZERO = None


_FLOATING = frozenset(backend.DTYPES[name] for name in ("float16", "bfloat16", "float32", "float64"))


def _call(forward: Any, xp: Any, xd: Any) -> Any:
    return getattr(xp, forward)(xd) if isinstance(forward, str) else forward(xp, xd)


def _other_dtype(op: str, x: Tensor, xd: Any, rule: str, forward: Any, derivative: Optional[Callable]) -> Tensor:
    """The rare path: integer inputs follow the dtype rule and record no gradient; bool is refused."""
    kind = xd.dtype.kind
    xp = backend.get_array_module(xd)
    if kind in "fc":
        y = _call(forward, xp, xd)
        return result(y, (x,), _backward(xp, xd, y, derivative))
    if kind == "b":
        raise TypeError(f"{op} does not accept bool tensors; convert with .astype('float32') or 'int64' first")
    if kind not in "iu":
        raise TypeError(f"{op} does not support dtype {xd.dtype}")
    if rule == FLOAT:
        return wrap(xp.asarray(_call(forward, xp, xd.astype(INTEGER_TO_FLOAT))))
    return wrap(xp.asarray(_call(forward, xp, xd)).astype(xd.dtype, copy=False))


def _backward(xp: Any, xd: Any, y: Any, derivative: Optional[Callable]) -> Callable:
    return lambda g: (xp.zeros_like(xd) if derivative is ZERO else g * derivative(xp, xd, y),)


def elementwise(
    x: Tensor, forward: Any, derivative: Optional[Callable], rule: str = FLOAT, op: str = "elementwise"
) -> Tensor:
    """Apply a one-input elementwise function with its derivative (see the module docstring)."""
    try:
        xd = x._data
        floating = xd.dtype in _FLOATING
    except AttributeError:
        raise not_a_tensor(op, "x", x) from None
    if not floating:
        return _other_dtype(op, x, xd, rule, forward, derivative)
    xp = get_array_module(xd)
    y = _call(forward, xp, xd)
    return result(y, (x,), _backward(xp, xd, y, derivative))


def unary_op(op: str, doc: str, rule: str, forward: Any, derivative: Optional[Callable]) -> Callable:
    """A public one-input op ``op(x, name=None)`` from its table line, bound as the Tensor method
    ``op``.

    The body spells out :func:`elementwise` rather than calling it: these ops sit on every
    model's hot path, and each Python call saved keeps them as cheap as hand-written ones.
    """
    by_name = isinstance(forward, str)

    def unary(x: Tensor, name: Optional[str] = None) -> Tensor:
        try:
            xd = x._data
            floating = xd.dtype in _FLOATING
        except AttributeError:
            raise not_a_tensor(op, "x", x) from None
        if not floating:
            return _other_dtype(op, x, xd, rule, forward, derivative)
        xp = get_array_module(xd)
        y = getattr(xp, forward)(xd) if by_name else forward(xp, xd)
        return result(y, (x,), lambda g: (xp.zeros_like(xd) if derivative is ZERO else g * derivative(xp, xd, y),))

    return tensor_method(op)(named_op(unary, op, doc))


def _as_float(value: Any) -> Any:
    return float(value) if isinstance(value, _PYTHON_NUMBERS) else value.astype(INTEGER_TO_FLOAT)


def binary_elementwise(
    x: Any,
    y: Any,
    forward: Callable,
    dx: Optional[Callable],
    dy: Optional[Callable],
    rule: str = FLOAT,
    op: str = "elementwise",
) -> Tensor:
    """Apply a two-input broadcasting elementwise function with its partial derivatives."""
    x, y, xd, yd = _operands(op, x, y)
    xp = backend.get_array_module(yd if isinstance(xd, _PYTHON_NUMBERS) else xd)
    kinds = (kind(xd), kind(yd))
    integral = "f" not in kinds and "c" not in kinds
    if integral:
        if "b" in kinds:
            raise TypeError(f"{op} does not accept bool tensors; convert with .astype('float32') first")
        if rule == FLOAT:
            xd, yd = _as_float(xd), _as_float(yd)
    try:
        out = forward(xp, xd, yd)
    except ValueError:
        raise _shape_error(op, x, y) from None
    if integral:
        return wrap(xp.asarray(out))

    def backward(g):
        gx = gy = None
        if not x.stop_gradient:
            gx = xp.zeros_like(xd) if dx is ZERO else unbroadcast(g * dx(xp, xd, yd, out), xd.shape)
        if not y.stop_gradient:
            gy = xp.zeros_like(yd) if dy is ZERO else unbroadcast(g * dy(xp, xd, yd, out), yd.shape)
        return gx, gy

    return result(out, (x, y), backward)


def binary_op(
    op: str, doc: str, rule: str, forward: Callable, dx: Optional[Callable], dy: Optional[Callable]
) -> Callable:
    """A public two-input op ``op(x, y, name=None)`` from its table line, bound as the Tensor
    method ``op``."""

    def binary(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
        return binary_elementwise(x, y, forward, dx, dy, rule, op)

    return tensor_method(op)(named_op(binary, op, doc))
