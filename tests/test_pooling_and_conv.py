"""1-D and adaptive pooling, Conv1D, the transposed convolutions, Bilinear, cosine similarity and pairwise distance.

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""
import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad

rng = np.random.default_rng(0)


def t(array):
    return minidp.to_tensor(np.asarray(array))


def distinct(*shape):
    return (rng.permutation(int(np.prod(shape))) / np.prod(shape) * 4 - 2).reshape(shape)


def bounds(n_in, n_out):
    return [(i * n_in // n_out, -(-(i + 1) * n_in // n_out)) for i in range(n_out)]


def np_adaptive(x, out_hw, reduce):
    rows, cols = bounds(x.shape[2], out_hw[0]), bounds(x.shape[3], out_hw[1])
    return np.array([[reduce(x[:, :, a:b, c:d], axis=(2, 3)) for c, d in cols] for a, b in rows]).transpose(2, 3, 0, 1)


def test_adaptive_pooling_literals_from_paddle():
    ramp = np.arange(35.0).reshape(1, 1, 5, 7)
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(t(ramp), [2, 3]).numpy(), [[[[8, 10, 12], [22, 24, 26]]]])
    wave = np.cos(np.arange(35.0)).reshape(1, 1, 5, 7)
    np.testing.assert_allclose(F.adaptive_max_pool2d(t(wave), [2, 3]).numpy(),
                               [[[[1.0, 0.66031671, 0.98870462], [0.15425145, 0.99120281, 0.99120281]]]], rtol=1e-7)


@pytest.mark.parametrize("out_hw", [(3, 2), (1, 1), (5, 4), (2, 5)])
def test_adaptive_pools_match_numpy_and_gradients(out_hw):
    x = distinct(2, 3, 5, 4)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), out_hw).numpy(), np_adaptive(x, out_hw, np.mean))
    np.testing.assert_array_equal(F.adaptive_max_pool2d(t(x), out_hw).numpy(), np_adaptive(x, out_hw, np.max))
    check_grad(lambda a: F.adaptive_avg_pool2d(a, out_hw), x)
    check_grad(lambda a: F.adaptive_max_pool2d(a, out_hw), x)


def test_adaptive_max_mask_channels_last_and_1d():
    x = distinct(1, 2, 5, 4)
    out, mask = F.adaptive_max_pool2d(t(x), 2, return_mask=True)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(1, 2, -1), mask.numpy().reshape(1, 2, -1), 2),
                                  out.numpy().reshape(1, 2, -1))
    last = F.adaptive_avg_pool2d(t(x.transpose(0, 2, 3, 1)), [2, 3], data_format="NHWC").numpy()
    np.testing.assert_allclose(last.transpose(0, 3, 1, 2), np_adaptive(x, (2, 3), np.mean))
    seq = distinct(2, 3, 7)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(seq), 3).numpy(),
                               np_adaptive(seq[:, :, None], (1, 3), np.mean)[:, :, 0])
    np.testing.assert_array_equal(nn.AdaptiveMaxPool1D(4)(t(seq)).numpy(),
                                  np_adaptive(seq[:, :, None], (1, 4), np.max)[:, :, 0])
    assert nn.AdaptiveAvgPool2D(1)(t(x)).shape == [1, 2, 1, 1]
    assert nn.AdaptiveAvgPool1D(2)(t(seq)).shape == [2, 3, 2]
    assert nn.AdaptiveMaxPool2D([None, 2])(t(x)).shape == [1, 2, 5, 2]
    check_grad(lambda a: F.adaptive_max_pool1d(a, 3), seq)
    with pytest.raises(ValueError, match="output_size"):
        F.adaptive_avg_pool2d(t(x), [1, 2, 3])


def test_1d_pooling():
    x = distinct(2, 3, 7)
    out = F.max_pool1d(t(x), 3, 2, 1).numpy()
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1)], constant_values=-np.inf)
    np.testing.assert_array_equal(out, np.stack([padded[:, :, i:i + 3].max(-1) for i in range(0, 7, 2)], -1))
    check_grad(lambda a: F.max_pool1d(a, 3, 2, 1), x)
    avg = F.avg_pool1d(t(x), 2).numpy()
    np.testing.assert_allclose(avg, x[:, :, :6].reshape(2, 3, 3, 2).mean(-1))
    check_grad(lambda a: F.avg_pool1d(a, 3, 2, 1, exclusive=False, ceil_mode=True), x)
    values, mask = nn.MaxPool1D(2, return_mask=True)(t(x))
    np.testing.assert_array_equal(np.take_along_axis(x, mask.numpy().astype(int), 2), values.numpy())
    assert nn.AvgPool1D(3, 1, 1)(t(x)).shape == [2, 3, 7]
    with pytest.raises(ValueError, match="3-D"):
        F.max_pool1d(t(x[0]), 2)


def np_conv1d(x, w, b, stride, pad, dilation=1, groups=1):
    x = np.pad(x, [(0, 0), (0, 0), pad])
    n, c, length = x.shape
    o, cg, k = w.shape
    span = (k - 1) * dilation + 1
    out_len = (length - span) // stride + 1
    out = np.zeros((n, o, out_len))
    per_group = o // groups
    for j in range(o):
        g = j // per_group
        for i in range(out_len):
            window = x[:, g * cg:(g + 1) * cg, i * stride:i * stride + span:dilation]
            out[:, j, i] = (window * w[j]).sum((1, 2))
    return out + (0 if b is None else b[None, :, None])


@pytest.mark.parametrize("stride, padding, dilation, groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, [2, 1], 2, 2)])
def test_conv1d_matches_numpy_and_gradients(stride, padding, dilation, groups):
    x, w, b = rng.normal(size=(2, 4, 9)), rng.normal(size=(6, 4 // groups, 3)), rng.normal(size=6)
    pad = (padding, padding) if isinstance(padding, int) else tuple(padding)
    out = F.conv1d(t(x), t(w), t(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(out.numpy(), np_conv1d(x, w, b, stride, pad, dilation, groups), rtol=1e-10)
    check_grad(lambda a, c, d: F.conv1d(a, c, d, stride, padding, dilation, groups), x, w, b)


def test_conv1d_layer_same_padding_and_channels_last():
    minidp.seed(0)
    layer = nn.Conv1D(4, 6, 3, padding="SAME", data_format="NLC")
    assert layer.weight.shape == [6, 4, 3] and list(layer.state_dict()) == ["weight", "bias"]
    x = rng.normal(size=(2, 9, 4)).astype("float32")
    out = layer(t(x))
    assert out.shape == [2, 9, 6]
    expected = np_conv1d(x.transpose(0, 2, 1), layer.weight.numpy(), layer.bias.numpy(), 1, (1, 1)).transpose(0, 2, 1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert abs(nn.Conv1D(50, 40, 5).weight.numpy().std() - np.sqrt(2 / 250)) < 0.01
    with pytest.raises(ValueError, match="divisible"):
        nn.Conv1D(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="data_format"):
        F.conv1d(t(x), layer.weight, data_format="NCHW")


def test_bilinear_function_and_layer():
    x1, x2, w, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 2)), rng.normal(size=(5, 4, 2)), rng.normal(size=(1, 5))
    np.testing.assert_allclose(F.bilinear(t(x1), t(x2), t(w), t(b)).numpy(),
                               np.einsum("ni,oij,nj->no", x1, w, x2) + b, rtol=1e-10)
    check_grad(F.bilinear, x1, x2, w, b)
    layer = nn.Bilinear(4, 2, 5)
    assert layer.weight.shape == [5, 4, 2] and layer.bias.shape == [1, 5]
    assert layer(t(x1).astype("float32"), t(x2).astype("float32")).shape == [3, 5]
    with pytest.raises(ValueError, match="fit weight"):
        F.bilinear(t(x2), t(x1), t(w))


def test_cosine_similarity_and_pairwise_distance():
    a, b = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 3, 2))
    cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    np.testing.assert_allclose(F.cosine_similarity(t(a), t(b)).numpy(), cos)
    np.testing.assert_allclose(nn.CosineSimilarity(axis=1)(t(a), t(b)).numpy(), cos)
    check_grad(F.cosine_similarity, a, b)
    x = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
    y = np.cos(np.arange(12.0)).reshape(3, 4)
    np.testing.assert_allclose(F.cosine_similarity(t(x), t(y)).numpy(), [-0.3659107, 0.90745805, -0.71707172],
                               rtol=1e-7)  # Paddle 3.3.1
    np.testing.assert_allclose(F.pairwise_distance(t(x), t(y)).numpy(), [3.10057275, 0.72342437, 4.1146268],
                               rtol=1e-7)  # Paddle 3.3.1
    for p in (1.0, 3.0):
        np.testing.assert_allclose(nn.PairwiseDistance(p, keepdim=True)(t(x), t(y)).numpy(),
                                   ((np.abs(x - y + 1e-6) ** p).sum(1, keepdims=True)) ** (1 / p))
        check_grad(lambda u, v: F.pairwise_distance(u, v, p), x, y)
    np.testing.assert_allclose(F.pairwise_distance(t(x), t(y), float("inf")).numpy(), np.abs(x - y + 1e-6).max(1))
    with pytest.raises(TypeError, match="p must be a number"):
        F.pairwise_distance(t(x), t(y), "2")


def np_conv2d_transpose(x, w, stride, pads, dilation, groups, extra=(0, 0)):
    """Scatter every input pixel times the kernel into the output, then crop the padding."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + extra[0],
                     (wd - 1) * sw + dw * (kw - 1) + 1 + extra[1]))
    per_group = c // groups
    for ci in range(c):
        g = ci // per_group
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for b in range(kw):
                        contribution = x[:, ci, i, j, None] * w[ci, :, a, b]
                        full[:, g * og:(g + 1) * og, i * sh + a * dh, j * sw + b * dw] += contribution
    top, bottom, left, right = pads
    return full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]


