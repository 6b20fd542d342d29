"""minidp/dtypes.py: finfo and iinfo as Paddle 3.3.1 answers them, and the default dtype that
creation follows."""
import numpy as np
import pytest

import minidp


def test_finfo_matches_paddle():
    f32 = minidp.finfo(minidp.float32)
    assert (f32.eps, f32.resolution, f32.bits, f32.dtype) == (np.finfo(np.float32).eps, 1e-6, 32, "float32")
    assert f32.max == float(np.finfo(np.float32).max) and f32.tiny == f32.smallest_normal
    bf16 = minidp.finfo("bfloat16")
    assert (bf16.max, bf16.eps, bf16.resolution, bf16.smallest_normal, bf16.bits) == (
        3.3895313892515355e+38, 0.0078125, 0.01, 1.1754943508222875e-38, 16)
    f16 = minidp.finfo(minidp.float16)
    assert (f16.min, f16.eps, f16.resolution, f16.smallest_normal) == (-65504.0, 0.0009765625, 0.001,
                                                                        6.103515625e-05)
    with pytest.raises(TypeError, match="iinfo"):
        minidp.finfo(minidp.int32)


def test_iinfo_matches_paddle():
    u8 = minidp.iinfo(minidp.uint8)
    assert (u8.min, u8.max, u8.bits, u8.dtype) == (0, 255, 8, "uint8")
    i64 = minidp.iinfo("int64")
    assert (i64.min, i64.max) == (-2 ** 63, 2 ** 63 - 1)
    with pytest.raises(TypeError, match="finfo"):
        minidp.iinfo(minidp.float32)


def test_set_default_dtype_drives_creation():
    assert minidp.get_default_dtype() == "float32"
    try:
        minidp.set_default_dtype("float64")
        assert minidp.get_default_dtype() == "float64"
        made = [minidp.zeros([1]), minidp.ones([1]), minidp.randn([1]), minidp.rand([1]), minidp.to_tensor(1.5),
                minidp.arange(0, 1, 0.5), minidp.linspace(0, 1, 3), minidp.full([1], 2.0), minidp.range(0, 2)]
        assert all(t.dtype == np.float64 for t in made)
        assert minidp.to_tensor([1, 2]).dtype == np.int64
        minidp.set_default_dtype(minidp.float16)
        assert minidp.zeros([1]).dtype == np.float16
    finally:
        minidp.set_default_dtype("float32")
    assert minidp.zeros([1]).dtype == np.float32
    with pytest.raises(TypeError, match="one of"):
        minidp.set_default_dtype("int32")
