"""Activations (``nn/functional/activation.py``) and their layers (``nn/layers/activation.py``):
values against NumPy formulas, float64 gradients against finite differences, float32 gradients
staying float32. One line per op."""

import math

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from gradcheck import check_grad

rng = np.random.default_rng(0)


def sample(*shape):
    """Values in (-4, 4) kept away from every kink the activations below have."""
    v = rng.uniform(-4.0, 4.0, shape)
    kinks = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0])
    near = np.abs(v[..., None] - kinks).min(axis=-1) < 0.05
    return np.where(near, v + 0.1, v)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def softplus(v):
    return np.log1p(np.exp(v))


SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772
SLOPES = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])

ACTIVATIONS = [  # function, NumPy reference
    (F.relu6, lambda v: np.clip(v, 0, 6)),
    (F.leaky_relu, lambda v: np.where(v > 0, v, 0.01 * v)),
    (lambda x: F.leaky_relu(x, 0.2), lambda v: np.where(v > 0, v, 0.2 * v)),
    (F.elu, lambda v: np.where(v > 0, v, np.expm1(v))),
    (lambda x: F.elu(x, 0.5), lambda v: np.where(v > 0, v, 0.5 * np.expm1(v))),
    (F.selu, lambda v: SELU_SCALE * np.where(v > 0, v, SELU_ALPHA * np.expm1(v))),
    (lambda x: F.celu(x, 2.0), lambda v: np.where(v > 0, v, 2.0 * np.expm1(v / 2.0))),
    (F.silu, lambda v: v * sigmoid(v)),
    (F.swish, lambda v: v * sigmoid(v)),
    (F.mish, lambda v: v * np.tanh(softplus(v))),
    (F.softplus, softplus),
    (lambda x: F.softplus(x, beta=2, threshold=3), lambda v: np.where(2 * v > 3, v, softplus(2 * v) / 2)),
    (F.softsign, lambda v: v / (1 + np.abs(v))),
    (F.softshrink, lambda v: np.where(v > 0.5, v - 0.5, np.where(v < -0.5, v + 0.5, 0))),
    (F.hardshrink, lambda v: np.where(np.abs(v) > 0.5, v, 0)),
    (F.tanhshrink, lambda v: v - np.tanh(v)),
    (F.hardsigmoid, lambda v: np.clip(v * 0.1666667 + 0.5, 0, 1)),
    (F.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
    (F.hardtanh, lambda v: np.clip(v, -1, 1)),
    (lambda x: F.hardtanh(x, -0.5, 3.0), lambda v: np.clip(v, -0.5, 3.0)),
    (F.log_sigmoid, lambda v: np.log(sigmoid(v))),
    (F.thresholded_relu, lambda v: np.where(v > 1.0, v, 0.0)),
    (lambda x: F.thresholded_relu(x, 0.5, -1.0), lambda v: np.where(v > 0.5, v, -1.0)),
    (lambda x: F.rrelu(x, 0.1, 0.3, training=False), lambda v: np.where(v > 0, v, 0.2 * v)),
    (lambda x: F.prelu(x, minidp.to_tensor([0.25], x.dtype)), lambda v: np.where(v > 0, v, 0.25 * v)),
    (lambda x: F.prelu(x, minidp.to_tensor(SLOPES, x.dtype)), lambda v: np.where(v > 0, v, SLOPES[:, None] * v)),
    (
        lambda x: F.prelu(x, minidp.to_tensor(SLOPES[:4], x.dtype), data_format="NLC"),
        lambda v: np.where(v > 0, v, SLOPES[:4] * v),
    ),
    (lambda x: F.glu(x, axis=1), lambda v: v[:, :3] * sigmoid(v[:, 3:])),
    (lambda x: F.maxout(x, groups=3, axis=1), lambda v: v.reshape(2, 2, 3, 4).max(axis=2)),
    (F.log_softmax, lambda v: v - np.log(np.exp(v).sum(-1, keepdims=True))),
]


@pytest.mark.parametrize("function, reference", ACTIVATIONS)
def test_activation_values_and_gradients(function, reference):
    values = sample(2, 6, 4)
    np.testing.assert_allclose(function(minidp.to_tensor(values)).numpy(), reference(values), rtol=1e-10, atol=1e-12)
    check_grad(function, values)


@pytest.mark.parametrize("function", [f for f, _ in ACTIVATIONS])
def test_float32_inputs_send_float32_gradients(function):
    x = minidp.to_tensor(sample(2, 6, 4).astype(np.float32), stop_gradient=False)
    middle = x * 1.0
    seen = []
    middle.register_hook(lambda g: seen.append(g.dtype))
    out = function(middle)
    assert out.dtype == np.float32
    out.sum().backward()
    assert seen == [np.float32]


def test_rrelu_draws_slopes_between_lower_and_upper_while_training():
    x = minidp.to_tensor(-np.ones(2000))
    slopes = -F.rrelu(x, 0.1, 0.3).numpy()
    assert 0.1 <= slopes.min() and slopes.max() < 0.3 and slopes.std() > 0.03


def test_gumbel_softmax_samples_sum_to_one_and_hard_is_one_hot_with_soft_gradient():
    minidp.seed(0)
    logits = minidp.to_tensor(rng.uniform(-1, 1, (4, 5)), stop_gradient=False)
    soft = F.gumbel_softmax(logits, temperature=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), np.ones(4))
    hard = F.gumbel_softmax(logits, hard=True)
    assert sorted(np.unique(hard.numpy()).tolist()) == [0.0, 1.0]
    np.testing.assert_array_equal(hard.numpy().sum(-1), np.ones(4))
    (hard * minidp.to_tensor(rng.uniform(size=(4, 5)))).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="even length"):
        F.glu(minidp.ones([2, 3]))
    with pytest.raises(ValueError, match="groups"):
        F.maxout(minidp.ones([1, 5, 2]), groups=2)
    with pytest.raises(ValueError, match="slopes"):
        F.prelu(minidp.ones([2, 3]), minidp.ones([4]))
    with pytest.raises(ValueError, match="lower"):
        F.rrelu(minidp.ones([2]), 0.5, 0.1)