@pytest.mark.parametrize("stride, padding, output_padding, dilation, groups",
                         [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((2, 1), (1, 0), 0, 2, 2), (2, (1, 0, 2, 1), 0, 1, 1)])
def test_conv2d_transpose_matches_numpy_and_gradients(stride, padding, output_padding, dilation, groups):
    x, w, b = rng.normal(size=(2, 4, 3, 3)), rng.normal(size=(4, 3, 3, 2)), rng.normal(size=3 * groups)
    w = w[:, :3]
    strides = (stride, stride) if isinstance(stride, int) else stride
    pads = {0: (0, 0, 0, 0), 1: (1, 1, 1, 1)}.get(padding) if isinstance(padding, int) else (
        (padding[0], padding[0], padding[1], padding[1]) if len(padding) == 2 else padding)
    extra = (output_padding, output_padding)
    expected = np_conv2d_transpose(x, w, strides, pads, (dilation, dilation), groups, extra) + b[None, :, None, None]
    out = F.conv2d_transpose(t(x), t(w), t(b), stride, padding, output_padding, dilation, groups)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    check_grad(lambda a, c, d: F.conv2d_transpose(a, c, d, stride, padding, output_padding, dilation, groups), x, w, b)


def test_conv_transpose_output_size_same_padding_and_layers():
    x, w = rng.normal(size=(1, 2, 3, 3)), rng.normal(size=(2, 3, 3, 3))
    assert F.conv2d_transpose(t(x), t(w), stride=2).shape == [1, 3, 7, 7]
    assert F.conv2d_transpose(t(x), t(w), stride=2, output_size=[8, 8]).shape == [1, 3, 8, 8]
    assert F.conv2d_transpose(t(x), t(w), stride=2, padding="SAME").shape == [1, 3, 5, 5]  # as Paddle 3.3.1
    with pytest.raises(ValueError, match="out of reach"):
        F.conv2d_transpose(t(x), t(w), stride=2, output_size=[10, 10])
    with pytest.raises(ValueError, match="output_padding"):
        F.conv2d_transpose(t(x), t(w), output_padding=1)
    layer = nn.Conv2DTranspose(2, 6, 3, stride=2, groups=2)
    assert layer.weight.shape == [2, 3, 3, 3] and list(layer.state_dict()) == ["weight", "bias"]
    limit = np.sqrt(6 / (3 * 9 + 2 * 9))  # Xavier-uniform over Paddle's fans, as Paddle draws it
    assert np.abs(layer.weight.numpy()).max() <= limit
    assert layer(t(x).astype("float32"), output_size=[8, 8]).shape == [1, 6, 8, 8]
    seq, kernel = rng.normal(size=(2, 4, 5)), rng.normal(size=(4, 3, 3))
    out = F.conv1d_transpose(t(seq), t(kernel), stride=3, padding=1, output_padding=2)
    expected = np_conv2d_transpose(seq[:, :, None], kernel[:, :, None], (1, 3), (0, 0, 1, 1), (1, 1), 1, (0, 2))
    np.testing.assert_allclose(out.numpy(), expected[:, :, 0], rtol=1e-10)
    check_grad(lambda a, c: F.conv1d_transpose(a, c, stride=2, data_format="NLC"),
               np.ascontiguousarray(seq.transpose(0, 2, 1)), kernel)
    layer1d = nn.Conv1DTranspose(4, 6, 3, stride=2)
    assert layer1d.weight.shape == [4, 6, 3] and layer1d(t(seq).astype("float32")).shape == [2, 6, 11]


