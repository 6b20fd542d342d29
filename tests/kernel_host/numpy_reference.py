"""NumPy versions of the kernels' results, and the test data both kernel test files use.

Every operation is written out in the order the kernels perform it, on NumPy scalars of the
arithmetic type, so float32 results must match the kernels bit for bit. CuPy compiles the
kernels with -ftz=true, so each float32 operation reads subnormal operands as zero and flushes
subnormal results to zero (keeping the sign); :func:`flush` models that on every operand and
result of float32 arithmetic (float64 keeps its subnormals). On data without subnormals it
changes nothing, and the kernels equal NumPy's plain arithmetic.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy

# Sizes of the tensors of one bucket: the edges of a 256-thread block, an empty tensor
# among others, a large tensor, and random mixes.
SIZE_CASES = {
    "empty": [0],
    "one": [1],
    "255": [255],
    "256": [256],
    "257": [257],
    "65536": [65536],
    "block-edges": [255, 256, 257],
    "with-empties": [0, 1, 0, 3, 0],
    "random": [int(n) for n in numpy.random.default_rng(7).integers(0, 5000, 12)],
    "random-small": [int(n) for n in numpy.random.default_rng(11).integers(0, 40, 30)],
}

SENTINEL = 12345.0


def flush(values: numpy.ndarray) -> numpy.ndarray:
    """``values`` with float32 subnormals replaced by a zero of the same sign, as the GPU reads and
    writes them under -ftz=true; other dtypes unchanged."""
    values = numpy.asarray(values)
    if values.dtype != numpy.float32:
        return values
    tiny = numpy.finfo(numpy.float32).tiny
    return numpy.where(numpy.abs(values) < tiny, numpy.copysign(numpy.float32(0), values), values)


def arithmetic_type(*dtypes: numpy.dtype) -> type:
    """float64 if either side is float64, float32 otherwise (halves widen to float)."""
    return numpy.float64 if any(numpy.dtype(d) == numpy.float64 for d in dtypes) else numpy.float32


def random_tensors(rng: numpy.random.Generator, sizes: Sequence[int], dtype: numpy.dtype) -> list[numpy.ndarray]:
    """Normal random tensors of ``sizes`` with varied shapes, in ``dtype``."""
    tensors = []
    for index, size in enumerate(sizes):
        values = rng.standard_normal(size).astype(numpy.float64) * (index + 1)
        shape = (size // 2, 2) if size % 2 == 0 and size > 0 else (size,)
        tensors.append(values.astype(dtype).reshape(shape))
    return tensors


def padded_offsets(sizes: Sequence[int]) -> tuple[list[int], int]:
    """Offsets with gaps of 0, 1 and 2 elements between tensors, and a flat size with a tail."""
    offsets = []
    end = 0
    for index, size in enumerate(sizes):
        offsets.append(end + index % 3)
        end = offsets[-1] + size
    return offsets, end + 5


def pack(sources: Sequence[numpy.ndarray], flat: numpy.ndarray, offsets: Sequence[int], scale: float) -> numpy.ndarray:
    """A copy of ``flat`` with each source, times ``scale``, written at its offset."""
    result = flat.copy()
    for source, offset in zip(sources, offsets):
        arithmetic = arithmetic_type(source.dtype, flat.dtype)
        values = flush(flush(source.reshape(-1).astype(arithmetic)) * flush(arithmetic(scale)))
        result[offset : offset + source.size] = values.astype(flat.dtype)
    return result


def unpack(
    flat: numpy.ndarray, destinations: Sequence[numpy.ndarray], offsets: Sequence[int], scale: float
) -> list[numpy.ndarray]:
    """What each destination holds after unpacking ``flat`` times ``scale``."""
    results = []
    for destination, offset in zip(destinations, offsets):
        arithmetic = arithmetic_type(flat.dtype, destination.dtype)
        values = flush(flush(flat[offset : offset + destination.size].astype(arithmetic)) * flush(arithmetic(scale)))
        results.append(values.astype(destination.dtype).reshape(destination.shape))
    return results


def _start(param: numpy.ndarray, grad: numpy.ndarray, state_dtype: numpy.dtype, master: numpy.ndarray | None) -> tuple:
    """The compute type, the stored parameter widened, the value the step changes, and the
    gradient widened, as the optimizer kernels read them."""
    c = arithmetic_type(param.dtype, state_dtype)
    stored = flush(param.astype(c))
    p = flush(master) if master is not None else stored.copy()
    return c, stored, p, flush(grad.astype(c))


def _finish(param: numpy.ndarray, p: numpy.ndarray, master: numpy.ndarray | None) -> tuple:
    """The new parameter (``p`` rounded to its dtype) and the new master (None if none)."""
    return p.astype(param.dtype), (p if master is not None else None)


def adam_step(
    param: numpy.ndarray,
    grad: numpy.ndarray,
    moment1: numpy.ndarray,
    moment2: numpy.ndarray,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    beta1_pow: float,
    beta2_pow: float,
    weight_decay: float,
    decoupled: bool,
    master: numpy.ndarray | None = None,
) -> tuple:
    """Paddle's Adam/AdamW step on one parameter: new (param, moment1, moment2, master).

    lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow); eps_hat = epsilon * sqrt(1 - beta2_pow);
    Adam adds weight_decay * p to g, AdamW scales p by 1 - lr * weight_decay; then
    m1 = b1 m1 + (1 - b1) g, m2 = b2 m2 + (1 - b2) g g, p -= lr_t m1 / (sqrt(m2) + eps_hat),
    in float (double for float64 parameters); the L2 term reads the stored parameter.
    """
    t, stored, p, g = _start(param, grad, moment1.dtype, master)
    f = flush  # on every float32 operand (the scalars too) and result, as under -ftz=true
    one = t(1)
    lr_t = f(t(lr * math.sqrt(1.0 - beta2_pow) / (1.0 - beta1_pow)))
    eps_hat = f(t(epsilon * math.sqrt(1.0 - beta2_pow)))
    b1, b2 = f(t(beta1)), f(t(beta2))
    if weight_decay and not decoupled:
        g = f(g + f(f(t(weight_decay)) * stored))
    if weight_decay and decoupled:
        p = f(p * f(t(1.0 - lr * weight_decay)))
    m1 = f(f(b1 * f(moment1.astype(t))) + f(f(one - b1) * g))
    m2 = f(f(b2 * f(moment2.astype(t))) + f(f(f(one - b2) * g) * g))
    p = f(p - f(lr_t * f(m1 / f(f(numpy.sqrt(m2)) + eps_hat))))
    new_param, new_master = _finish(param, p, master)
    return new_param, m1.astype(moment1.dtype), m2.astype(moment2.dtype), new_master


def sgd_step(
    param: numpy.ndarray, grad: numpy.ndarray, *, lr: float, weight_decay: float, master: numpy.ndarray | None = None
) -> tuple:
    """Paddle's SGD step on one parameter: new (param, master). p -= lr * (g + wd * p)."""
    t, stored, p, g = _start(param, grad, param.dtype, master)
    f = flush
    if weight_decay:
        g = f(g + f(f(t(weight_decay)) * stored))
    return _finish(param, f(p - f(f(t(lr)) * g)), master)


