"""Forward values of ops that have no gradient, and tie rules of those that do."""
import numpy as np
import pytest

import minidp
from minidp.nn import initializer


@pytest.mark.parametrize("op, reference", [(minidp.argmax, np.argmax), (minidp.argmin, np.argmin)])
def test_arg_extremes_follow_numpy_with_axis_and_keepdim(op, reference):
    data = np.random.default_rng(0).standard_normal((3, 4, 5))
    x = minidp.to_tensor(data)
    assert op(x).item() == reference(data)
    assert op(x).dtype == np.int64
    np.testing.assert_array_equal(op(x, axis=1).numpy(), reference(data, axis=1))
    kept = op(x, axis=2, keepdim=True)
    assert kept.shape == [3, 4, 1]
    np.testing.assert_array_equal(kept.numpy()[..., 0], reference(data, axis=2))
    assert op(x, axis=0, dtype="int32").dtype == np.int32


@pytest.mark.parametrize("op", [minidp.maximum, minidp.minimum])
def test_ties_split_the_gradient_as_paddle_does_and_nan_propagates(op):
    x = minidp.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = minidp.to_tensor([1.0, 0.0, 5.0], stop_gradient=False)
    op(x, y).sum().backward()
    chosen_x = [0.5, 1.0, 0.0] if op is minidp.maximum else [0.5, 0.0, 1.0]
    np.testing.assert_array_equal(x.grad.numpy(), chosen_x)
    np.testing.assert_array_equal(y.grad.numpy(), 1.0 - np.array(chosen_x))
    assert np.isnan(op(minidp.to_tensor([np.nan]), minidp.to_tensor([1.0])).item())


@pytest.mark.parametrize("kind, spread", [(initializer.XavierUniform, lambda v: np.abs(v).max()),
                                          (initializer.XavierNormal, np.std)])
def test_xavier_uses_given_fans_over_the_shape(kind, spread):
    minidp.seed(0)
    from_shape = minidp.nn.Parameter(np.zeros((400, 600), np.float32))
    given = minidp.nn.Parameter(np.zeros((400, 600), np.float32))
    kind()(from_shape)
    kind(fan_in=10.0, fan_out=15.0)(given)
    expected_ratio = np.sqrt(1000.0 / 25.0)
    assert spread(given.numpy()) / spread(from_shape.numpy()) == pytest.approx(expected_ratio, rel=0.02)
    assert given.dtype == np.float32


METHOD_NAMES = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1",
                "log2", "log10", "log1p", "rsqrt", "reciprocal", "erf", "erfinv", "floor", "ceil", "round", "trunc",
                "frac", "sign", "sgn", "logit", "deg2rad", "rad2deg", "stanh", "atan2", "floor_divide", "remainder",
                "mod", "floor_mod", "fmax", "fmin", "hypot", "logaddexp", "copysign", "heaviside", "lerp", "addmm",
                "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "equal_all", "isclose", "isinf",
                "isneginf", "isposinf", "isreal", "all", "any", "prod", "amax", "amin", "nansum", "nanmean",
                "count_nonzero", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "std", "var", "median",
                "nanmedian", "quantile", "add_", "exp_", "clip_", "zero_", "fill_", "uniform_", "normal_"]


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_tensor_methods_are_the_functions(name):
    assert getattr(minidp.Tensor, name) is getattr(minidp, name)


def test_operators_follow_paddle():
    a = minidp.to_tensor([7, -7, 12])
    b = minidp.to_tensor([2, 2, 10])
    assert (a % b).numpy().tolist() == [1, 1, 2] and (a // b).numpy().tolist() == [3, -4, 1]
    assert (7 % b).numpy().tolist() == [1, 1, 7] and (7 // b).numpy().tolist() == [3, 3, 0]
    assert (a & b).numpy().tolist() == [2, 0, 8] and (a | b).numpy().tolist() == [7, -5, 14]
    assert (a ^ b).numpy().tolist() == [5, -5, 6] and (~b).numpy().tolist() == [-3, -3, -11]
    assert (b << 1).numpy().tolist() == [4, 4, 20] and (a >> 1).numpy().tolist() == [3, -4, 6]
    flags = minidp.to_tensor([True, False])
    assert (~flags).numpy().tolist() == [False, True]
