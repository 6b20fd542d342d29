"""minidp's own erf (minidp/core/erf.py, used without SciPy) against math.erf, and GELU built on it."""

import math
import sys

import numpy as np
import pytest

import minidp
from gradcheck import check_grad
from minidp.core import backend, threads
from minidp.core.erf import erf


def grid() -> np.ndarray:
    """Every range and boundary: dense in [-7, 7], logarithmic from subnormals to 1e308."""
    magnitudes = np.geomspace(1e-310, 1e308, 4001)
    cuts = np.array([0.46875, 4.0, 6.0, 26.0])
    near_cuts = np.concatenate([np.nextafter(cuts, 0.0), cuts, np.nextafter(cuts, np.inf)])
    positive = np.concatenate([np.linspace(0.0, 7.0, 20001), magnitudes, near_cuts])
    return np.concatenate([positive, -positive])


def reference(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in x.tolist()])


def test_float64_is_within_4_ulp_of_math_erf():
    x = grid()
    got, want = erf(x), reference(x)
    assert got.dtype == np.float64
    normal = np.abs(want) >= np.finfo(np.float64).tiny
    assert np.max(np.abs(got - want)[normal] / np.spacing(np.abs(want[normal]))) <= 4
    # erf(x) ~ 2x/sqrt(pi) for subnormal x: as close as a subnormal result can be
    assert np.max(np.abs(got - want)[~normal]) <= 2 * np.finfo(np.float64).smallest_subnormal


def test_float32_is_math_erf_rounded_once():
    x = grid()
    x = x[np.abs(x) < 3e38].astype(np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, reference(x.astype(np.float64)).astype(np.float32))


def test_special_values_and_shapes():
    special = erf(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300]))
    np.testing.assert_array_equal(special[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(special[1]) and not np.signbit(special[0])
    assert np.isnan(special[4]) and special[5:].tolist() == [1.0, -1.0]
    assert erf(np.zeros((2, 0, 3))).shape == (2, 0, 3)
    assert erf(np.arange(6).reshape(2, 3)).dtype == np.float64
    assert backend.erf(np.float32(0.5)) == np.float32(math.erf(0.5))
    assert isinstance(backend.erf(np.float32(0.5)), np.float32)
    assert erf(np.array([0.5], np.float16)).dtype == np.float16
    assert backend.erf(np.array([0.5], np.float16)).dtype == np.float16  # SciPy's too, if installed


def test_several_blocks_and_threads_give_the_same_values(monkeypatch):
    x = np.random.default_rng(0).standard_normal(max(2 * threads.CACHE_BLOCK, threads.MIN_ELEMENTS) + 7) * 3
    monkeypatch.setattr(threads, "_configured", 1)
    one = erf(x)
    threads.set_num_threads(3)
    np.testing.assert_array_equal(erf(x), one)
    np.testing.assert_array_equal(one[:100], erf(x[:100]))


def test_gelu_needs_no_scipy(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    with pytest.raises(ImportError):
        import scipy.special  # noqa: F401
    x = np.random.default_rng(1).uniform(-5, 5, (3, 7))
    assert backend.erf(np.float64(0.25)) == erf(np.float64(0.25))
    out = minidp.gelu(minidp.to_tensor(x)).numpy()
    np.testing.assert_allclose(out, x * 0.5 * (1 + reference(x.ravel() / math.sqrt(2)).reshape(x.shape)), rtol=1e-15)
    check_grad(minidp.gelu, x)