def momentum_step(
    param: numpy.ndarray,
    grad: numpy.ndarray,
    velocity: numpy.ndarray,
    *,
    lr: float,
    momentum: float,
    weight_decay: float,
    nesterov: bool,
    master: numpy.ndarray | None = None,
) -> tuple:
    """Paddle's Momentum step on one parameter: new (param, velocity, master).

    v = mu v + g (g with the L2 term); p -= lr v, or p -= lr (g + mu v) with Nesterov; the
    parameter's step uses v before it is rounded to the velocity's dtype.
    """
    t, stored, p, g = _start(param, grad, velocity.dtype, master)
    f = flush
    mu = f(t(momentum))
    if weight_decay:
        g = f(g + f(f(t(weight_decay)) * stored))
    v = f(f(mu * f(velocity.astype(t))) + g)
    step = f(g + f(mu * v)) if nesterov else v
    new_param, new_master = _finish(param, f(p - f(f(t(lr)) * step)), master)
    return new_param, v.astype(velocity.dtype), new_master


def assert_bits_equal(actual: numpy.ndarray, expected: numpy.ndarray, what: str) -> None:
    """Exact equality of the stored bits (so -0.0 != 0.0 and NaN payloads count)."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    unsigned = numpy.dtype(f"u{actual.dtype.itemsize}")
    mismatches = numpy.flatnonzero(actual.view(unsigned) != expected.view(unsigned))
    assert mismatches.size == 0, (
        f"{what}: {mismatches.size} elements differ, first at {mismatches[0]}: "
        f"{actual.reshape(-1)[mismatches[0]]!r} != {expected.reshape(-1)[mismatches[0]]!r}"
    )
