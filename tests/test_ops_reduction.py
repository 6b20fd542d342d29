"""Reductions (``minidp/ops/reduction.py``), with the running reductions of ``cumulative.py`` and
the statistics of ``statistics.py`` in the same case table: values against NumPy and float64
gradients against finite differences, one line per case; then the tie, zero and NaN rules Paddle
follows."""

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(0)


def distinct(*shape):
    """Values with no ties (order statistics have kinks at ties)."""
    return rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.37 - 2.0 + rng.uniform(0, 0.1, shape)


CASES = [  # function of a tensor, NumPy reference of the array
    (lambda x: minidp.prod(x), np.prod),
    (lambda x: minidp.prod(x, axis=1), lambda v: v.prod(axis=1)),
    (lambda x: minidp.prod(x, axis=[0, 2], keepdim=True), lambda v: v.prod(axis=(0, 2), keepdims=True)),
    (lambda x: minidp.amax(x, axis=1), lambda v: v.max(axis=1)),
    (lambda x: minidp.amin(x, axis=-1, keepdim=True), lambda v: v.min(axis=-1, keepdims=True)),
    (lambda x: minidp.cumsum(x), lambda v: np.cumsum(v)),
    (lambda x: minidp.cumsum(x, axis=1), lambda v: np.cumsum(v, axis=1)),
    (lambda x: minidp.cumprod(x, dim=2), lambda v: np.cumprod(v, axis=2)),
    (lambda x: minidp.cumprod(x), lambda v: np.cumprod(v)),
    (lambda x: minidp.cummax(x, axis=1)[0], lambda v: np.maximum.accumulate(v, axis=1)),
    (lambda x: minidp.cummin(x, axis=-1)[0], lambda v: np.minimum.accumulate(v, axis=-1)),
    (lambda x: minidp.logcumsumexp(x, axis=0), lambda v: np.logaddexp.accumulate(v, axis=0)),
    (lambda x: minidp.logcumsumexp(x), lambda v: np.logaddexp.accumulate(v.reshape(-1))),
    (lambda x: minidp.var(x), lambda v: v.var(ddof=1)),
    (lambda x: minidp.var(x, axis=1, unbiased=False), lambda v: v.var(axis=1)),
    (lambda x: minidp.var(x, axis=[0, 2], keepdim=True, correction=0), lambda v: v.var(axis=(0, 2), keepdims=True)),
    (lambda x: minidp.std(x, axis=2), lambda v: v.std(axis=2, ddof=1)),
    (lambda x: minidp.median(x), np.median),
    (lambda x: minidp.median(x, axis=2), lambda v: np.median(v, axis=2)),
    (lambda x: minidp.median(x, axis=1, keepdim=True), lambda v: np.median(v, axis=1, keepdims=True)),
    (lambda x: minidp.median(x, axis=2, mode="min")[0], lambda v: np.sort(v, axis=2)[..., 1]),
    (lambda x: minidp.nanmedian(x, axis=0), lambda v: np.nanmedian(v, axis=0)),
    (lambda x: minidp.quantile(x, 0.3), lambda v: np.quantile(v, 0.3)),
    (lambda x: minidp.quantile(x, [0.25, 0.9], axis=1), lambda v: np.quantile(v, [0.25, 0.9], axis=1)),
    (
        lambda x: minidp.quantile(x, 0.4, axis=[0, 2], keepdim=True, interpolation="midpoint"),
        lambda v: np.quantile(v, 0.4, axis=(0, 2), keepdims=True, method="midpoint"),
    ),
    (
        lambda x: minidp.quantile(x, 0.7, axis=2, interpolation="lower"),
        lambda v: np.quantile(v, 0.7, axis=2, method="lower"),
    ),
    (
        lambda x: minidp.quantile(x, 0.7, axis=2, interpolation="higher"),
        lambda v: np.quantile(v, 0.7, axis=2, method="higher"),
    ),
    (
        lambda x: minidp.quantile(x, 0.6, axis=2, interpolation="nearest"),
        lambda v: np.quantile(v, 0.6, axis=2, method="nearest"),
    ),
    (lambda x: minidp.nansum(x, axis=1), lambda v: np.nansum(v, axis=1)),
    (lambda x: minidp.nanmean(x, axis=[1, 2]), lambda v: np.nanmean(v, axis=(1, 2))),
    (lambda x: minidp.mean(x, axis=1, dtype="float64"), lambda v: v.mean(axis=1)),
    (lambda x: minidp.nanquantile(x, [0.3, 0.6], axis=2), lambda v: np.nanquantile(v, [0.3, 0.6], axis=2)),
    (lambda x: minidp.diff(x), lambda v: np.diff(v)),
    (lambda x: minidp.diff(x, n=2, axis=1), lambda v: np.diff(v, n=2, axis=1)),
    (
        lambda x: minidp.diff(x, axis=0, prepend=x[:1], append=x[1:] * 2),
        lambda v: np.diff(v, axis=0, prepend=v[:1], append=v[1:] * 2),
    ),
    (lambda x: minidp.trapezoid(x), lambda v: np.trapezoid(v)),
    (lambda x: minidp.trapezoid(x, dx=0.5, axis=1), lambda v: np.trapezoid(v, dx=0.5, axis=1)),
    (
        lambda x: minidp.trapezoid(x, x=minidp.to_tensor([0.0, 0.5, 2.0], x.dtype), axis=1),
        lambda v: np.trapezoid(v, x=[0.0, 0.5, 2.0], axis=1),
    ),
    (lambda x: minidp.cumulative_trapezoid(x, axis=0), lambda v: np.cumsum((v[1:] + v[:-1]) / 2, axis=0)),
]


