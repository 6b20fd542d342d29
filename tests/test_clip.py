"""Gradient clipping strategies (``minidp/nn/clip.py``): ClipGradByValue and ClipGradByNorm
against Paddle."""

import numpy as np
import pytest

import minidp
import minidp.nn as nn


def test_clip_by_value_and_by_norm_match_paddle():
    param = nn.Linear(3, 1).bias
    grad = minidp.to_tensor([0.3, -2.0, 1.0])
    by_norm = nn.ClipGradByNorm(1.0)([(param, grad)])[0][1].numpy()
    np.testing.assert_allclose(by_norm, [0.13297267, -0.88648444, 0.44324222], rtol=1e-6)  # Paddle 3.3.1
    np.testing.assert_allclose(nn.ClipGradByValue(0.5)([(param, grad)])[0][1].numpy(), [0.3, -0.5, 0.5])
    np.testing.assert_allclose(nn.ClipGradByValue(0.5, -0.1)([(param, grad)])[0][1].numpy(), [0.3, -0.1, 0.5])
    small = minidp.to_tensor([0.1, 0.2, 0.2])
    assert nn.ClipGradByNorm(1.0)([(param, small)])[0][1].numpy().tolist() == small.numpy().tolist()
    layer = nn.Linear(2, 1)
    opt = minidp.optimizer.SGD(learning_rate=1.0, parameters=layer.parameters(), grad_clip=nn.ClipGradByValue(0.01))
    before = layer.bias.numpy().copy()
    (layer(minidp.ones([4, 2])) * 100).sum().backward()
    opt.step()
    np.testing.assert_allclose(layer.bias.numpy(), before - 0.01, rtol=1e-6)
    with pytest.raises(ValueError, match="min <= max"):
        nn.ClipGradByValue(0.1, 0.5)
    with pytest.raises(ValueError, match="clip_norm"):
        nn.ClipGradByNorm(-1)
