"""Initializers (``minidp/nn/initializer.py``): they fill parameters in place with Paddle's scales
and fans, under Paddle's current and older names, and the global initializer."""

import math

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from minidp.nn import initializer


# --- initializers -------------------------------------------------------------------------------
def test_initializers_fill_in_place_with_paddle_scales():
    init = nn.initializer
    minidp.seed(0)
    p = minidp.Parameter(np.zeros((200, 300), np.float32))
    array = p._data
    init.Constant(0.5)(p)
    assert p._data is array and (p.numpy() == 0.5).all()
    init.Normal(1.0, 2.0)(p)
    assert abs(p.numpy().mean() - 1.0) < 0.05 and abs(p.numpy().std() - 2.0) < 0.05
    init.Uniform(-0.1, 0.3)(p)
    assert p.numpy().min() >= -0.1 and p.numpy().max() < 0.3
    init.XavierNormal()(p)
    assert abs(p.numpy().std() - math.sqrt(2 / 500)) < 0.003
    init.KaimingNormal()(p)
    assert abs(p.numpy().std() - math.sqrt(2 / 200)) < 0.003
    init.KaimingUniform()(p)
    assert np.abs(p.numpy()).max() <= math.sqrt(6 / 200)
    init.TruncatedNormal(0.0, 1.0)(p)
    assert np.abs(p.numpy()).max() <= 2.0
    init.Assign(np.arange(6).reshape(2, 3))(q := minidp.Parameter(np.zeros((2, 3))))
    assert q.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert init.compute_fans([16, 8, 3, 3]) == (72, 144)
    with pytest.raises(ValueError, match="nonlinearity"):
        init.KaimingNormal(nonlinearity="swish")


@pytest.mark.parametrize(
    "kind, spread", [(initializer.XavierUniform, lambda v: np.abs(v).max()), (initializer.XavierNormal, np.std)]
)
def test_xavier_uses_given_fans_over_the_shape(kind, spread):
    minidp.seed(0)
    from_shape = minidp.nn.Parameter(np.zeros((400, 600), np.float32))
    given = minidp.nn.Parameter(np.zeros((400, 600), np.float32))
    kind()(from_shape)
    kind(fan_in=10.0, fan_out=15.0)(given)
    expected_ratio = np.sqrt(1000.0 / 25.0)
    assert spread(given.numpy()) / spread(from_shape.numpy()) == pytest.approx(expected_ratio, rel=0.02)
    assert given.dtype == np.float32


def test_orthogonal_dirac_bilinear_initializers_and_the_global_one():
    init = nn.initializer
    holder = nn.Layer()
    q = holder.create_parameter([3, 5], default_initializer=init.Orthogonal(gain=2.0)).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(3), atol=1e-5)
    tall = holder.create_parameter([6, 2, 2], default_initializer=init.Orthogonal()).numpy().reshape(6, 4)
    np.testing.assert_allclose(tall.T @ tall, np.eye(4), atol=1e-5)
    dirac = holder.create_parameter([4, 2, 3], default_initializer=init.Dirac(groups=2)).numpy()
    assert dirac.reshape(4, -1).tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]] * 2  # Paddle 3.3.1
    kernel = holder.create_parameter([2, 1, 4, 4], default_initializer=init.Bilinear()).numpy()[1, 0]
    np.testing.assert_allclose(
        kernel,
        [
            [0.0625, 0.28125, 0.375, 0.15625],
            [0.1875, 0.65625, 0.75, 0.21875],
            [0.1875, 0.46875, 0.375, 0.09375],
            [0.0625, 0.09375, 0.0, -0.03125],
        ],
    )
    init.set_global_initializer(init.Constant(0.5), init.Constant(-1.0))
    try:
        conv = nn.Conv2D(1, 2, 3)
        assert (conv.weight.numpy() == 0.5).all() and (conv.bias.numpy() == -1).all()
        own = nn.Linear(2, 2, weight_attr=nn.ParamAttr(initializer=init.Constant(3.0)))
        assert (own.weight.numpy() == 3).all()
    finally:
        init.set_global_initializer(None, None)
    assert not (nn.Linear(2, 2).weight.numpy() == 0.5).all()
    with pytest.raises(TypeError, match="weight_init"):
        init.set_global_initializer("zeros")


def test_older_initializer_names():
    init = nn.initializer
    holder = nn.Layer()

    def make(initializer, shape=(200, 300)):
        return holder.create_parameter(list(shape), default_initializer=initializer).numpy()

    assert (make(init.ConstantInitializer(0.25), (2, 2)) == 0.25).all()
    normal = make(init.NormalInitializer(loc=1.0, scale=0.5))
    assert abs(normal.mean() - 1.0) < 0.01 and abs(normal.std() - 0.5) < 0.01
    assert make(init.UniformInitializer(-0.1, 0.1)).max() <= 0.1
    assert np.abs(make(init.TruncatedNormalInitializer(0.0, 1.0, a=-0.5, b=0.5))).max() <= 0.5
    limit = np.sqrt(6 / 500)
    assert np.abs(make(init.XavierInitializer())).max() <= limit
    assert abs(make(init.XavierInitializer(uniform=False)).std() - np.sqrt(2 / 500)) < 0.002
    assert abs(make(init.MSRAInitializer(uniform=False)).std() - np.sqrt(2 / 200)) < 0.003
    np.testing.assert_array_equal(make(init.NumpyArrayInitializer(np.eye(2)), (2, 2)), np.eye(2))
    with pytest.raises(ValueError, match="diag_num"):
        init.UniformInitializer(diag_num=2)
