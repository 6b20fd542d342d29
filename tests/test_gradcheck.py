"""The finite-difference helpers in ``tests/gradcheck.py``: they must perturb the array the function
reads, whatever its memory layout, or every gradient check on a view passes or fails for nothing."""

from __future__ import annotations

import numpy as np
import pytest

import minidp
from gradcheck import check_grad, numeric_grad


def test_numeric_grad_of_a_transposed_view_perturbs_the_view():
    base = np.arange(1.0, 7.0).reshape(2, 3)
    x = minidp.Tensor(base.T)
    scale = minidp.Tensor(np.arange(3.0, 9.0).reshape(3, 2))
    assert not x._data.flags.c_contiguous
    grad = numeric_grad(lambda: x * x * scale, x)
    np.testing.assert_allclose(grad, 2 * base.T * scale.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), base.T)


def test_numeric_grad_of_a_strided_slice_perturbs_only_the_slice():
    base = np.arange(1.0, 13.0).reshape(3, 4)
    x = minidp.Tensor(base[::2, 1::2])
    grad = numeric_grad(lambda: x * x, x)
    np.testing.assert_allclose(grad, 2 * base[::2, 1::2], rtol=1e-6)
    np.testing.assert_array_equal(base, np.arange(1.0, 13.0).reshape(3, 4))


def test_check_grad_accepts_a_transposed_input():
    rng = np.random.default_rng(0)
    check_grad(lambda a, b: minidp.matmul(a, b), rng.normal(size=(4, 3)).T, rng.normal(size=(4, 2)))


def test_check_grad_catches_a_wrong_gradient_on_a_transposed_input():
    class Wrong(minidp.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    with pytest.raises(AssertionError, match="differs from finite differences"):
        check_grad(Wrong.apply, np.ones((3, 2)).T)


def test_numeric_grad_refuses_a_read_only_array():
    x = minidp.Tensor(np.broadcast_to(np.ones(3), (2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        numeric_grad(lambda: x * 2, x)
