"""3-D convolution and pooling (``minidp/nn/functional/volume.py``) against NumPy loops, finite
differences and Paddle 3.3.1 shapes; the 3-D max pools' masks are Paddle's and
max_unpool3d puts each maximum back."""

import itertools

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from channels_last_cases import VOLUME, assert_matches_paddle
from gradcheck import check_grad, distinct, t

rng = np.random.default_rng(0)


def np_conv3d(x, w, stride, pads, dilation, groups):
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    outs = [(size - span) // s + 1 for size, span, s in zip(x.shape[2:], spans, stride)]
    out = np.zeros((n, o, *outs))
    per_group = o // groups
    for j in range(o):
        g = j // per_group
        for pos in itertools.product(*[range(v) for v in outs]):
            window = x[
                (slice(None), slice(g * cg, (g + 1) * cg))
                + tuple(slice(p * s, p * s + span, d) for p, s, span, d in zip(pos, stride, spans, dilation))
            ]
            out[(slice(None), j) + pos] = (window * w[j]).sum(axis=(1, 2, 3, 4))
    return out


def np_pool3d(x, kernel, stride, reduce):
    outs = [(size - k) // s + 1 for size, k, s in zip(x.shape[2:], kernel, stride)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*[range(v) for v in outs]):
        window = x[(slice(None), slice(None)) + tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, stride, kernel))]
        out[(slice(None), slice(None)) + pos] = reduce(window.reshape(x.shape[0], x.shape[1], -1), axis=-1)
    return out