def test_pdist():
    x = np.arange(6.0).reshape(3, 2) ** 2
    np.testing.assert_allclose(F.pdist(t(x)).numpy(), [8.94427191, 28.8444102, 20.0])  # Paddle 3.3.1
    y = rng.normal(size=(4, 3))
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    np.testing.assert_allclose(F.pdist(t(y), p=1.0).numpy(), [np.abs(y[i] - y[j]).sum() for i, j in pairs])
    check_grad(F.pdist, y)
    with pytest.raises(ValueError, match="2-D"):
        F.pdist(t(y[0]))


def test_lp_pooling():
    x = rng.uniform(0.1, 1.0, size=(1, 2, 4, 6))
    windows = x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 2, 2, 3, 4)
    np.testing.assert_allclose(F.lp_pool2d(t(x), 3.0, 2).numpy(), (windows ** 3).sum(-1) ** (1 / 3))
    check_grad(lambda a: F.lp_pool2d(a, 2.0, 3, 2, 1, ceil_mode=True), x)
    seq = rng.uniform(0.1, 1.0, size=(1, 2, 6))
    np.testing.assert_allclose(nn.LPPool1D(2.0, 2)(t(seq)).numpy(), np.sqrt((seq.reshape(1, 2, 3, 2) ** 2).sum(-1)))
    assert nn.LPPool2D(2, 2, data_format="NHWC")(t(x.transpose(0, 2, 3, 1))).shape == [1, 2, 3, 2]
    with pytest.raises(ValueError, match="norm_type"):
        F.lp_pool2d(t(x), 0, 2)


