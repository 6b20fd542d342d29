"""minidp/dtypes.py: finfo and iinfo as Paddle 3.3.1 answers them, and the default dtype that
creation follows: after ``set_default_dtype('float64')`` layers built afterwards create their
parameters and buffers in float64 unless given a dtype; integer creations and NumPy arrays keep
their own dtype; integers that meet a Python float, or divide, compute in float32 under either
default."""

import numpy as np
import pytest

import minidp
from minidp import nn


def test_finfo_matches_paddle():
    f32 = minidp.finfo(minidp.float32)
    assert (f32.eps, f32.resolution, f32.bits, f32.dtype) == (np.finfo(np.float32).eps, 1e-6, 32, "float32")
    assert f32.max == float(np.finfo(np.float32).max) and f32.tiny == f32.smallest_normal
    bf16 = minidp.finfo("bfloat16")
    assert (bf16.max, bf16.eps, bf16.resolution, bf16.smallest_normal, bf16.bits) == (
        3.3895313892515355e38,
        0.0078125,
        0.01,
        1.1754943508222875e-38,
        16,
    )
    f16 = minidp.finfo(minidp.float16)
    assert (f16.min, f16.eps, f16.resolution, f16.smallest_normal) == (-65504.0, 0.0009765625, 0.001, 6.103515625e-05)
    with pytest.raises(TypeError, match="iinfo"):
        minidp.finfo(minidp.int32)


def test_iinfo_matches_paddle():
    u8 = minidp.iinfo(minidp.uint8)
    assert (u8.min, u8.max, u8.bits, u8.dtype) == (0, 255, 8, "uint8")
    i64 = minidp.iinfo("int64")
    assert (i64.min, i64.max) == (-(2**63), 2**63 - 1)
    with pytest.raises(TypeError, match="finfo"):
        minidp.iinfo(minidp.float32)


def test_set_default_dtype_drives_creation():
    assert minidp.get_default_dtype() == "float32"
    try:
        minidp.set_default_dtype("float64")
        assert minidp.get_default_dtype() == "float64"
        made = [
            minidp.zeros([1]),
            minidp.ones([1]),
            minidp.randn([1]),
            minidp.rand([1]),
            minidp.to_tensor(1.5),
            minidp.arange(0, 1, 0.5),
            minidp.linspace(0, 1, 3),
            minidp.full([1], 2.0),
            minidp.range(0, 2),
        ]
        assert all(t.dtype == np.float64 for t in made)
        assert minidp.to_tensor([1, 2]).dtype == np.int64
        minidp.set_default_dtype(minidp.float16)
        assert minidp.zeros([1]).dtype == np.float16
    finally:
        minidp.set_default_dtype("float32")
    assert minidp.zeros([1]).dtype == np.float32
    with pytest.raises(TypeError, match="one of"):
        minidp.set_default_dtype("int32")


@pytest.fixture
def default_float64():
    minidp.set_default_dtype("float64")
    try:
        yield
    finally:
        minidp.set_default_dtype("float32")


class TwoParameters(nn.Layer):
    def __init__(self):
        super().__init__()
        self.plain = self.create_parameter([2])
        self.single = self.create_parameter([2], dtype="float32")


def test_layers_built_after_the_change_create_parameters_and_buffers_in_it(default_float64):
    layers = [
        nn.Linear(2, 3),
        nn.Conv2D(1, 2, 3),
        nn.LayerNorm(3),
        nn.BatchNorm2D(2),
        nn.Embedding(4, 2),
        nn.GRU(2, 2),
        nn.MultiHeadAttention(4, 2),
        nn.PReLU(),
    ]
    for layer in layers:
        for name, tensor in list(layer.named_parameters()) + list(layer.named_buffers()):
            assert tensor.dtype == np.float64, (type(layer).__name__, name)
    own = TwoParameters()
    assert own.plain.dtype == np.float64 and own.single.dtype == np.float32
    out = nn.Linear(2, 3)(minidp.randn([4, 2]))
    assert out.dtype == np.float64


def test_layers_built_before_the_change_keep_their_dtype():
    layer = nn.Linear(2, 3)
    minidp.set_default_dtype("float64")
    try:
        assert layer.weight.dtype == np.float32 and nn.Linear(2, 3).weight.dtype == np.float64
    finally:
        minidp.set_default_dtype("float32")
    assert nn.Linear(2, 3).weight.dtype == np.float32


def test_creation_without_a_dtype_follows_the_default(default_float64):
    floating = [
        minidp.to_tensor(1.5),
        minidp.to_tensor([1.5, 2.0]),
        minidp.randn([2]),
        minidp.rand([2]),
        minidp.zeros([2]),
        minidp.ones([2]),
        minidp.full([2], 1.5),
        minidp.full([2], 1),
        minidp.empty([2]),
        minidp.uniform([2]),
        minidp.normal(shape=[2]),
        minidp.arange(0.0, 3.0),
        minidp.linspace(0, 1, 3),
        minidp.eye(2),
        minidp.standard_normal([2]),
        minidp.logspace(0, 1, 3),
    ]
    assert [t.dtype for t in floating] == [np.float64] * len(floating)
    kept = {
        "int": minidp.to_tensor(1),
        "arange": minidp.arange(3),
        "randint": minidp.randint(0, 3, [2]),
        "randperm": minidp.randperm(3),
        "float32 array": minidp.to_tensor(np.ones(2, np.float32)),
        "full_like int": minidp.full_like(minidp.to_tensor([1, 2]), 1.5),
    }
    assert {k: str(t.dtype) for k, t in kept.items()} == {
        "int": "int64",
        "arange": "int64",
        "randint": "int64",
        "randperm": "int64",
        "float32 array": "float32",
        "full_like int": "int64",
    }
    assert minidp.get_default_dtype() == "float64"


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_integers_meeting_floats_compute_in_float32_whatever_the_default(default):
    # Paddle 3.3.1 gives float32 for all of these under either default dtype
    minidp.set_default_dtype(default)
    try:
        i, b = minidp.to_tensor([1, 2]), minidp.to_tensor([True, False])
        results = {
            "i * 1.5": i * 1.5,
            "int32 * 1.5": i.astype("int32") * 1.5,
            "b + 1.5": b + 1.5,
            "i / 2": i / 2,
            "i / i": i / i,
            "i ** 0.5": i**0.5,
            "1.5 - i": 1.5 - i,
            "1.5 / i": 1.5 / i,
            "i // 1.5": i // 1.5,
            "i % 1.5": i % 1.5,
            "exp(i)": minidp.exp(i),
            "sqrt(i)": minidp.sqrt(i),
            "median(i)": minidp.median(i),
        }
        assert {k: str(t.dtype) for k, t in results.items()} == {k: "float32" for k in results}
        kept = {
            "i * 2": i * 2,
            "b * 2": b * 2,
            "f64 * 1.5": minidp.to_tensor(np.ones(2)) * 1.5,
            "f16 * 1.5": minidp.ones([2], "float16") * 1.5,
        }
        assert {k: str(t.dtype) for k, t in kept.items()} == {
            "i * 2": "int64",
            "b * 2": "int64",
            "f64 * 1.5": "float64",
            "f16 * 1.5": "float16",
        }
        np.testing.assert_allclose((i / 2).numpy(), [0.5, 1.0])
    finally:
        minidp.set_default_dtype("float32")
