"""Finite-difference gradient checking in float64, shared by the op, layer and loss tests, and
the test data those tests feed it."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

import minidp
from minidp.core.backend import BFLOAT16


def t(array: object) -> minidp.Tensor:
    """A tensor of the array's own NumPy dtype: float64 for Python floats, where ``to_tensor`` of a
    list would give Paddle's float32."""
    return minidp.to_tensor(np.asarray(array))


def fill_weights(layer: minidp.nn.Layer) -> minidp.nn.Layer:
    """``layer`` with deterministic weights, sin(0.7 k + i) / 2 for the k-th element of the i-th
    state-dict entry: the weights the recurrent and transformer layers' Paddle values were
    recorded with."""
    for i, value in enumerate(layer.state_dict().values()):
        n = math.prod(value.shape)
        value.set_value((np.sin(np.arange(n) * 0.7 + i).reshape(value.shape) * 0.5).astype(value.numpy().dtype))
    return layer


def distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values in [-2, 2) that are all different and well separated: no ties for max pooling, so
    finite differences never cross a kink."""
    n = math.prod(shape)
    return (rng.permutation(n) / n * 4 - 2).reshape(shape)


def bf16_values(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Random float32 values that bfloat16 holds exactly, so a bfloat16 run and a float32 run
    start from the same numbers."""
    return rng.standard_normal(shape).astype(BFLOAT16).astype(np.float32)


def numeric_grad(fn: Callable[[], minidp.Tensor], tensor: minidp.Tensor, eps: float = 1e-6) -> np.ndarray:
    """Central differences of sum(fn()) with respect to ``tensor``, element by element.

    Each element is perturbed in place through a multi-index, so the array the function reads is
    the one perturbed whatever its layout: ``reshape(-1)`` of a transposed or sliced view is a
    copy, and perturbing that copy gave a zero gradient."""
    data = tensor._data
    if not data.flags.writeable:
        raise ValueError("numeric_grad: the tensor's array is read-only; pass a tensor that owns writable data")
    grad = np.zeros(data.shape, dtype=data.dtype)
    for index in np.ndindex(*data.shape):
        saved = data[index]
        data[index] = saved + eps
        plus = float(fn().numpy().sum())
        data[index] = saved - eps
        minus = float(fn().numpy().sum())
        data[index] = saved
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def check_grad(
    fn: Callable[..., minidp.Tensor],
    *arrays: np.ndarray,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    wrt: Sequence[int] = None,
) -> None:
    """Assert that autograd's gradient of sum(fn(*tensors) * w) matches finite differences.

    A fixed random weighting ``w`` makes every output element matter with a distinct factor, so
    an op that mixes up elements cannot pass by symmetry.
    """
    tensors = [minidp.to_tensor(np.asarray(a, dtype=np.float64)) for a in arrays]
    wrt = range(len(tensors)) if wrt is None else wrt
    for i in wrt:
        tensors[i].stop_gradient = False
    out_shape = fn(*tensors).shape
    weights = minidp.to_tensor(np.random.default_rng(7).uniform(0.5, 1.5, out_shape))

    def weighted():
        return fn(*tensors) * weights

    weighted().sum().backward()
    for i in wrt:
        t = tensors[i]
        with minidp.no_grad():
            expected = numeric_grad(weighted, t)
        assert t.grad is not None, f"input {i} got no gradient"
        np.testing.assert_allclose(
            t.grad.numpy(),
            expected,
            rtol=rtol,
            atol=atol,
            err_msg=f"gradient of input {i} differs from finite differences",
        )