@pytest.mark.parametrize("function, reference", CASES)
def test_values_and_gradients(function, reference):
    values = distinct(2, 3, 4)
    np.testing.assert_allclose(function(minidp.to_tensor(values)).numpy(), reference(values), rtol=1e-10, atol=1e-12)
    check_grad(function, values)


def test_products_with_zeros_have_exact_gradients():
    check_grad(lambda x: minidp.prod(x, axis=1), np.array([[1.5, 0.0, 3.0], [0.0, 2.0, 0.0]]))
    check_grad(lambda x: minidp.cumprod(x, dim=1), np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 1.5, 0.0, 2.0]]))
    x = minidp.to_tensor([2.0, 0.0, 3.0, 4.0], stop_gradient=False)
    minidp.cumprod(x, dim=0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 32.0, 0.0, 0.0])  # Paddle's values


def test_ties_share_the_gradient_as_paddle_does():
    x = minidp.to_tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]], stop_gradient=False)
    minidp.amax(x, axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0.5, 0]])
    y = minidp.to_tensor([1.0, 4.0, 2.0, 3.0, 2.0], stop_gradient=False)
    minidp.median(y).backward()
    np.testing.assert_allclose(y.grad.numpy(), [0, 0, 0.5, 0, 0.5])
    z = minidp.to_tensor([1.0, 4.0, 2.0, 3.0], stop_gradient=False)
    minidp.median(z).backward()
    np.testing.assert_allclose(z.grad.numpy(), [0, 0, 0.5, 0.5])


def test_cummax_indices_take_the_latest_tie_and_route_the_gradient():
    x = minidp.to_tensor([1.0, 3.0, 2.0, 3.0, 0.0], stop_gradient=False)
    values, indices = minidp.cummax(x, axis=0)
    assert indices.numpy().tolist() == [0, 1, 1, 3, 3] and indices.dtype == np.int64 and indices.stop_gradient
    values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 2, 0, 2, 0])
    _, low = minidp.cummin(minidp.to_tensor([3.0, 1.0, 2.0, 1.0, 5.0]), axis=0, dtype="int32")
    assert low.numpy().tolist() == [0, 1, 1, 3, 3] and low.dtype == np.int32


def test_boolean_and_counting_reductions():
    x = minidp.to_tensor([[1, 0, 2], [3, 4, 5]])
    assert minidp.all(x).item() is False and minidp.any(x).item() is True
    assert minidp.all(x, axis=1).numpy().tolist() == [False, True]
    assert minidp.any(x, axis=0, keepdim=True).shape == [1, 3]
    assert minidp.count_nonzero(x, axis=1).numpy().tolist() == [2, 3]
    assert minidp.count_nonzero(x).dtype == np.int64
    assert minidp.cumsum(minidp.to_tensor([[1, 2], [3, 4]], "int32")).numpy().tolist() == [1, 3, 6, 10]
    assert minidp.cumsum(minidp.to_tensor([1, 2], "int32")).dtype == np.int64
    assert minidp.prod(minidp.to_tensor([2, 3], "int32")).dtype == np.int32


def test_nan_rules():
    x = minidp.to_tensor([1.0, np.nan, 3.0], stop_gradient=False)
    minidp.nanmean(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0, 0.5])
    assert minidp.nansum(x).item() == 4.0
    assert np.isnan(minidp.median(x).item())
    assert minidp.nanmedian(x).item() == 2.0
    assert np.isnan(minidp.nanmedian(minidp.to_tensor([np.nan, np.nan])).item())


def test_median_and_quantile_shapes_and_errors():
    x = minidp.to_tensor([[1.0, 4.0, 2.0, 3.0]])
    values, indices = minidp.median(x, axis=1, mode="min")
    assert values.numpy().tolist() == [2.0] and indices.numpy().tolist() == [2]
    assert minidp.median(x, mode="min").shape == []
    assert minidp.median(minidp.to_tensor([1, 4, 2, 3], "int64")).dtype == np.float32
    assert minidp.quantile(x, [0.3, 0.5], axis=1).shape == [2, 1]
    with pytest.raises(ValueError, match="mode"):
        minidp.median(x, mode="max")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        minidp.quantile(x, 1.5)
    with pytest.raises(ValueError, match="interpolation"):
        minidp.quantile(x, 0.5, interpolation="cubic")


def test_nan_aware_quantile_and_trapezoid_arguments():
    x = minidp.to_tensor([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4])
    got = minidp.nanquantile(x, 0.5, axis=1).numpy()
    assert got[0] == 2.0 and np.isnan(got[1])
    assert np.isnan(minidp.quantile(x, 0.5, axis=1).numpy()).all()
    with pytest.raises(ValueError, match="not both"):
        minidp.trapezoid(minidp.ones([3]), x=minidp.ones([3]), dx=1.0)


def test_reduce_as_sums_to_the_target_shape():
    x = np.arange(24, dtype="float64").reshape(2, 3, 4)
    out = minidp.reduce_as(minidp.to_tensor(x), minidp.ones([3, 1]))
    np.testing.assert_allclose(out.numpy(), x.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_allclose(minidp.ones([2, 3]).reduce_as(minidp.ones([3])).numpy(), [2.0, 2.0, 2.0])
    check_grad(lambda a: minidp.reduce_as(a, minidp.ones([1, 4])), x)
    with pytest.raises(ValueError, match="does not broadcast"):
        minidp.reduce_as(minidp.ones([2, 3]), minidp.ones([2]))


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
