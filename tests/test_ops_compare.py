"""Comparisons and logical ops (``minidp/ops/compare.py``): boolean results that carry no gradient,
non-zero read as true, and the inf, NaN and closeness tests."""

import numpy as np

import minidp


def test_comparisons_carry_no_gradient():
    x = minidp.to_tensor([1.0, 3.0], "float64", stop_gradient=False)
    mask = x > 2.0
    assert mask.stop_gradient and mask.numpy().tolist() == [False, True]
    assert (x == x).numpy().all()


def test_logical_ops_treat_non_zero_as_true():
    a = minidp.to_tensor([1, 2, 0])
    b = minidp.to_tensor([2, 0, 0])
    assert minidp.logical_and(a, b).numpy().tolist() == [True, False, False]
    assert minidp.logical_or(a, b).numpy().tolist() == [True, True, False]
    assert minidp.logical_xor(a, b).numpy().tolist() == [False, True, False]
    assert minidp.logical_not(a).numpy().tolist() == [False, False, True]


def test_comparison_helpers():
    x = minidp.to_tensor([1.0, np.inf, -np.inf, np.nan])
    assert minidp.isinf(x).numpy().tolist() == [False, True, True, False]
    assert minidp.isposinf(x).numpy().tolist() == [False, True, False, False]
    assert minidp.isneginf(x).numpy().tolist() == [False, False, True, False]
    assert minidp.isnan(x).numpy().tolist() == [False, False, False, True]
    assert minidp.isfinite(x).numpy().tolist() == [True, False, False, False]
    assert minidp.isreal(x).numpy().all()
    ints = minidp.to_tensor([1, 2])
    assert minidp.isfinite(ints).numpy().all() and not minidp.isnan(ints).numpy().any()
    assert minidp.equal_all(ints, minidp.to_tensor([1, 2])).item() is True
    assert minidp.equal_all(ints, minidp.to_tensor([1, 2, 3])).item() is False
    assert minidp.equal_all(ints, minidp.to_tensor([1, 2])).shape == []
    close = minidp.isclose(minidp.to_tensor([1.0, 1.1, np.nan]), minidp.to_tensor([1.0 + 1e-9, 1.0, np.nan]))
    assert close.numpy().tolist() == [True, False, False]
    assert minidp.isclose(minidp.to_tensor([np.nan]), minidp.to_tensor([np.nan]), equal_nan=True).item()