LAYERS = [  # layer, equivalent function call
    (minidp.nn.ReLU6(), F.relu6),
    (minidp.nn.LeakyReLU(0.2), lambda x: F.leaky_relu(x, 0.2)),
    (minidp.nn.ELU(0.5), lambda x: F.elu(x, 0.5)),
    (minidp.nn.SELU(), F.selu),
    (minidp.nn.CELU(2.0), lambda x: F.celu(x, 2.0)),
    (minidp.nn.Silu(), F.silu),
    (minidp.nn.Swish(), F.swish),
    (minidp.nn.Mish(), F.mish),
    (minidp.nn.Softplus(2, 3), lambda x: F.softplus(x, 2, 3)),
    (minidp.nn.Softsign(), F.softsign),
    (minidp.nn.Softshrink(0.3), lambda x: F.softshrink(x, 0.3)),
    (minidp.nn.Hardshrink(0.3), lambda x: F.hardshrink(x, 0.3)),
    (minidp.nn.Tanhshrink(), F.tanhshrink),
    (minidp.nn.Hardsigmoid(), F.hardsigmoid),
    (minidp.nn.Hardswish(), F.hardswish),
    (minidp.nn.Hardtanh(-2.0, 2.0), lambda x: F.hardtanh(x, -2.0, 2.0)),
    (minidp.nn.LogSigmoid(), F.log_sigmoid),
    (minidp.nn.ThresholdedReLU(0.5, 0.1), lambda x: F.thresholded_relu(x, 0.5, 0.1)),
    (minidp.nn.GLU(axis=1), lambda x: F.glu(x, 1)),
    (minidp.nn.Maxout(2, axis=2), lambda x: F.maxout(x, 2, 2)),
    (minidp.nn.LogSoftmax(1), lambda x: F.log_softmax(x, 1)),
]


@pytest.mark.parametrize("layer, function", LAYERS)
def test_layers_apply_their_function(layer, function):
    x = minidp.to_tensor(sample(2, 4, 6))
    np.testing.assert_array_equal(layer(x).numpy(), function(x).numpy())


def test_prelu_layer_learns_its_slopes_and_rrelu_layer_is_deterministic_in_eval():
    layer = minidp.nn.PReLU(num_parameters=3, init=0.1)
    assert [n for n, _ in layer.named_parameters()] == ["_weight"]
    assert layer._weight.shape == [3]
    x = minidp.to_tensor(-np.ones((2, 3, 4), np.float32))
    layer(x).sum().backward()
    np.testing.assert_allclose(layer._weight.grad.numpy(), [-8.0, -8.0, -8.0])
    rrelu = minidp.nn.RReLU(0.1, 0.3)
    rrelu.eval()
    np.testing.assert_allclose(rrelu(x).numpy(), -0.2 * np.ones((2, 3, 4)), rtol=1e-6)


def test_softmax2d_normalises_over_channels():
    x = minidp.to_tensor(sample(2, 3, 4, 5))
    out = minidp.nn.Softmax2D()(x).numpy()
    np.testing.assert_allclose(out.sum(axis=1), np.ones((2, 4, 5)))
    with pytest.raises(ValueError, match="3-D or 4-D"):
        minidp.nn.Softmax2D()(minidp.ones([2, 3]))


def test_gelu_accepts_paddles_string_modes():
    x = minidp.to_tensor(sample(3, 4))
    np.testing.assert_array_equal(F.gelu(x, approximate="none").numpy(), F.gelu(x).numpy())
    np.testing.assert_array_equal(F.gelu(x, approximate="tanh").numpy(), F.gelu(x, approximate=True).numpy())
    assert not np.array_equal(F.gelu(x, approximate="tanh").numpy(), F.gelu(x).numpy())
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="fast")


def test_gelu_of_a_0d_tensor():
    """Arithmetic on a 0-d array gives a NumPy scalar; the error function must take it as NumPy's
    (it was sent to CuPy, and a CPU-only install failed importing cupyx)."""
    x = minidp.to_tensor(0.5, dtype="float64", stop_gradient=False)
    y = F.gelu(x)
    y.backward()
    assert y.shape == [] and y.item() == pytest.approx(0.5 * 0.5 * (1 + math.erf(0.5 / math.sqrt(2))))
    assert x.grad.item() == pytest.approx(0.8674951, rel=1e-6)
