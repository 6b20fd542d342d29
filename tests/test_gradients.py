"""``minidp.grad`` (Paddle's ``paddle.grad``, ``minidp/autograd/gradients.py``): gradients returned,
not accumulated."""

from __future__ import annotations

import numpy as np
import pytest

import minidp
from gradcheck import numeric_grad


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x = minidp.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    (g,) = minidp.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])
    assert g.stop_gradient and x.grad is None


def test_grad_matches_finite_differences():
    rng = np.random.default_rng(0)
    a = minidp.to_tensor(rng.normal(size=(3, 4)), stop_gradient=False)
    b = minidp.to_tensor(rng.normal(size=(4, 2)), stop_gradient=False)

    def f():
        return minidp.tanh(minidp.matmul(a, b)).sum()

    ga, gb = minidp.grad(f(), [a, b])
    with minidp.no_grad():
        np.testing.assert_allclose(ga.numpy(), numeric_grad(f, a), rtol=1e-6)
        np.testing.assert_allclose(gb.numpy(), numeric_grad(f, b), rtol=1e-6)


def test_grad_of_several_outputs_with_grad_outputs_matches_paddle():
    # paddle.grad([c, b], [a, b], grad_outputs=[ones, None]) gave [10, 18, 26] and [5, 9, 13]
    a = minidp.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    b = a * 2
    c = b * b
    ga, gb = minidp.grad([c, b], [a, b], grad_outputs=[minidp.ones([3]), None])
    np.testing.assert_allclose(ga.numpy(), [10.0, 18.0, 26.0])
    np.testing.assert_allclose(gb.numpy(), [5.0, 9.0, 13.0])


def test_grad_outputs_weight_the_outputs():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    (g,) = minidp.grad(x * 3, [x], grad_outputs=minidp.to_tensor([0.5, -1.0]))
    np.testing.assert_allclose(g.numpy(), [1.5, -3.0])
    with pytest.raises(ValueError, match="shape"):
        minidp.grad(x * 3, [x], grad_outputs=minidp.ones([3]))
    with pytest.raises(ValueError, match="one each"):
        minidp.grad(x * 3, [x], grad_outputs=[minidp.ones([2]), minidp.ones([2])])


def test_unused_input_raises_unless_allowed():
    a = minidp.to_tensor([1.0], stop_gradient=False)
    b = minidp.to_tensor([1.0], stop_gradient=False)
    c = a * 2
    with pytest.raises(ValueError, match="allow_unused=True"):
        minidp.grad([c], [a, b], retain_graph=True)
    ga, gb = minidp.grad([c], [a, b], allow_unused=True)
    np.testing.assert_allclose(ga.numpy(), [2.0])
    assert gb is None


def test_retain_graph_allows_a_second_pass():
    x = minidp.to_tensor([2.0], stop_gradient=False)
    y = x * x
    first = minidp.grad(y, x, retain_graph=True)[0]
    second = minidp.grad(y, x)[0]
    np.testing.assert_allclose(first.numpy(), second.numpy())
    with pytest.raises(RuntimeError, match="retain_graph"):
        minidp.grad(y, x)


def test_grad_then_backward_accumulates_only_the_backward():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    y = (x * x).sum()
    minidp.grad(y, x, retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_no_grad_vars_block_their_path():
    x = minidp.to_tensor([3.0], stop_gradient=False)
    h = x * 2
    y = h * x
    (g,) = minidp.grad(y, x, no_grad_vars=[h])
    np.testing.assert_allclose(g.numpy(), [6.0])  # only the direct path: d(h*x)/dx with h held = h
    assert h.stop_gradient is False


def test_create_graph_is_refused_with_a_clear_message():
    x = minidp.to_tensor([1.0], stop_gradient=False)
    with pytest.raises(ValueError, match="create_graph=True .* not supported"):
        minidp.grad(x * x, x, create_graph=True)
    with pytest.raises(TypeError, match="Tensors"):
        minidp.grad(x * x, [1.0])
