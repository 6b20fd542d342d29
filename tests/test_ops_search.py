"""Search and sort ops: values against NumPy, gradients against finite differences, bad input."""

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(3)


def distinct(*shape):
    """Values without ties, so sorting is unambiguous and finite differences keep the order."""
    return rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.37 - 1.0


T = minidp.to_tensor

GRAD_CASES = [
    ("topk_last", lambda x: minidp.topk(x, 2)[0], (3, 5)),
    ("topk_axis0_smallest", lambda x: minidp.topk(x, 2, axis=0, largest=False)[0], (4, 3)),
    ("sort", lambda x: minidp.sort(x, axis=0), (4, 3)),
    ("sort_descending", lambda x: minidp.sort(x, descending=True), (2, 5)),
    ("kthvalue", lambda x: minidp.kthvalue(x, 2, axis=1)[0], (3, 4)),
    ("kthvalue_keepdim", lambda x: minidp.kthvalue(x, 3, keepdim=True)[0], (2, 5)),
    ("mode", lambda x: minidp.mode(x)[0], (3, 4)),
    ("masked_select", lambda x: minidp.masked_select(x, T(np.arange(12).reshape(3, 4) % 3 == 0)), (3, 4)),
    ("masked_select_broadcast", lambda x: minidp.masked_select(x, T(np.array([True, False, True, True]))), (3, 4)),
    ("tensor_method_topk", lambda x: x.topk(1)[0], (2, 3)),
    ("msort", minidp.msort, (4, 2)),
]


@pytest.mark.parametrize("name,fn,shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, shape):
    check_grad(fn, distinct(*shape))


def test_topk_and_sort_values():
    a = rng.normal(size=(4, 6))
    values, indices = minidp.topk(T(a), 3)
    expected = np.argsort(-a, axis=-1, kind="stable")[:, :3]
    np.testing.assert_array_equal(indices.numpy(), expected)
    np.testing.assert_allclose(values.numpy(), np.take_along_axis(a, expected, -1))
    assert indices.dtype == np.int64 and indices.stop_gradient
    np.testing.assert_allclose(minidp.sort(T(a), axis=0).numpy(), np.sort(a, axis=0))
    np.testing.assert_array_equal(minidp.argsort(T(a), descending=True).numpy(), np.argsort(-a, kind="stable"))


def test_ties_keep_first_occurrence():
    x = T([0.0, 5.0, 5.0, 1.0])
    np.testing.assert_array_equal(minidp.argsort(x, descending=True).numpy(), [1, 2, 3, 0])
    np.testing.assert_array_equal(minidp.topk(x, 2)[1].numpy(), [1, 2])


def test_kthvalue_and_mode_values():
    a = rng.normal(size=(3, 5))
    values, index = minidp.kthvalue(T(a), 2)
    np.testing.assert_allclose(values.numpy(), np.sort(a, -1)[:, 1])
    np.testing.assert_array_equal(index.numpy(), np.argsort(a, -1)[:, 1])
    # the smallest of the most frequent values, at its last occurrence (Paddle's rule)
    value, index = minidp.mode(T([[1.0, 2.0, 2.0, 1.0], [3.0, 3.0, 1.0, 1.0], [4.0, 7.0, 7.0, 0.0]]))
    np.testing.assert_array_equal(value.numpy(), [1.0, 1.0, 7.0])
    np.testing.assert_array_equal(index.numpy(), [3, 3, 2])
    value, index = minidp.mode(T([[1.0, 2.0], [2.0, 2.0]]), axis=0, keepdim=True)
    assert value.shape == [1, 2] and index.shape == [1, 2]


def test_nonzero_and_masked_select():
    a = np.array([[3.0, 0.0, 2.0], [0.0, 5.0, 5.0]])
    np.testing.assert_array_equal(minidp.nonzero(T(a)).numpy(), np.argwhere(a))
    rows, cols = minidp.nonzero(T(a), as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), np.nonzero(a)[0])
    np.testing.assert_array_equal(cols.numpy(), np.nonzero(a)[1])
    assert rows.dtype == np.int64
    np.testing.assert_array_equal(minidp.masked_select(T(a), T(a > 1)).numpy(), a[a > 1])


def test_searchsorted_and_bucketize():
    seq = np.array([1.0, 3.0, 5.0, 7.0])
    vals = np.array([0.0, 3.0, 6.0, 9.0])
    np.testing.assert_array_equal(minidp.searchsorted(T(seq), T(vals)).numpy(), np.searchsorted(seq, vals))
    right = minidp.searchsorted(T(seq), T(vals), right=True, out_int32=True)
    np.testing.assert_array_equal(right.numpy(), np.searchsorted(seq, vals, side="right"))
    assert right.dtype == np.int32
    rows = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])
    queries = np.array([[2.5, 0.0], [25.0, 35.0]])
    np.testing.assert_array_equal(minidp.searchsorted(T(rows), T(queries)).numpy(), [[2, 0], [2, 3]])
    np.testing.assert_array_equal(minidp.bucketize(T(vals), T(seq)).numpy(), np.searchsorted(seq, vals))


