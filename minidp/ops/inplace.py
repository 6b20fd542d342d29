"""In-place forms of ops (``x.add_(y)``, ``minidp.exp_(x)``), made from the ops themselves.

:func:`inplace_form` turns any op whose first argument is the tensor to update into its
in-place form; :data:`INPLACE_OPS` lists the Tensor methods that get one (``x.exp_()`` is the
in-place form of ``x.exp()``, bound here and exported as ``minidp.exp_``; an op added elsewhere
only needs its name listed here). The rules, as in Paddle:

- a leaf that requires a gradient (a parameter) refuses in-place updates while gradients are
  recorded: its gradient would be lost. Under ``minidp.no_grad()`` the update is allowed;
- a tensor outside the graph (no graph node, and the result records no gradient) has the
  result written into its existing buffer when shape and dtype allow, so views of it see the
  change. Under ``no_grad`` a result of the graph instead takes the new array and keeps its
  node, as if the update were not there for autograd;
- a tensor whose result joins the graph is rebound to the result: it takes the new array and
  the new graph node, and backward closures that saved the old array keep seeing the old one.

Each update that autograd sees bumps x's ``inplace_version`` (:mod:`minidp.core.versions`
counts it). Ops recorded before it read the old value: a rebinding update keeps a snapshot of
x (its old array and node) and backward routes those ops' gradient to it, which is exact; a
buffer write destroyed the old value, so a backward that reaches one of those ops raises,
naming it (Paddle raises there too when the op saved the tensor; minidp raises even when the op
needed only its shape, as ``add`` does).

Fill-style updates (``zero_``, ``fill_``, ``uniform_``, ``normal_``, the other random refills)
live here too, and the updates whose target is not the first argument (``where_``), that
take another tensor's values (``copy_``) or that write at an index (``x[index] = value``).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional

import ml_dtypes

from ..core import backend
from ..core import engine, versions
from ..core.tensor import Tensor, tensor_method
from ..core.random import host_generator
from .creation import normal, uniform
from .linalg import filled_diagonal
from ..core.ops import add, astype, where
from .manipulation import broadcast_to
from .indexing import assign_at, write_at
from .shape import index_arrays
from ..core.op_util import check_tensor, result, tensor_operands
from . import binary, compare, cumulative, unary  # noqa: F401  (they bind ops that INPLACE_OPS names)

INPLACE_OPS = (
    "abs",
    "acos",
    "acosh",
    "add",
    "addmm",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "cast",
    "ceil",
    "clip",
    "copysign",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "digamma",
    "divide",
    "equal",
    "erf",
    "erfinv",
    "exp",
    "expm1",
    "flatten",
    "floor",
    "floor_divide",
    "floor_mod",
    "frac",
    "gammaln",
    "gcd",
    "greater_equal",
    "greater_than",
    "hypot",
    "lcm",
    "ldexp",
    "lerp",
    "less_equal",
    "less_than",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "mod",
    "multiply",
    "nan_to_num",
    "neg",
    "not_equal",
    "pow",
    "reciprocal",
    "remainder",
    "reshape",
    "round",
    "rsqrt",
    "scale",
    "sigmoid",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "squeeze",
    "subtract",
    "tan",
    "tanh",
    "transpose",
    "trunc",
    "unsqueeze",
    "baddbmm",
    "fill_diagonal_tensor",
    "index_add",
    "index_fill",
    "index_put",
    "masked_fill",
    "masked_scatter",
    "put_along_axis",
    "renorm",
    "scatter",
    "scatter_add",
    "t",
    "tril",
    "triu",
)
# Paddle's second names for some of them: alias -> op
INPLACE_ALIASES = {
    "sub": "subtract",
    "div": "divide",
    "mul": "multiply",
    "clamp": "clip",
    "less": "less_than",
    "bitwise_invert": "bitwise_not",
}


def _check_target(x: Any, op: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op} updates a Tensor in place, got {type(x).__name__}")
    if engine._grad_enabled and x._node is None and not x.stop_gradient:
        raise ValueError(
            f"{op}: {x.name} is a leaf tensor that requires a gradient, so it cannot be updated in "
            f"place (its gradient would be lost). Use the out-of-place op, or update it inside "
            f"minidp.no_grad()"
        )


def _store(x: Tensor, before: Tensor, out: Tensor) -> Tensor:
    """Make x hold ``out``, computed from ``before`` (x's snapshot): in its own buffer when
    neither is in a graph, else by rebinding; count the update for the ops that read x. An op
    that returned its input unchanged (dropout in evaluation) leaves x as it is: rebinding x to
    the snapshot would give both one graph node, which a backward through both would run twice."""
    if out is before:
        return x
    if out._node is None and out.stop_gradient:
        data = out._data
        if x._node is not None:  # a graph result updated under no_grad: its saved arrays stay intact
            x._data = data
            return x
        if data.shape == x._data.shape and data.dtype == x._data.dtype:
            try:
                x._data[...] = data
            except ValueError:  # a read-only view (a broadcast): rebind instead
                pass
            else:
                versions.mark_updated(x, None)
                return x
    versions.mark_updated(x, before)
    x._data = out._data
    x._node = out._node
    x.stop_gradient = out.stop_gradient
    return x


def inplace_form(op: Callable, name: Optional[str] = None) -> Callable:
    """The in-place form of ``op``: ``op_(x, *args)`` computes ``op(x, *args)`` into x and returns x."""
    inplace_name = f"{name or op.__name__}_"

    def op_(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _check_target(x, inplace_name)
        before = versions.snapshot(x)
        args = tuple(before if a is x else a for a in args)
        return _store(x, before, op(before, *args, **kwargs))

    op_.__name__ = op_.__qualname__ = inplace_name
    op_.__doc__ = f"In-place form of ``{name or op.__name__}``: updates x and returns it."
    return op_


def _filled(x: Tensor, make: Callable) -> Tensor:
    """An array of x's shape and dtype set to ``make(xp, shape, dtype)``: a constant for
    autograd (no gradient flows back to x)."""
    xp = backend.get_array_module(x._data)
    data = xp.empty_like(x._data)
    data[...] = make(xp, x._data.shape, x._data.dtype)
    return result(data, (x,), lambda g: (None,))


def _fill(x: Tensor, op: str, make: Callable) -> Tensor:
    return inplace_form(_filled, op[:-1])(x, make)


@tensor_method("zero_")
def zero_(x: Tensor) -> Tensor:
    """Set every element to 0 in place."""
    return _fill(x, "zero_", lambda xp, shape, dtype: 0)


@tensor_method("fill_")
def fill_(x: Tensor, value: Any) -> Tensor:
    """Set every element to ``value`` in place."""
    return _fill(x, "fill_", lambda xp, shape, dtype: value)


@tensor_method("uniform_")
def uniform_(x: Tensor, min: float = 0.0, max: float = 1.0, seed: int = 0, name: Optional[str] = None) -> Tensor:
    """Refill x in place with values drawn uniformly from [min, max).

    As in Paddle, x must be floating and ``min < max`` (so neither may be NaN; infinite bounds
    are allowed and give infinite or NaN values)."""
    check_tensor("uniform_", "x", x)
    if not backend.is_floating(x._data.dtype):
        raise TypeError(f"uniform_: x must be a floating tensor, got {x._data.dtype}; cast it with .astype('float32')")
    for arg, value in (("min", min), ("max", max)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"uniform_: {arg} must be a number, got {value!r} ({type(value).__name__})")
    if not min < max:
        raise ValueError(f"uniform_: min must be less than max, got min={min!r} and max={max!r}")
    return _fill(x, "uniform_", lambda xp, shape, dtype: uniform(list(shape), dtype, min, max)._data)


@tensor_method("normal_")
def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, name: Optional[str] = None) -> Tensor:
    """Refill x in place with normal values of the given mean and standard deviation."""
    return _fill(x, "normal_", lambda xp, shape, dtype: normal(mean, std, list(shape))._data.astype(dtype))


_add_in_place = inplace_form(add, "add")


@tensor_method("increment")
def increment(x: Tensor, value: float = 1.0, name: Optional[str] = None) -> Tensor:
    """Add ``value`` to a one-element tensor in place (a counter); returns x."""
    if isinstance(x, Tensor) and x.size != 1:
        raise ValueError(f"increment: x must have one element, got shape {x.shape}")
    return _add_in_place(x, value)


def _refill(x: Tensor, op: str, draw: Callable) -> Tensor:
    """Refill x in place with ``draw(host generator, shape)`` (host values, cast to x's dtype)."""
    return _fill(x, op, lambda xp, shape, dtype: xp.asarray(draw(host_generator(), shape).astype(dtype)))


@tensor_method("bernoulli_")
def bernoulli_(x: Tensor, p: Any = 0.5, name: Optional[str] = None) -> Tensor:
    """Refill x in place with 1 (probability ``p``, a number or a tensor broadcast to x) or 0."""
    probs = backend.to_host(p._data) if isinstance(p, Tensor) else p
    return _refill(x, "bernoulli_", lambda g, shape: g.random(shape) < probs)


@tensor_method("cauchy_")
def cauchy_(x: Tensor, loc: float = 0, scale: float = 1, name: Optional[str] = None) -> Tensor:
    """Refill x in place with Cauchy values of median ``loc`` and half-width ``scale``."""
    return _refill(x, "cauchy_", lambda g, shape: loc + scale * g.standard_cauchy(shape))


@tensor_method("exponential_")
def exponential_(x: Tensor, lam: float = 1.0, name: Optional[str] = None) -> Tensor:
    """Refill x in place with exponential values of rate ``lam``."""
    return _refill(x, "exponential_", lambda g, shape: g.exponential(1.0 / lam, shape))


@tensor_method("geometric_")
def geometric_(x: Tensor, probs: Any, name: Optional[str] = None) -> Tensor:
    """Refill x in place with log(u) / log(1 - probs) for uniform u: Paddle's continuous form of
    the geometric distribution (round up for the number of trials)."""
    chance = backend.to_host(probs._data) if isinstance(probs, Tensor) else probs
    return _refill(x, "geometric_", lambda g, shape: backend.numpy.log(g.random(shape)) / backend.numpy.log1p(-chance))


@tensor_method("log_normal_")
def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, name: Optional[str] = None) -> Tensor:
    """Refill x in place with exp of normal values of the given ``mean`` and ``std``."""
    return _refill(x, "log_normal_", lambda g, shape: backend.numpy.exp(g.normal(mean, std, shape)))


@tensor_method("random_")
def random_(x: Tensor, from_: int = 0, to: Optional[int] = None, *, generator: Any = None) -> Tensor:
    """Refill x in place with integers from [from_, to). One argument, ``random_(n)``, means
    [0, n); none means from 0 up to the largest integer x's dtype holds exactly (2**(mantissa
    bits + 1) for floats, the maximum for integers)."""
    if to is None and from_ > 0:
        from_, to = 0, from_
    elif to is None:
        dtype = x._data.dtype
        largest = (
            2 ** (ml_dtypes.finfo(dtype).nmant + 1) if backend.is_floating(dtype) else int(ml_dtypes.iinfo(dtype).max)
        )
        to = largest + 1
    if from_ >= to:
        raise ValueError(f"random_: from_ ({from_}) must be below to ({to})")
    return _refill(x, "random_", lambda g, shape: g.integers(from_, to, shape))


fill_diagonal_ = tensor_method("fill_diagonal_")(inplace_form(filled_diagonal, "fill_diagonal"))


def _copied_from(x: Tensor, src: Tensor) -> Tensor:
    return astype(broadcast_to(src, x.shape), x.dtype)


_copy_into = inplace_form(_copied_from, "copy")


@tensor_method("copy_")
def copy_(x: Tensor, src: Tensor, blocking: bool = True) -> Tensor:
    """Write src's values (broadcast to x's shape, cast to x's dtype) into x; the gradient of x
    flows to src."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_: src must be a Tensor, got {type(src).__name__}")
    return _copy_into(x, src)


def _written_at(x: Tensor, index: Any, value: Any) -> Tensor:
    return write_at("x[index] = value", x, value, index_arrays(index))


_setitem_into_x = inplace_form(_written_at, "setitem")


@tensor_method("__setitem__")
def tensor_setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value`` (Paddle's ``Tensor.__setitem__``): value is cast to x's dtype and
    broadcast; the gradient reaches x around the index and the value from it. A tensor outside
    the graph, given a value outside it too, has just the selected elements written in its
    buffer; otherwise x is rebound to the written copy, as other in-place updates are."""
    writes_buffer = (
        x._node is None
        and x.stop_gradient
        and not (engine._grad_enabled and isinstance(value, Tensor) and not value.stop_gradient)
    )
    if writes_buffer and getattr(x._data.flags, "writeable", True):
        values = value._data if isinstance(value, Tensor) else value
        assign_at("x[index] = value", x._data, index_arrays(index), values)
        versions.mark_updated(x, None)
        return
    _setitem_into_x(x, index, value)


_where_into_x = inplace_form(lambda x, condition, y: where(condition, x, y), "where")


@tensor_method("where_")
@tensor_operands("condition")
def where_(condition: Tensor, x: Tensor = None, y: Any = None, name: Optional[str] = None) -> Tensor:
    """In-place ``where``: x takes y's values where ``condition`` is False; returns x."""
    return _where_into_x(x, condition, y)


def _bind_inplace_forms() -> dict:
    """``{name_: in-place form}`` for every Tensor method named in :data:`INPLACE_OPS` and its
    aliases, each bound as the Tensor method ``name_``."""
    forms = {f"{name}_": inplace_form(getattr(Tensor, name), name) for name in INPLACE_OPS}
    forms.update({f"{alias}_": forms[f"{name}_"] for alias, name in INPLACE_ALIASES.items()})
    for name, form in forms.items():
        tensor_method(name)(form)
    return forms


_FORMS = _bind_inplace_forms()
globals().update(_FORMS)
__all__ = [
    *sorted(_FORMS),
    "bernoulli_",
    "cauchy_",
    "fill_",
    "geometric_",
    "increment",
    "log_normal_",
    "normal_",
    "uniform_",
    "where_",
    "zero_",
]
