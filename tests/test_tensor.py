"""Tensor (``minidp/core/tensor.py``) as Paddle scripts use it: read back with ``numpy()``,
the functions that minidp.ops also attaches as methods (``a.add_n``, ``cond.where``, ...: the
very same function objects), and Python's operators with Paddle's integer rules. ``to_tensor``
is specified in test_ops_creation.py, ``reduce_as`` in test_ops_reduction.py and
``shard_index`` in test_ops_indexing.py, beside the ops they belong to."""

import numpy as np
import pytest

import minidp
from minidp.framework import VarType


def test_numpy_accepts_paddles_positional_flag():
    np.testing.assert_array_equal(minidp.ones([2]).numpy(False), [1.0, 1.0])


def test_method_forms_of_functions():
    a, b = minidp.to_tensor([1.0, 2.0]), minidp.to_tensor([3.0, 4.0])
    np.testing.assert_allclose(a.add_n().numpy(), [1.0, 2.0])  # the method's self is add_n's ``inputs``
    np.testing.assert_allclose(a.true_divide(b).numpy(), [1 / 3, 0.5])
    np.testing.assert_allclose(a.softmax(0).numpy(), np.exp([1, 2]) / np.exp([1, 2]).sum(), rtol=1e-6)
    assert minidp.Tensor.stack([a, b]).shape == [2, 2] and minidp.Tensor.concat([a, b]).shape == [4]
    cond = minidp.to_tensor([True, False])
    np.testing.assert_allclose(cond.where(a, b).numpy(), [1.0, 4.0])
    counter = minidp.to_tensor([1.0])
    assert counter.increment(2.0) is counter and counter.item() == 3.0


METHOD_NAMES = [
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "expm1",
    "log2",
    "log10",
    "log1p",
    "rsqrt",
    "reciprocal",
    "erf",
    "erfinv",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "sign",
    "sgn",
    "logit",
    "deg2rad",
    "rad2deg",
    "stanh",
    "atan2",
    "floor_divide",
    "remainder",
    "mod",
    "floor_mod",
    "fmax",
    "fmin",
    "hypot",
    "logaddexp",
    "copysign",
    "heaviside",
    "lerp",
    "addmm",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and",
    "logical_or",
    "logical_xor",
    "equal_all",
    "isclose",
    "isinf",
    "isneginf",
    "isposinf",
    "isreal",
    "all",
    "any",
    "prod",
    "amax",
    "amin",
    "nansum",
    "nanmean",
    "count_nonzero",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "std",
    "var",
    "median",
    "nanmedian",
    "quantile",
    "add_",
    "exp_",
    "clip_",
    "zero_",
    "fill_",
    "uniform_",
    "normal_",
]


def test_type_is_paddles_dense_tensor_kind():
    x = minidp.to_tensor([1.0, 2.0])
    assert x.type is VarType.DENSE_TENSOR and str(x.type) == "VarType.DENSE_TENSOR"
    assert x.type.value == 7  # Paddle's number for it
    assert minidp.nn.Linear(2, 2).weight.type is VarType.DENSE_TENSOR


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


def test_repr_has_paddles_layout():
    """As Paddle 3.3.1 prints them (values in NumPy's number format, which Paddle's resembles)."""
    assert repr(minidp.to_tensor([[1.0, 2.0], [3.0, 4.0]])) == (
        "Tensor(shape=[2, 2], dtype=float32, place=Place(cpu), stop_gradient=True,\n"
        "       [[1., 2.],\n"
        "        [3., 4.]])"
    )
    assert repr(minidp.to_tensor(3)) == (
        "Tensor(shape=[], dtype=int64, place=Place(cpu), stop_gradient=True,\n       3)"
    )
    assert repr(minidp.nn.Linear(1, 1).bias) == (
        "Parameter containing:\nTensor(shape=[1], dtype=float32, place=Place(cpu), stop_gradient=False,\n       [0.])"
    )
