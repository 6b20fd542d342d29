"""The array-module switch (``minidp/core/backend.py``): the device it reports and refuses, and which
dtypes it counts as floating."""

import ml_dtypes
import numpy as np
import pytest

import minidp
from minidp.core.backend import is_floating


def test_backend_switch_reports_cpu_and_rejects_missing_gpu():
    assert minidp.get_device() == "cpu"
    if not minidp.is_compiled_with_cuda():
        with pytest.raises(ValueError, match="CUDA device"):
            minidp.set_device("gpu:0")
    with pytest.raises(ValueError, match="unknown place"):
        minidp.set_device("tpu")


def test_floating_types_are_told_apart_from_integers_and_other_void_types():
    assert all(is_floating(np.dtype(t)) for t in ["float16", "float32", "float64", ml_dtypes.bfloat16])
    assert not any(
        is_floating(np.dtype(t)) for t in ["int8", "uint8", "int64", "bool", "V2", "complex64", ml_dtypes.int4]
    )