def test_unique():
    a = np.array([3, 1, 3, 2])
    assert isinstance(minidp.unique(T(a)), minidp.Tensor)
    values, index, inverse, counts = minidp.unique(T(a), return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(index.numpy(), [1, 3, 0])
    np.testing.assert_array_equal(inverse.numpy(), [2, 0, 2, 1])
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2])
    rows, inverse = minidp.unique(T(np.array([[1, 2], [1, 2], [0, 5]])), axis=0, return_inverse=True)
    np.testing.assert_array_equal(rows.numpy(), [[0, 5], [1, 2]])
    np.testing.assert_array_equal(inverse.numpy(), [1, 1, 0])
    assert minidp.unique(T(a), return_counts=True, dtype="int32")[1].dtype == np.int32


def test_unique_consecutive():
    values, inverse, counts = minidp.unique_consecutive(T([3, 3, 1, 3, 2]), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [3, 1, 3, 2])
    np.testing.assert_array_equal(inverse.numpy(), [0, 0, 1, 2, 3])
    np.testing.assert_array_equal(counts.numpy(), [2, 1, 1, 1])
    rows = minidp.unique_consecutive(T([[1, 1], [1, 1], [2, 0]]), axis=0)
    np.testing.assert_array_equal(rows.numpy(), [[1, 1], [2, 0]])


def test_counting_ops():
    x = T(np.array([1, 1, 3]))
    np.testing.assert_array_equal(minidp.bincount(x).numpy(), [0, 2, 0, 1])
    weighted = minidp.bincount(x, T(np.array([0.5, 1.0, 2.0], dtype=np.float32)), minlength=6)
    np.testing.assert_allclose(weighted.numpy(), [0, 1.5, 0, 2, 0, 0])
    assert minidp.bincount(x).dtype == np.int64 and weighted.dtype == np.float32
    values = T(np.array([1.0, 2.0, 1.0, 4.0], dtype=np.float32))
    counts = minidp.histogram(values, bins=3)
    np.testing.assert_array_equal(counts.numpy(), [2, 1, 1])
    assert counts.dtype == np.int64
    np.testing.assert_allclose(minidp.histogram(values, 3, density=True).numpy(), [0.5, 0.25, 0.25])
    np.testing.assert_array_equal(minidp.histogram(values, 2, 2.0, 4.0).numpy(), [1, 1])
    np.testing.assert_allclose(minidp.histogram_bin_edges(values, 3).numpy(), [1, 2, 3, 4])
    np.testing.assert_allclose(minidp.histogram_bin_edges(T([1.0, 1.0]), 2).numpy(), [0.5, 1.0, 1.5])
    doubles = T(np.array([1.0, 2.0, 3.0]))
    assert minidp.histogram_bin_edges(doubles, 2).dtype == np.float32
    assert minidp.histogram(doubles, 2, weight=T(np.ones(3))).dtype == np.float32
    np.testing.assert_array_equal(minidp.isin(T([1, 2, 3]), T([2, 5])).numpy(), [False, True, False])
    np.testing.assert_array_equal(minidp.isin(T([1, 2]), T([2]), invert=True).numpy(), [True, False])
    np.testing.assert_array_equal(minidp.argwhere(T([[0.0, 1.0], [2.0, 0.0]])).numpy(), [[0, 1], [1, 0]])


def test_bad_inputs():
    with pytest.raises(TypeError, match="1-D integer tensor"):
        minidp.bincount(T([1.0, 2.0]))
    with pytest.raises(ValueError, match="negative"):
        minidp.bincount(T([1, -2]))
    with pytest.raises(ValueError, match="must not exceed"):
        minidp.histogram(T([1.0]), 2, 3.0, 1.0)
    x = T(np.ones((2, 3)))
    with pytest.raises(ValueError, match="k must be in"):
        minidp.topk(x, 4)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        minidp.sort(x, axis=2)
    with pytest.raises(TypeError, match="mask must be a bool"):
        minidp.masked_select(x, T(np.ones((2, 3))))
    with pytest.raises(ValueError, match="does not broadcast"):
        minidp.masked_select(x, T(np.ones((4,), dtype=bool)))
    with pytest.raises(ValueError, match="k must be in"):
        minidp.kthvalue(x, 0)
    with pytest.raises(ValueError, match="must be 1-D"):
        minidp.bucketize(x, x)