def test_max_unpool_inverts_max_pool():
    x = distinct(1, 2, 4, 6) + 3  # no zeros, so the restored maxima are the non-zero entries
    pooled, mask = F.max_pool2d(t(x), 2, return_mask=True)
    restored = F.max_unpool2d(pooled, mask, 2).numpy()
    keep = restored != 0
    np.testing.assert_array_equal(restored[keep], x[keep])
    np.testing.assert_array_equal(keep.reshape(1, 2, 2, 2, 3, 2).sum(axis=(3, 5)), 1)
    check_grad(lambda a: F.max_unpool2d(a, mask, 2), pooled.numpy())
    out, idx = F.max_pool2d(t(x[..., :5]), 3, 2, 1, return_mask=True)
    assert nn.MaxUnPool2D(3, 2, 1, output_size=[4, 5])(out, idx).shape == [1, 2, 4, 5]
    seq = distinct(1, 2, 6)
    values, where = F.max_pool1d(t(seq), 2, return_mask=True)
    np.testing.assert_array_equal(nn.MaxUnPool1D(2)(values, where).numpy().max(-1), seq.max(-1))
    with pytest.raises(ValueError, match="indices must"):
        F.max_unpool2d(pooled, mask * 100, 2)


def _max_pool3d_with_indices(x, k):
    """Non-overlapping k x k x k max pooling in NumPy, with Paddle's flat indices d * H * W + h * W + w."""
    n, c, d, h, w = x.shape
    windows = x.reshape(n, c, d // k, k, h // k, k, w // k, k).transpose(0, 1, 2, 4, 6, 3, 5, 7)
    windows = windows.reshape(n, c, d // k, h // k, w // k, k ** 3)
    at = windows.argmax(-1)
    dd, hh, ww = np.unravel_index(at, (k, k, k))
    od, oh, ow = np.meshgrid(np.arange(d // k), np.arange(h // k), np.arange(w // k), indexing="ij")
    flat = ((od * k + dd) * h + oh * k + hh) * w + ow * k + ww
    return windows.max(-1), flat.astype(np.int32)


def test_max_unpool3d_puts_each_maximum_back_where_it_came_from():
    x = distinct(2, 3, 4, 6, 4) + 3  # no zeros, so the restored maxima are the non-zero entries
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
    plane = distinct(1, 2, 4, 6)
    pooled, mask = F.max_pool2d(t(plane), 2, 2, 1, return_mask=True)
    flat = F.max_unpool2d(pooled, mask, 2, 2, 1).numpy()
    deep = F.max_unpool3d(minidp.unsqueeze(pooled, 2), minidp.unsqueeze(mask, 2), (1, 2, 2), (1, 2, 2), (0, 1, 1))
    np.testing.assert_array_equal(deep.numpy()[:, :, 0], flat)


def test_max_unpool3d_rejects_bad_input():
    values, where = _max_pool3d_with_indices(distinct(1, 2, 2, 2, 2), 2)
    with pytest.raises(ValueError, match="max_unpool3d: indices must lie in"):
        F.max_unpool3d(t(values), t(where * 100), 2)
    with pytest.raises(ValueError, match="max_unpool3d: indices must have the input's shape"):
        F.max_unpool3d(t(values), t(where[:, :1]), 2)
    with pytest.raises(ValueError, match="max_unpool3d: expects a 5-D input and data_format 'NCDHW'"):
        F.max_unpool3d(t(values), t(where), 2, data_format="NDHWC")