@pytest.mark.parametrize(
    "stride, padding, dilation, groups, pads",
    [
        (1, 0, 1, 1, [(0, 0)] * 3),
        ((2, 1, 2), (1, 0, 1), (1, 2, 1), 2, [(1, 1), (0, 0), (1, 1)]),
        (1, [1, 0, 0, 2, 1, 1], 1, 1, [(1, 0), (0, 2), (1, 1)]),
    ],
)
def test_conv3d_matches_numpy_and_gradients(stride, padding, dilation, groups, pads):
    x, w, b = rng.normal(size=(1, 4, 4, 5, 4)), rng.normal(size=(4, 4 // groups, 2, 3, 2)), rng.normal(size=4)
    strides = (stride,) * 3 if isinstance(stride, int) else stride
    dilations = (dilation,) * 3 if isinstance(dilation, int) else dilation
    out = F.conv3d(t(x), t(w), t(b), stride, padding, dilation, groups)
    expected = np_conv3d(x, w, strides, pads, dilations, groups) + b[None, :, None, None, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    check_grad(lambda a, c, d: F.conv3d(a, c, d, stride, padding, dilation, groups), x[:, :, :3, :, :3], w, b)


def test_conv3d_same_padding_channels_last_and_layer():
    x, w = rng.normal(size=(1, 5, 4, 3, 2)), rng.normal(size=(3, 2, 3, 3, 3))
    out = F.conv3d(t(x), t(w), stride=2, padding="SAME", data_format="NDHWC")
    assert out.shape == [1, 3, 2, 2, 3]
    channels_first = F.conv3d(t(x.transpose(0, 4, 1, 2, 3)), t(w), stride=2, padding="SAME")
    np.testing.assert_allclose(out.numpy(), channels_first.numpy().transpose(0, 2, 3, 4, 1))
    layer = nn.Conv3D(2, 4, 3, padding=1)
    assert layer.weight.shape == [4, 2, 3, 3, 3] and list(layer.state_dict()) == ["weight", "bias"]
    assert layer(t(rng.normal(size=(1, 2, 4, 4, 4))).astype("float32")).shape == [1, 4, 4, 4, 4]
    with pytest.raises(ValueError, match="5-D"):
        F.conv3d(t(x[0]), t(w))
    with pytest.raises(ValueError, match="padding"):
        F.conv3d(t(x.transpose(0, 4, 1, 2, 3)), t(w), padding=[1, 2])


def test_3d_pooling_matches_numpy_and_gradients():
    x = rng.normal(size=(2, 2, 4, 4, 6))
    np.testing.assert_array_equal(F.max_pool3d(t(x), 2).numpy(), np_pool3d(x, (2, 2, 2), (2, 2, 2), np.max))
    np.testing.assert_allclose(F.avg_pool3d(t(x), 2).numpy(), np_pool3d(x, (2, 2, 2), (2, 2, 2), np.mean))
    np.testing.assert_allclose(
        nn.AvgPool3D(2, divisor_override=3)(t(x)).numpy(), np_pool3d(x, (2, 2, 2), (2, 2, 2), np.sum) / 3
    )
    padded = np.pad(x, [(0, 0)] * 2 + [(1, 1)] * 3)
    inclusive = F.avg_pool3d(t(x), 3, 2, 1, exclusive=False).numpy()
    np.testing.assert_allclose(inclusive, np_pool3d(padded, (3, 3, 3), (2, 2, 2), np.mean))
    ones = np.pad(np.ones_like(x), [(0, 0)] * 2 + [(1, 1)] * 3)
    exclusive = F.avg_pool3d(t(x), 3, 2, 1).numpy()
    np.testing.assert_allclose(
        exclusive, np_pool3d(padded, (3, 3, 3), (2, 2, 2), np.sum) / np_pool3d(ones, (3, 3, 3), (2, 2, 2), np.sum)
    )
    small = rng.normal(size=(1, 2, 4, 3, 5))
    check_grad(lambda a: F.max_pool3d(a, 3, 2, 1, ceil_mode=True), small)
    check_grad(lambda a: F.avg_pool3d(a, 3, 2, 1, ceil_mode=True, exclusive=False), small)
    assert nn.MaxPool3D(2, data_format="NDHWC")(t(x.transpose(0, 2, 3, 4, 1))).shape == [2, 2, 2, 3, 2]


def adaptive_window(n_in, n_out, i):
    return i * n_in // n_out, -(-(i + 1) * n_in // n_out)


def test_adaptive_3d_pooling():
    x = rng.normal(size=(1, 2, 5, 7, 4))
    expected_avg = np.zeros((1, 2, 2, 3, 2))
    expected_max = np.zeros((1, 2, 2, 3, 2))
    for a, b, c in itertools.product(range(2), range(3), range(2)):
        d0, d1 = adaptive_window(5, 2, a)
        h0, h1 = adaptive_window(7, 3, b)
        w0, w1 = adaptive_window(4, 2, c)
        window = x[:, :, d0:d1, h0:h1, w0:w1]
        expected_avg[:, :, a, b, c] = window.mean(axis=(2, 3, 4))
        expected_max[:, :, a, b, c] = window.max(axis=(2, 3, 4))
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t(x), [2, 3, 2]).numpy(), expected_avg)
    np.testing.assert_array_equal(nn.AdaptiveMaxPool3D([2, 3, 2])(t(x)).numpy(), expected_max)
    check_grad(lambda v: F.adaptive_avg_pool3d(v, [2, 3, 2]), x)
    check_grad(lambda v: F.adaptive_max_pool3d(v, [2, 3, 2]), x)
    assert nn.AdaptiveAvgPool3D(1)(t(x)).shape == [1, 2, 1, 1, 1]
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t(x), 1).numpy(), x.mean(axis=(2, 3, 4), keepdims=True))
    check_grad(lambda v: F.adaptive_avg_pool3d(v, 1), x)
    assert F.adaptive_avg_pool3d(t(x), [None, 2, 2]).shape == [1, 2, 5, 2, 2]


def test_adaptive_max_pool3d_return_mask_gives_paddles_flat_indices():
    x = distinct(rng, 1, 2, 5, 7, 4)
    values, mask = nn.AdaptiveMaxPool3D([2, 3, 2], return_mask=True)(t(x))
    for a, b, c in itertools.product(range(2), range(3), range(2)):
        (d0, d1), (h0, h1), (w0, w1) = adaptive_window(5, 2, a), adaptive_window(7, 3, b), adaptive_window(4, 2, c)
        at = x[:, :, d0:d1, h0:h1, w0:w1].reshape(1, 2, -1).argmax(-1)
        dd, hh, ww = np.unravel_index(at, (d1 - d0, h1 - h0, w1 - w0))
        np.testing.assert_array_equal(mask.numpy()[:, :, a, b, c], ((d0 + dd) * 7 + h0 + hh) * 4 + w0 + ww)
    assert mask.dtype == minidp.int32
    np.testing.assert_array_equal(values.numpy(), F.adaptive_max_pool3d(t(x), [2, 3, 2]).numpy())
    check_grad(lambda v: F.adaptive_max_pool3d(v, [2, 3, 2], return_mask=True)[0], x)
    ties = np.zeros((1, 1, 2, 2, 2))
    ties[0, 0, 0, 1, 1] = ties[0, 0, 1, 0, 0] = 1.0  # flat indices 3 and 4: the shallower one is first
    a = minidp.to_tensor(ties, stop_gradient=False)
    pooled, where = F.adaptive_max_pool3d(a, 1, return_mask=True)
    pooled.sum().backward()
    assert where.numpy().ravel().tolist() == [3] and a.grad.numpy().ravel().tolist() == [0, 0, 0, 1, 0, 0, 0, 0]


