"""Drawing from distributions: Bernoulli, binomial, multinomial, Poisson, log-normal, and the
``*_like`` forms of the creation functions.

Every draw comes from the process's host generator (:mod:`minidp.core.random`), so ``minidp.seed``
makes it repeat; results land on the input's device (or the current one). Samples are not
differentiable: they are returned with ``stop_gradient=True``, as in Paddle.
"""

from __future__ import annotations

from typing import Any, Optional

from ..core import backend
from ..core.tensor import Tensor, tensor_method
from ..framework import place_name
from ..core.random import host_generator
from ..core.op_util import tensor_operands, wrap
from .creation import _random, randn

__all__ = [
    "bernoulli",
    "binomial",
    "multinomial",
    "poisson",
    "log_normal",
    "standard_normal",
    "rand_like",
    "randn_like",
    "randint_like",
]


def _host_values(x: Any) -> Any:
    return backend.to_host(x._data) if isinstance(x, Tensor) else x


def _like(x: Tensor, values: Any, dtype: Any) -> Tensor:
    """``values`` (a host array) as a tensor on x's device, in ``dtype``."""
    xp = backend.get_array_module(x._data)
    return wrap(xp.asarray(values.astype(backend.convert_dtype(dtype), copy=False)))


def _probabilities(name: str, values: Any) -> None:
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError(f"{name}: probabilities must lie in [0, 1]")


@tensor_operands("x")
def bernoulli(x: Tensor, p: Optional[float] = None, name: Optional[str] = None) -> Tensor:
    """1 with probability x (elementwise), else 0, in x's dtype; with ``p`` every element uses p."""
    probs = _host_values(x) if p is None else backend.numpy.full(x._data.shape, float(p))
    _probabilities("bernoulli", probs)
    return _like(x, host_generator().random(probs.shape) < probs, x.dtype)


@tensor_operands("count", "prob")
def binomial(count: Tensor, prob: Tensor, name: Optional[str] = None) -> Tensor:
    """The number of successes in ``count`` trials of probability ``prob`` (int64, elementwise)."""
    probs = _host_values(prob)
    _probabilities("binomial", probs)
    return _like(count, host_generator().binomial(_host_values(count), probs), "int64")


@tensor_method("multinomial")
@tensor_operands("x")
def multinomial(x: Tensor, num_samples: int = 1, replacement: bool = False, name: Optional[str] = None) -> Tensor:
    """Category indices (int64) drawn with the unnormalised weights in x's last axis (x is 1-D or 2-D).

    Without ``replacement`` a category is drawn at most once, so ``num_samples`` may not exceed
    the number of categories with a non-zero weight.
    """
    weights = _host_values(x).astype("float64")
    if weights.ndim not in (1, 2):
        raise ValueError(f"multinomial: x must be 1-D or 2-D, got shape {list(weights.shape)}")
    rows = weights.reshape(-1, weights.shape[-1])
    if weights.size and weights.min() < 0 or not (rows.sum(axis=1) > 0).all():
        raise ValueError("multinomial: the weights must not be negative, and each row needs a positive one")
    if not replacement and num_samples > int((rows > 0).sum(axis=1).min()):
        raise ValueError(
            f"multinomial: cannot draw {num_samples} samples without replacement from fewer "
            f"non-zero categories; pass replacement=True or ask for fewer"
        )
    generator = host_generator()
    drawn = backend.numpy.stack(
        [generator.choice(rows.shape[1], num_samples, replace=replacement, p=row / row.sum()) for row in rows]
    )
    return _like(x, drawn.reshape(weights.shape[:-1] + (num_samples,)), "int64")


@tensor_operands("x")
def poisson(x: Tensor, name: Optional[str] = None) -> Tensor:
    """Counts drawn from Poisson distributions with the rates in x, in x's dtype."""
    rates = _host_values(x)
    if rates.size and rates.min() < 0:
        raise ValueError("poisson: the rates in x must not be negative")
    return _like(x, host_generator().poisson(rates), x.dtype)


def log_normal(mean: Any = 1.0, std: Any = 2.0, shape: Any = None, name: Optional[str] = None) -> Tensor:
    """exp of normal values with the given ``mean`` and ``std`` (numbers or tensors); the shape is
    ``shape``, or the broadcast shape of tensor arguments."""
    mean_values, std_values = _host_values(mean), _host_values(std)
    if shape is None:
        shape = backend.numpy.broadcast_shapes(backend.numpy.shape(mean_values), backend.numpy.shape(std_values))
    return _random(lambda g, s: backend.numpy.exp(g.normal(mean_values, std_values, s)), shape, None)


standard_normal = randn


@tensor_operands("input")
def rand_like(
    input: Tensor, name: Optional[str] = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Uniform values in [0, 1) with input's shape, in its dtype unless ``dtype`` is given."""
    return _drawn_like(input, lambda g, s: g.random(s), dtype, device, requires_grad)


@tensor_operands("x")
def randn_like(
    x: Tensor, dtype: Any = None, name: Optional[str] = None, *, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal values with x's shape, in its dtype unless ``dtype`` is given."""
    return _drawn_like(x, lambda g, s: g.standard_normal(s), dtype, device, requires_grad)


def randint_like(
    x: Tensor, low: int = 0, high: Optional[int] = None, dtype: Any = None, name: Optional[str] = None
) -> Tensor:
    """Integers from [low, high) (from [0, low) without ``high``) with x's shape, in x's dtype
    unless ``dtype`` is given."""
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError(f"randint_like: low ({low}) must be below high ({high})")
    return _drawn_like(x, lambda g, s: g.integers(low, high, s), dtype, None, False)


def _drawn_like(x: Tensor, draw: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    values = draw(host_generator(), tuple(x._data.shape))
    target = x.dtype if dtype is None else dtype
    if device is None:
        out = _like(x, values, target)
    else:
        on_cpu = backend._parse_place(place_name(device)) == "cpu"
        xp = backend.numpy if on_cpu else backend._cupy()
        out = wrap(xp.asarray(values.astype(backend.convert_dtype(target), copy=False)))
    out.stop_gradient = not requires_grad
    return out


def range(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """Values start, start+step, ... up to and including ``end`` (Paddle's deprecated ``range``;
    prefer :func:`arange`, which stops before ``end``). The default dtype is the default float one."""
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("range: step must not be 0")
    count = max(int((end - start) // step) + 1, 0)
    xp = backend.default_array_module()
    return wrap((xp.arange(count) * step + start).astype(backend.convert_dtype(dtype)))
