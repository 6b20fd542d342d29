"""Pooling (``minidp/nn/functional/pooling.py``): 1-D, adaptive and Lp pooling, max_unpool, and
their layers. (max_pool2d and avg_pool2d are specified in test_layers.py, the 3-D forms in
test_volume.py.)

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from channels_last_cases import POOLING, assert_matches_paddle
from gradcheck import check_grad, distinct, t

rng = np.random.default_rng(0)


def bounds(n_in, n_out):
    return [(i * n_in // n_out, -(-(i + 1) * n_in // n_out)) for i in range(n_out)]


def np_adaptive(x, out_hw, reduce):
    rows, cols = bounds(x.shape[2], out_hw[0]), bounds(x.shape[3], out_hw[1])
    return np.array([[reduce(x[:, :, a:b, c:d], axis=(2, 3)) for c, d in cols] for a, b in rows]).transpose(2, 3, 0, 1)


def test_adaptive_pooling_literals_from_paddle():
    ramp = np.arange(35.0).reshape(1, 1, 5, 7)
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(t(ramp), [2, 3]).numpy(), [[[[8, 10, 12], [22, 24, 26]]]])
    wave = np.cos(np.arange(35.0)).reshape(1, 1, 5, 7)
    np.testing.assert_allclose(
        F.adaptive_max_pool2d(t(wave), [2, 3]).numpy(),
        [[[[1.0, 0.66031671, 0.98870462], [0.15425145, 0.99120281, 0.99120281]]]],
        rtol=1e-7,
    )


@pytest.mark.parametrize("out_hw", [(3, 2), (1, 1), (5, 4), (2, 5)])
def test_adaptive_pools_match_numpy_and_gradients(out_hw):
    x = distinct(rng, 2, 3, 5, 4)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), out_hw).numpy(), np_adaptive(x, out_hw, np.mean))
    np.testing.assert_array_equal(F.adaptive_max_pool2d(t(x), out_hw).numpy(), np_adaptive(x, out_hw, np.max))
    check_grad(lambda a: F.adaptive_avg_pool2d(a, out_hw), x)
    check_grad(lambda a: F.adaptive_max_pool2d(a, out_hw), x)


def test_adaptive_max_mask_channels_last_and_1d():
    x = distinct(rng, 1, 2, 5, 4)
    out, mask = F.adaptive_max_pool2d(t(x), 2, return_mask=True)
    np.testing.assert_array_equal(
        np.take_along_axis(x.reshape(1, 2, -1), mask.numpy().reshape(1, 2, -1), 2), out.numpy().reshape(1, 2, -1)
    )
    last = F.adaptive_avg_pool2d(t(x.transpose(0, 2, 3, 1)), [2, 3], data_format="NHWC").numpy()
    np.testing.assert_allclose(last.transpose(0, 3, 1, 2), np_adaptive(x, (2, 3), np.mean))
    seq = distinct(rng, 2, 3, 7)
    np.testing.assert_allclose(
        F.adaptive_avg_pool1d(t(seq), 3).numpy(), np_adaptive(seq[:, :, None], (1, 3), np.mean)[:, :, 0]
    )
    np.testing.assert_array_equal(
        nn.AdaptiveMaxPool1D(4)(t(seq)).numpy(), np_adaptive(seq[:, :, None], (1, 4), np.max)[:, :, 0]
    )
    assert nn.AdaptiveAvgPool2D(1)(t(x)).shape == [1, 2, 1, 1]
    assert nn.AdaptiveAvgPool1D(2)(t(seq)).shape == [2, 3, 2]
    assert nn.AdaptiveMaxPool2D([None, 2])(t(x)).shape == [1, 2, 5, 2]
    check_grad(lambda a: F.adaptive_max_pool1d(a, 3), seq)
    with pytest.raises(ValueError, match="output_size"):
        F.adaptive_avg_pool2d(t(x), [1, 2, 3])


def test_1d_pooling():
    x = distinct(rng, 2, 3, 7)
    out = F.max_pool1d(t(x), 3, 2, 1).numpy()
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1)], constant_values=-np.inf)
    np.testing.assert_array_equal(out, np.stack([padded[:, :, i : i + 3].max(-1) for i in range(0, 7, 2)], -1))
    check_grad(lambda a: F.max_pool1d(a, 3, 2, 1), x)
    avg = F.avg_pool1d(t(x), 2).numpy()
    np.testing.assert_allclose(avg, x[:, :, :6].reshape(2, 3, 3, 2).mean(-1))
    check_grad(lambda a: F.avg_pool1d(a, 3, 2, 1, exclusive=False, ceil_mode=True), x)
    values, mask = nn.MaxPool1D(2, return_mask=True)(t(x))
    np.testing.assert_array_equal(np.take_along_axis(x, mask.numpy().astype(int), 2), values.numpy())
    assert nn.AvgPool1D(3, 1, 1)(t(x)).shape == [2, 3, 7]
    with pytest.raises(ValueError, match="3-D"):
        F.max_pool1d(t(x[0]), 2)


def test_lp_pooling():
    x = rng.uniform(0.1, 1.0, size=(1, 2, 4, 6))
    windows = x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 2, 2, 3, 4)
    np.testing.assert_allclose(F.lp_pool2d(t(x), 3.0, 2).numpy(), (windows**3).sum(-1) ** (1 / 3))
    check_grad(lambda a: F.lp_pool2d(a, 2.0, 3, 2, 1, ceil_mode=True), x)
    seq = rng.uniform(0.1, 1.0, size=(1, 2, 6))
    np.testing.assert_allclose(nn.LPPool1D(2.0, 2)(t(seq)).numpy(), np.sqrt((seq.reshape(1, 2, 3, 2) ** 2).sum(-1)))
    assert nn.LPPool2D(2, 2, data_format="NHWC")(t(x.transpose(0, 2, 3, 1))).shape == [1, 2, 3, 2]
    with pytest.raises(ValueError, match="norm_type"):
        F.lp_pool2d(t(x), 0, 2)


def test_max_unpool_inverts_max_pool():
    x = distinct(rng, 1, 2, 4, 6) + 3  # no zeros, so the restored maxima are the non-zero entries
    pooled, mask = F.max_pool2d(t(x), 2, return_mask=True)
    restored = F.max_unpool2d(pooled, mask, 2).numpy()
    keep = restored != 0
    np.testing.assert_array_equal(restored[keep], x[keep])
    np.testing.assert_array_equal(keep.reshape(1, 2, 2, 2, 3, 2).sum(axis=(3, 5)), 1)
    check_grad(lambda a: F.max_unpool2d(a, mask, 2), pooled.numpy())
    out, idx = F.max_pool2d(t(x[..., :5]), 3, 2, 1, return_mask=True)
    assert nn.MaxUnPool2D(3, 2, 1, output_size=[4, 5])(out, idx).shape == [1, 2, 4, 5]
    seq = distinct(rng, 1, 2, 6)
    values, where = F.max_pool1d(t(seq), 2, return_mask=True)
    np.testing.assert_array_equal(nn.MaxUnPool1D(2)(values, where).numpy().max(-1), seq.max(-1))
    with pytest.raises(ValueError, match="indices must"):
        F.max_unpool2d(pooled, mask * 100, 2)


def test_max_unpool_layers_take_paddles_forward_output_size():
    x = distinct(rng, 1, 2, 5, 5)
    pooled, mask = F.max_pool2d(t(x), 2, return_mask=True)
    from_call = nn.MaxUnPool2D(2)(pooled, mask, [5, 5])
    np.testing.assert_array_equal(from_call.numpy(), F.max_unpool2d(pooled, mask, 2, output_size=[5, 5]).numpy())
    built = nn.MaxUnPool2D(2, output_size=[5, 5])
    assert built(pooled, mask, output_size=[1, 2, 4, 5]).shape == [1, 2, 4, 5]  # the call's size wins, as in Paddle
    assert built(pooled, mask).shape == built(pooled, mask, []).shape == [1, 2, 5, 5]  # empty: the layer's own
    assert built.output_size == [5, 5]
    seq = distinct(rng, 1, 2, 7)
    values, where = F.max_pool1d(t(seq), 2, return_mask=True)
    assert nn.MaxUnPool1D(2)(values, where, output_size=[7]).shape == [1, 2, 7]
    assert nn.MaxUnPool1D(2)(indices=where, x=values).shape == [1, 2, 6]


def test_max_unpool_output_size_must_lie_within_a_stride_of_the_default_as_in_paddle():
    # Paddle 3.3.1: for a 2x2 pooled map with kernel and stride 2 the default is 4, and only
    # 3, 4 or 5 are sizes that pooling maps back to 2 ("dim 0 must be between 2 and 6")
    pooled, mask = F.max_pool2d(t(distinct(rng, 1, 1, 4, 4)), 2, return_mask=True)
    assert F.max_unpool2d(pooled, mask, 2, output_size=(5, 5)).shape == [1, 1, 5, 5]
    assert nn.MaxUnPool2D(2)(pooled, mask, output_size=[1, 1, 3, 5]).shape == [1, 1, 3, 5]
    for wrong in ([6, 5], [5, 2], [1, 1, 6, 5]):
        with pytest.raises(ValueError, match=r"spatial size \d must lie strictly between 2 and 6"):
            nn.MaxUnPool2D(2)(pooled, mask, output_size=wrong)
    with pytest.raises(ValueError, match="must hold 2 sizes"):
        F.max_unpool2d(pooled, mask, 2, output_size=[5])
    with pytest.raises(TypeError, match="list or tuple"):
        F.max_unpool2d(pooled, mask, 2, output_size=5)
    values, where = F.max_pool1d(t(distinct(rng, 1, 1, 4)), 2, return_mask=True)
    with pytest.raises(ValueError, match="max_unpool1d: output_size"):
        F.max_unpool1d(values, where, 2, output_size=[6])
    with pytest.raises(TypeError, match="max_unpool1d: output_size"):
        F.max_unpool1d(values, where, 2, output_size=5)


@pytest.mark.parametrize("case", POOLING, ids=[case[0] for case in POOLING])
def test_channels_last_matches_paddle(case):
    assert_matches_paddle(minidp, case)


@pytest.mark.parametrize(
    "pool",
    [
        lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, data_format="NHWC"),
        lambda x: F.avg_pool2d(x, 2, 1, "SAME", exclusive=False, data_format="NHWC"),
        lambda x: F.adaptive_avg_pool2d(x, [2, 3], data_format="NHWC"),
    ],
    ids=["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"],
)
def test_channels_last_pool_gradients_match_finite_differences(pool):
    check_grad(pool, distinct(rng, 1, 5, 4, 2))


def test_channels_last_pool_layers_and_errors():
    x = distinct(rng, 2, 3, 6, 5)
    last = t(x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(
        nn.MaxPool2D(2, data_format="NHWC")(last).numpy(), F.max_pool2d(t(x), 2).numpy().transpose(0, 2, 3, 1)
    )
    np.testing.assert_allclose(
        nn.AdaptiveAvgPool2D(1, data_format="NHWC")(last).numpy(), x.mean((2, 3))[:, None, None, :], rtol=1e-12
    )
    with pytest.raises(ValueError, match="max_pool2d: return_mask=True needs data_format='NCHW'"):
        F.max_pool2d(last, 2, return_mask=True, data_format="NHWC")  # Paddle refuses it too
    with pytest.raises(ValueError, match="avg_pool2d: data_format must be 'NCHW' or 'NHWC', got 'NLC'"):
        F.avg_pool2d(last, 2, data_format="NLC")
    with pytest.raises(ValueError, match="max_unpool2d: data_format must be 'NCHW', got 'NHWC'"):
        F.max_unpool2d(last, last, 2, data_format="NHWC")


@pytest.mark.parametrize("window", [(2, 2, 0), (3, 2, 1), (2, 1, 0)], ids=["tiling", "padded", "overlapping"])
def test_max_pool_gradient_and_mask_go_to_the_first_maximum_of_each_window(window):
    x = np.zeros((2, 3, 4, 4), "float32")  # every window ties everywhere
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 5.0  # a tie between two maxima inside one window
    data = t(x)
    data.stop_gradient = False
    out, mask = F.max_pool2d(data, *window, return_mask=True)
    out.sum().backward()
    expected = np.zeros((2, 3, 16), "float32")
    kernel, stride, pad = window
    padded = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=-np.inf)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            block = padded[:, :, i * stride : i * stride + kernel, j * stride : j * stride + kernel].reshape(2, 3, -1)
            first = block.argmax(axis=2)  # NumPy's argmax picks the first maximum in row-major order
            rows, cols = first // kernel + i * stride - pad, first % kernel + j * stride - pad
            np.testing.assert_array_equal(mask.numpy()[:, :, i, j], rows * 4 + cols)
            for n in range(2):
                for c in range(3):
                    expected[n, c, rows[n, c] * 4 + cols[n, c]] += 1
    np.testing.assert_array_equal(data.grad.numpy().reshape(2, 3, 16), expected)


def test_max_pool_nan_propagates_and_takes_the_gradient_as_in_pytorch():
    # Paddle 3.3.1 CPU gives no single answer to follow: without return_mask a NaN is the maximum
    # only when it comes last in the window and still gets no gradient; with return_mask it is
    # skipped. PyTorch 2.13 (indices [5, 2], gradient 10 and 20 at the NaNs) is the reference.
    x = np.array([[[[1.0, 2.0, np.nan, 4.0], [5.0, np.nan, 7.0, 8.0]]]])
    data = t(x)
    data.stop_gradient = False
    out, mask = F.max_pool2d(data, 2, return_mask=True)
    (out * t(np.array([[[[10.0, 20.0]]]]))).sum().backward()
    assert np.isnan(out.numpy()).all()
    nan_positions = np.flatnonzero(np.isnan(x[0, 0]))  # [2, 5]: one NaN in each window
    np.testing.assert_array_equal(mask.numpy().ravel(), nan_positions[::-1])
    expected = np.zeros(8)
    expected[nan_positions[::-1]] = [10.0, 20.0]
    np.testing.assert_array_equal(data.grad.numpy().ravel(), expected)


@pytest.mark.parametrize(
    "pool",
    [
        lambda x: F.max_pool2d(x, 2),
        lambda x: F.max_pool2d(x, 3, 2, 1),
        lambda x: F.avg_pool2d(x, 3, 1, 1),
        lambda x: F.adaptive_avg_pool2d(x, 1),
    ],
    ids=["max_pool2d_tiles", "max_pool2d_padded", "avg_pool2d", "global_avg_pool"],
)
def test_pooling_gradients_are_stored_like_a_batch_second_input(pool):
    """A convolution leaves its output stored [C, N, H, W]; the pools keep that order for the
    gradient they pass back, so the ops before them never mix two orders (several times slower)."""
    data = rng.normal(size=(3, 2, 6, 6))
    batch_second = np.ascontiguousarray(data.swapaxes(0, 1)).swapaxes(0, 1)
    x = minidp.to_tensor(batch_second, stop_gradient=False)
    out = pool(x)
    out.backward(minidp.to_tensor(np.ones(out.shape)))
    strides = x.grad._data.strides
    assert strides[1] > strides[0] > strides[2]
    expected = minidp.to_tensor(np.ascontiguousarray(data), stop_gradient=False)
    pool(expected).backward(minidp.to_tensor(np.ones(out.shape)))
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-12)


def test_max_pool3d_sends_the_gradient_to_the_last_nan_of_a_window():
    x = np.arange(8.0).reshape(1, 1, 2, 2, 2)
    x.flat[[1, 6]] = np.nan  # two NaNs in the one window: PyTorch picks the last, flat index 6
    data = t(x)
    data.stop_gradient = False
    out, mask = F.max_pool3d(data, 2, return_mask=True)
    out.sum().backward()
    assert np.isnan(out.numpy()).all() and mask.numpy().ravel().tolist() == [6]
    np.testing.assert_array_equal(data.grad.numpy().ravel(), np.eye(8)[6])
