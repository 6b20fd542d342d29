"""``minidp.nn.utils`` (``minidp/nn/utils.py``): gradient clipping in place, parameters to one
vector and back, and weight normalisation."""

import numpy as np
import pytest

import minidp
import minidp.nn as nn


def test_clip_grad_norm_and_value_in_place():
    layer = nn.Linear(2, 2)
    (layer(minidp.ones([3, 2])) * 10).sum().backward()
    grads = [p.grad.numpy().copy() for p in layer.parameters()]
    total = np.sqrt(sum((g**2).sum() for g in grads))
    returned = nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
    np.testing.assert_allclose(returned.numpy(), total, rtol=1e-6)
    np.testing.assert_allclose(layer.weight.grad.numpy(), grads[0] / (total + 1e-6), rtol=1e-6)
    np.testing.assert_allclose(layer.weight.grad.numpy(), 0.40824828, rtol=1e-6)  # Paddle 3.3.1
    inf_norm = nn.utils.clip_grad_norm_(layer.weight, 0.1, norm_type=float("inf"))
    np.testing.assert_allclose(inf_norm.numpy(), 0.40824828, rtol=1e-6)
    nn.utils.clip_grad_value_(layer.parameters(), 0.05)
    np.testing.assert_allclose(layer.bias.grad.numpy(), [0.05, 0.05])
    with pytest.raises(ValueError, match="max_norm"):
        nn.utils.clip_grad_norm_(layer.parameters(), 0)


def test_parameters_to_vector_and_back():
    layer = nn.Linear(3, 2)
    vector = nn.utils.parameters_to_vector(layer.parameters())
    assert vector.shape == [8]
    np.testing.assert_array_equal(vector.numpy()[:6], layer.weight.numpy().reshape(-1))
    nn.utils.vector_to_parameters(minidp.arange(8, dtype="float32"), layer.parameters())
    np.testing.assert_array_equal(layer.bias.numpy(), [6, 7])
    with pytest.raises(ValueError, match="8 values"):
        nn.utils.vector_to_parameters(minidp.zeros([7]), layer.parameters())


def test_weight_norm_reparameterises_and_trains():
    layer = nn.Linear(3, 4).to(dtype="float64")
    original = layer.weight.numpy().copy()
    nn.utils.weight_norm(layer)
    assert list(layer.state_dict()) == ["bias", "weight_v", "weight_g"]  # as Paddle 3.3.1
    np.testing.assert_allclose(layer.weight_g.numpy(), np.linalg.norm(original, axis=1))
    np.testing.assert_allclose(layer.weight.numpy(), original)
    x = np.random.default_rng(0).normal(size=(2, 3))
    layer(minidp.to_tensor(x)).sum().backward()
    v = layer.weight_v.numpy()
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(layer.weight_g.grad.numpy(), (x.sum(0)[:, None] * v / norms).sum(1))
    layer.weight_g.set_value(layer.weight_g.numpy() * 2)
    np.testing.assert_allclose(layer(minidp.to_tensor(x)).numpy(), x @ (2 * original) + layer.bias.numpy())
    nn.utils.remove_weight_norm(layer)
    assert list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(layer.weight.numpy(), 2 * original)
    conv = nn.utils.weight_norm(nn.Conv2D(2, 3, 3), dim=None)
    assert conv.weight_g.shape == []
    with pytest.raises(ValueError, match="not weight-normalised"):
        nn.utils.remove_weight_norm(layer)
    with pytest.raises(ValueError, match="already"):
        nn.utils.weight_norm(conv)
    with pytest.raises(ValueError, match="no parameter"):
        nn.utils.weight_norm(nn.ReLU())