def np_conv3d_transpose(x, w, stride, pads, dilation, groups):
    """Scatter every input voxel times the kernel into the output, then crop (front/back per axis)."""
    n, c = x.shape[:2]
    og = w.shape[1]
    kernel = w.shape[2:]
    full = [(size - 1) * s + d * (k - 1) + 1 for size, s, d, k in zip(x.shape[2:], stride, dilation, kernel)]
    out = np.zeros((n, og * groups, *full))
    per_group = c // groups
    for ci in range(c):
        g = ci // per_group
        for pos in itertools.product(*[range(v) for v in x.shape[2:]]):
            for off in itertools.product(*[range(k) for k in kernel]):
                at = tuple(p * s + o * d for p, s, o, d in zip(pos, stride, off, dilation))
                out[(slice(None), slice(g * og, (g + 1) * og)) + at] += (
                    x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + off]
                )
    return out[(slice(None), slice(None)) + tuple(slice(a, size - b) for (a, b), size in zip(pads, full))]


@pytest.mark.parametrize(
    "stride, padding, dilation, groups, pads",
    [(1, 0, 1, 1, [(0, 0)] * 3), ((2, 1, 2), (1, 0, 1), (2, 1, 1), 2, [(1, 1), (0, 0), (1, 1)])],
)
def test_conv3d_transpose_matches_numpy_and_gradients(stride, padding, dilation, groups, pads):
    x, w, b = rng.normal(size=(1, 4, 3, 3, 2)), rng.normal(size=(4, 2, 3, 2, 2)), rng.normal(size=2 * groups)
    strides = (stride,) * 3 if isinstance(stride, int) else stride
    dilations = (dilation,) * 3 if isinstance(dilation, int) else dilation
    out = F.conv3d_transpose(t(x), t(w), t(b), stride, padding, 0, groups, dilation)
    expected = np_conv3d_transpose(x, w, strides, pads, dilations, groups) + b[None, :, None, None, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    check_grad(lambda a, c, d: F.conv3d_transpose(a, c, d, stride, padding, 0, groups, dilation), x, w, b)


def test_conv3d_transpose_sizes_and_layer():
    x, w = rng.normal(size=(1, 2, 3, 3, 2)), rng.normal(size=(2, 3, 3, 3, 3))
    assert F.conv3d_transpose(t(x), t(w), stride=2).shape == [1, 3, 7, 7, 5]
    assert F.conv3d_transpose(t(x), t(w), stride=2, output_size=[8, 8, 6]).shape == [1, 3, 8, 8, 6]
    assert F.conv3d_transpose(t(x), t(w), stride=2, padding="SAME").shape == [1, 3, 5, 5, 4]  # as Paddle 3.3.1
    with pytest.raises(ValueError, match="reachable"):
        F.conv3d_transpose(t(x), t(w), stride=2, output_size=[10, 8, 6])
    layer = nn.Conv3DTranspose(2, 4, 3, stride=2)
    assert layer.weight.shape == [2, 4, 3, 3, 3]
    assert layer(t(x).astype("float32")).shape == [1, 4, 7, 7, 5]


def np_max_pool3d_with_indices(x, kernel, stride, front, outs):
    """Max pooling in NumPy with Paddle's mask: the flat index d * H * W + h * W + w of each window's
    first maximum in (d, h, w) order, the window clipped to the input (padding never wins)."""
    n, c = x.shape[:2]
    values, where = np.zeros((n, c) + tuple(outs)), np.zeros((n, c) + tuple(outs), dtype=np.int32)
    for pos in itertools.product(*[range(v) for v in outs]):
        lows = [max(p * s - f, 0) for p, s, f in zip(pos, stride, front)]
        highs = [min(p * s - f + k, size) for p, s, f, k, size in zip(pos, stride, front, kernel, x.shape[2:])]
        window = x[(slice(None), slice(None)) + tuple(slice(lo, hi) for lo, hi in zip(lows, highs))]
        at = window.reshape(n, c, -1).argmax(-1)
        coords = [lo + i for lo, i in zip(lows, np.unravel_index(at, window.shape[2:]))]
        values[(slice(None), slice(None)) + pos] = window.reshape(n, c, -1).max(-1)
        where[(slice(None), slice(None)) + pos] = np.ravel_multi_index(coords, x.shape[2:])
    return values, where


def _max_pool3d_with_indices(x, k):
    """Non-overlapping k x k x k max pooling with Paddle's mask (see np_max_pool3d_with_indices)."""
    return np_max_pool3d_with_indices(x, (k,) * 3, (k,) * 3, (0,) * 3, [size // k for size in x.shape[2:]])


@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode, geometry",
    [  # geometry: what the NumPy reference needs, (kernel, stride, front padding, output size) per axis
        (2, None, 0, False, ((2, 2, 2), (2, 2, 2), (0, 0, 0), (2, 3, 3))),
        (3, 2, 1, True, ((3, 3, 3), (2, 2, 2), (1, 1, 1), (3, 4, 4))),
        ((2, 3, 2), (1, 2, 3), (1, 0, 1), False, ((2, 3, 2), (1, 2, 3), (1, 0, 1), (6, 2, 3))),
        ((3, 2, 2), (2, 1, 2), 0, True, ((3, 2, 2), (2, 1, 2), (0, 0, 0), (2, 5, 4))),
    ],
)
def test_max_pool3d_return_mask_gives_paddles_flat_indices(kernel, stride, padding, ceil_mode, geometry):
    x = distinct(rng, 2, 3, 5, 6, 7)
    values, mask = F.max_pool3d(t(x), kernel, stride, padding, return_mask=True, ceil_mode=ceil_mode)
    want_values, want_mask = np_max_pool3d_with_indices(x, *geometry)
    assert mask.dtype == minidp.int32  # as Paddle 3.3.1
    np.testing.assert_array_equal(values.numpy(), want_values)
    np.testing.assert_array_equal(mask.numpy(), want_mask)
    np.testing.assert_array_equal(F.max_pool3d(t(x), kernel, stride, padding, ceil_mode=ceil_mode).numpy(), want_values)
    check_grad(lambda a: F.max_pool3d(a, kernel, stride, padding, True, ceil_mode)[0], x[:1, :2])


def test_max_pool3d_ties_go_to_the_first_maximum_in_depth_height_width_order():
    x = np.zeros((1, 1, 2, 2, 2))
    x[0, 0, 0, 1, 1] = x[0, 0, 1, 0, 0] = 1.0  # flat indices 3 and 4: the shallower one is first
    a = minidp.to_tensor(x, stop_gradient=False)
    values, mask = F.max_pool3d(a, 2, return_mask=True)
    values.sum().backward()
    assert mask.numpy().ravel().tolist() == [3]
    assert a.grad.numpy().ravel().tolist() == [0, 0, 0, 1, 0, 0, 0, 0]  # as Paddle 3.3.1
    b = minidp.ones([1, 1, 2, 2, 2])
    b.stop_gradient = False
    F.max_pool3d(b, 2).sum().backward()
    assert b.grad.numpy().ravel().tolist() == [1, 0, 0, 0, 0, 0, 0, 0]  # without the mask too


def test_max_pool3d_mask_layer_and_channels_last():
    x = distinct(rng, 2, 3, 4, 6, 4)
    values, mask = nn.MaxPool3D(2, return_mask=True)(t(x))
    want_values, want_mask = _max_pool3d_with_indices(x, 2)
    np.testing.assert_array_equal(mask.numpy(), want_mask)
    last_values = F.max_pool3d(t(x.transpose(0, 2, 3, 4, 1)), 2, data_format="NDHWC")
    np.testing.assert_array_equal(last_values.numpy(), want_values.transpose(0, 2, 3, 4, 1))
    with pytest.raises(ValueError, match="return_mask=True needs data_format='NCDHW'"):  # Paddle refuses it too
        F.max_pool3d(t(x.transpose(0, 2, 3, 4, 1)), 2, return_mask=True, data_format="NDHWC")


@pytest.mark.parametrize("padding", ["SAME", [0, 1, 1, 0, 1, 1]])
def test_max_pool3d_return_mask_pads_as_without_it(padding):
    x = distinct(rng, 1, 2, 5, 6, 7)
    values, mask = F.max_pool3d(t(x), 3, 2, padding, return_mask=True)
    np.testing.assert_array_equal(values.numpy(), F.max_pool3d(t(x), 3, 2, padding).numpy())
    np.testing.assert_array_equal(
        np.take_along_axis(x.reshape(1, 2, -1), mask.numpy().reshape(1, 2, -1), -1).ravel(), values.numpy().ravel()
    )


def test_max_unpool3d_of_max_pool3d_restores_each_maximum():
    x = distinct(rng, 2, 2, 5, 6, 7) + 3  # no zeros, so the restored maxima are the non-zero entries
    values, mask = F.max_pool3d(t(x), (2, 3, 2), (1, 2, 3), (1, 0, 1), return_mask=True)
    restored = F.max_unpool3d(values, mask, (2, 3, 2), (1, 2, 3), (1, 0, 1), output_size=[5, 6, 7]).numpy()
    flat_mask = mask.numpy().reshape(2, 2, -1)
    expected = np.zeros((2, 2, 5 * 6 * 7))
    np.put_along_axis(expected, flat_mask, np.take_along_axis(x.reshape(2, 2, -1), flat_mask, -1), -1)
    np.testing.assert_array_equal(restored, expected.reshape(x.shape))
    layer = nn.MaxUnPool3D((2, 3, 2), (1, 2, 3), (1, 0, 1))
    np.testing.assert_array_equal(layer(values, mask, output_size=[5, 6, 7]).numpy(), restored)
    check_grad(lambda a: F.max_unpool3d(*F.max_pool3d(a, 2, return_mask=True), 2), x[:1, :1, :4, :4, :4])


def test_max_unpool3d_puts_each_maximum_back_where_it_came_from():
    x = distinct(rng, 2, 3, 4, 6, 4) + 3  # no zeros, so the restored maxima are the non-zero entries
    values, where = _max_pool3d_with_indices(x, 2)
    restored = F.max_unpool3d(t(values), t(where), 2).numpy()
    keep = restored != 0
    np.testing.assert_array_equal(restored[keep], x[keep])
    np.testing.assert_array_equal(keep.reshape(2, 3, 2, 2, 3, 2, 2, 2).sum(axis=(3, 5, 7)), 1)
    np.testing.assert_array_equal(nn.MaxUnPool3D(2)(t(values), t(where)).numpy(), restored)
    check_grad(lambda a: F.max_unpool3d(a, t(where), 2), values)
    assert F.max_unpool3d(t(values), t(where), 2, output_size=[5, 7, 5]).shape == [2, 3, 5, 7, 5]
    assert repr(nn.MaxUnPool3D(2, output_size=[4, 6, 4])) == "MaxUnPool3D(output_size=[4, 6, 4])"


def test_max_unpool3d_of_one_deep_windows_is_max_unpool2d():
    plane = distinct(rng, 1, 2, 4, 6)
    pooled, mask = F.max_pool2d(t(plane), 2, 2, 1, return_mask=True)
    flat = F.max_unpool2d(pooled, mask, 2, 2, 1).numpy()
    deep = F.max_unpool3d(minidp.unsqueeze(pooled, 2), minidp.unsqueeze(mask, 2), (1, 2, 2), (1, 2, 2), (0, 1, 1))
    np.testing.assert_array_equal(deep.numpy()[:, :, 0], flat)


def test_max_unpool3d_rejects_bad_input():
    values, where = _max_pool3d_with_indices(distinct(rng, 1, 2, 2, 2, 2), 2)
    with pytest.raises(ValueError, match="max_unpool3d: indices must lie in"):
        F.max_unpool3d(t(values), t(where * 100), 2)
    with pytest.raises(ValueError, match="max_unpool3d: indices must have the input's shape"):
        F.max_unpool3d(t(values), t(where[:, :1]), 2)
    with pytest.raises(ValueError, match="max_unpool3d: expects a 5-D input and data_format 'NCDHW'"):
        F.max_unpool3d(t(values), t(where), 2, data_format="NDHWC")


@pytest.mark.parametrize("case", VOLUME, ids=[case[0] for case in VOLUME])
def test_channels_last_matches_paddle(case):
    assert_matches_paddle(minidp, case)


def test_channels_last_gradients_match_finite_differences():
    x, w = distinct(rng, 1, 3, 2, 2, 2), rng.normal(size=(2, 2, 2, 1, 2))
    check_grad(lambda a, c: F.conv3d(a, c, stride=(2, 1, 1), padding="SAME", data_format="NDHWC"), x, w)
    check_grad(lambda a, c: F.conv3d_transpose(a, c, stride=2, padding=[1, 0, 0], data_format="NDHWC"), x, w)
    check_grad(lambda a: F.max_pool3d(a, 2, 1, 1, data_format="NDHWC"), x)
    check_grad(lambda a: F.avg_pool3d(a, 2, 1, "SAME", exclusive=False, data_format="NDHWC"), x)
