"""L1Decay and L2Decay: given to an optimizer as weight_decay or to one parameter by ParamAttr.

The expected updates are Paddle's rule written in NumPy (clip the gradient, add the
regularizer's term, then update); Paddle 3.3.1 gives the same numbers for each case here.
"""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from minidp.regularizer import L1Decay, L2Decay

W = np.array([[0.5, -1.0], [2.0, -0.25]], dtype=np.float32)
B = np.array([0.3, -0.4], dtype=np.float32)
X = np.array([[1.0, 2.0]], dtype=np.float32)
GRAD_W = np.repeat(X.T, 2, axis=1)  # d(sum(x @ W + b))/dW
GRAD_B = np.ones(2, dtype=np.float32)


def one_step(make_optimizer, weight_attr=None):
    """Weight and bias of a Linear after one step on sum(linear(X))."""
    linear = nn.Linear(2, 2, weight_attr=weight_attr)
    linear.weight.set_value(W)
    linear.bias.set_value(B)
    optimizer = make_optimizer(linear.parameters())
    linear(minidp.to_tensor(X)).sum().backward()
    optimizer.step()
    return linear.weight.numpy(), linear.bias.numpy()


def test_optimizer_weight_decay_takes_l1_and_l2_regularizers():
    w, b = one_step(lambda p: minidp.optimizer.SGD(0.1, parameters=p, weight_decay=L1Decay(0.5)))
    np.testing.assert_allclose(w, W - 0.1 * (GRAD_W + 0.5 * np.sign(W)), rtol=1e-6)
    np.testing.assert_allclose(b, B - 0.1 * (GRAD_B + 0.5 * np.sign(B)), rtol=1e-6)
    w, b = one_step(lambda p: minidp.optimizer.SGD(0.1, parameters=p, weight_decay=L2Decay(0.5)))
    np.testing.assert_allclose(w, W - 0.1 * (GRAD_W + 0.5 * W), rtol=1e-6)
    np.testing.assert_allclose(b, B - 0.1 * (GRAD_B + 0.5 * B), rtol=1e-6)


def test_param_attr_regularizer_replaces_the_optimizers_decay_for_that_parameter():
    attr = minidp.ParamAttr(regularizer=L1Decay(0.2))
    w, b = one_step(lambda p: minidp.optimizer.SGD(0.1, parameters=p, weight_decay=0.5), attr)
    np.testing.assert_allclose(w, W - 0.1 * (GRAD_W + 0.2 * np.sign(W)), rtol=1e-6)
    np.testing.assert_allclose(b, B - 0.1 * (GRAD_B + 0.5 * B), rtol=1e-6)


def test_param_attr_regularizer_adds_to_the_gradient_before_adamws_decoupled_decay():
    attr = minidp.ParamAttr(regularizer=L2Decay(0.2))
    w, _ = one_step(lambda p: minidp.optimizer.AdamW(0.1, parameters=p, weight_decay=0.5), attr)
    grad = GRAD_W + 0.2 * W
    m, v = 0.1 * grad, 0.001 * grad**2
    expected = W * (1 - 0.1 * 0.5) - 0.1 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    np.testing.assert_allclose(w, expected, rtol=1e-5)


def test_regularizer_acts_on_the_clipped_gradient():
    clip = nn.ClipGradByGlobalNorm(0.1)
    w, b = one_step(lambda p: minidp.optimizer.SGD(0.1, parameters=p, weight_decay=L2Decay(0.5), grad_clip=clip))
    scale = 0.1 / np.sqrt((GRAD_W**2).sum() + (GRAD_B**2).sum())
    np.testing.assert_allclose(w, W - 0.1 * (GRAD_W * scale + 0.5 * W), rtol=1e-5)
    np.testing.assert_allclose(b, B - 0.1 * (GRAD_B * scale + 0.5 * B), rtol=1e-5)


def test_bad_regularizers_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="non-negative"):
        L2Decay(-1.0)
    with pytest.raises(TypeError, match="non-negative number"):
        L1Decay("0.5")
    with pytest.raises(TypeError, match="decoupled decay coefficient"):
        minidp.optimizer.AdamW(parameters=nn.Linear(1, 1).parameters(), weight_decay=L2Decay(0.5))
    with pytest.raises(TypeError, match="L1Decay, an L2Decay or None"):
        minidp.optimizer.SGD(parameters=nn.Linear(1, 1).parameters(), weight_decay="0.5")
    assert minidp.regularizer.L2Decay is L2Decay and repr(L1Decay(0.25)) == "L1Decay(coeff=0.25)"


def test_a_numpy_coefficient_is_a_number_as_in_paddle():
    assert repr(L2Decay(np.float32(0.5))) == "L2Decay(coeff=0.5)" and repr(L1Decay(np.int64(2))) == "L1Decay(coeff=2.0)"


def test_the_base_class_has_no_penalty_and_says_which_to_use():
    with pytest.raises(TypeError, match="defines no penalty: use L1Decay or L2Decay"):
        minidp.regularizer.WeightDecayRegularizer(0.1)
