"""pad (every mode and layout), interpolate/upsample, pixel_shuffle/unshuffle and their layers.

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""
import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad

rng = np.random.default_rng(0)
IMAGE = np.arange(6.0).reshape(1, 1, 2, 3)
NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def t(array):
    return minidp.to_tensor(np.asarray(array))


def test_pad_literals_from_paddle():
    np.testing.assert_array_equal(F.pad(t(IMAGE), [2, 1, 1, 0], mode="reflect").numpy(),
                                  [[[[5, 4, 3, 4, 5, 4], [2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4]]]])
    np.testing.assert_array_equal(F.pad(t(IMAGE), [1, 1, 1, 1], mode="circular").numpy(),
                                  [[[[5, 3, 4, 5, 3], [2, 0, 1, 2, 0], [5, 3, 4, 5, 3], [2, 0, 1, 2, 0]]]])
    # all-axes form: pairs from the first axis (or from the last with pad_from_left_axis=False)
    x = np.arange(6.0).reshape(1, 2, 3)
    assert F.pad(t(x), [1, 2, 0, 0, 0, 0]).shape == [4, 2, 3]
    assert F.pad(t(x), [1, 2, 0, 0, 0, 0], pad_from_left_axis=False).shape == [1, 2, 6]
    np.testing.assert_array_equal(F.pad(t(np.arange(3.0)), [1, 1]).numpy(), [0, 0, 1, 2, 0])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad, layout", [((2, 2, 5), [2, 1], "NCL"), ((2, 2, 3, 4), [2, 1, 1, 2], "NCHW"),
                                                ((1, 2, 3, 3, 4), [1, 2, 0, 1, 2, 0], "NCDHW"),
                                                ((2, 3, 4, 2), [2, 1, 1, 2], "NHWC")])
def test_pad_modes_match_numpy_and_gradients(mode, shape, pad, layout):
    x = rng.normal(size=shape)
    spatial = list(range(2, len(shape))) if layout[1] == "C" else list(range(1, len(shape) - 1))
    widths = [(0, 0)] * len(shape)
    for i, axis in enumerate(reversed(spatial)):
        widths[axis] = (pad[2 * i], pad[2 * i + 1])
    kwargs = {"constant_values": 0.5} if mode == "constant" else {}
    expected = np.pad(x, widths, mode=NUMPY_MODE[mode], **kwargs)
    out = F.pad(t(x), pad, mode=mode, value=0.5, data_format=layout)
    np.testing.assert_array_equal(out.numpy(), expected)
    check_grad(lambda a: F.pad(a, pad, mode=mode, value=0.5, data_format=layout), x)


def test_pad_layers_and_errors():
    x = t(rng.normal(size=(1, 2, 3, 4)))
    assert nn.Pad2D(1)(x).shape == [1, 2, 5, 6]
    assert nn.Pad1D([1, 2], mode="replicate")(t(rng.normal(size=(1, 2, 3)))).shape == [1, 2, 6]
    assert nn.Pad3D(1, mode="reflect")(t(rng.normal(size=(1, 1, 3, 3, 3)))).shape == [1, 1, 5, 5, 5]
    np.testing.assert_array_equal(nn.ZeroPad2D([1, 0, 0, 1])(x).numpy(),
                                  np.pad(x.numpy(), [(0, 0)] * 2 + [(0, 1), (1, 0)]))
    np.testing.assert_array_equal(F.zeropad2d(x, [1, 0, 0, 1]).numpy(), nn.ZeroPad2D([1, 0, 0, 1])(x).numpy())
    with pytest.raises(ValueError, match="takes 8 pad values"):
        F.pad(x, [1, 2, 3])
    with pytest.raises(ValueError, match="mode"):
        F.pad(x, [1, 1, 1, 1], mode="wrap")
    with pytest.raises(ValueError, match="at most 2"):
        F.pad(x, [0, 0, 3, 0], mode="reflect")
    with pytest.raises(ValueError, match="spatial"):
        F.pad(x, [1, 0, 0, 0, 0, 0, 0, 0], mode="reflect")
    with pytest.raises(ValueError, match="padding"):
        nn.Pad2D([1, 2, 3])


def test_interpolate_literals_from_paddle():
    np.testing.assert_array_equal(F.interpolate(t(IMAGE), scale_factor=2).numpy(),
                                  np.repeat(np.repeat(IMAGE, 2, 2), 2, 3))
    np.testing.assert_allclose(F.interpolate(t(IMAGE), size=[3, 4], mode="bilinear").numpy(),
                               [[[[0.0, 0.625, 1.375, 2.0], [1.5, 2.125, 2.875, 3.5], [3.0, 3.625, 4.375, 5.0]]]])
    np.testing.assert_allclose(F.interpolate(t(IMAGE), size=[3, 4], mode="bilinear", align_corners=True).numpy(),
                               [[[[0.0, 0.66666669, 1.33333337, 2.0], [1.5, 2.16666669, 2.83333337, 3.5],
                                  [3.0, 3.66666669, 4.33333337, 5.0]]]], rtol=1e-7)


def np_linear_resize(x, axis, n_out, align_corners=False, align_mode=0):
    """Reference linear resampling along one axis with Paddle's coordinate rules (float32 coordinates)."""
    n_in = x.shape[axis]
    i = np.arange(n_out, dtype=np.float32)
    ratio = np.float32((n_in - 1) / (n_out - 1) if align_corners else n_in / n_out)
    if align_corners or align_mode == 1:
        src = i * ratio
    else:
        src = np.maximum((i + np.float32(0.5)) * ratio - np.float32(0.5), np.float32(0))
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w = (src - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    return np.take(x, lo, axis) * (1 - w) + np.take(x, hi, axis) * w


@pytest.mark.parametrize("size, align_corners, align_mode", [([5, 7], False, 0), ([5, 7], True, 0), ([5, 7], False, 1),
                                                             ([2, 3], False, 0)])
def test_bilinear_matches_numpy_and_gradients(size, align_corners, align_mode):
    x = rng.normal(size=(2, 2, 3, 4))
    expected = np_linear_resize(np_linear_resize(x, 2, size[0], align_corners, align_mode), 3, size[1],
                                align_corners, align_mode)
    out = F.interpolate(t(x), size=size, mode="bilinear", align_corners=align_corners, align_mode=align_mode)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-7)
    check_grad(lambda a: F.interpolate(a, size=size, mode="bilinear", align_corners=align_corners,
                                       align_mode=align_mode), x)


def test_nearest_linear_trilinear_and_channels_last():
    x = rng.normal(size=(1, 2, 3, 4))
    near = F.interpolate(t(x), size=[5, 3]).numpy()
    rows, columns = (np.arange(5) * 3 / 5).astype(int), (np.arange(3) * 4 / 3).astype(int)
    np.testing.assert_array_equal(near, x[:, :, rows][..., columns])
    check_grad(lambda a: F.interpolate(a, size=[5, 3]), x)
    line = rng.normal(size=(1, 2, 4))
    np.testing.assert_allclose(F.interpolate(t(line), size=[7], mode="linear", data_format="NCW").numpy(),
                               np_linear_resize(line, 2, 7), rtol=1e-6)
    cube = rng.normal(size=(1, 1, 2, 3, 2))
    expected = cube
    for axis in (2, 3, 4):
        expected = np_linear_resize(expected, axis, 2 * cube.shape[axis])
    np.testing.assert_allclose(F.interpolate(t(cube), scale_factor=2, mode="trilinear").numpy(), expected, rtol=1e-6)
    check_grad(lambda a: F.interpolate(a, scale_factor=2, mode="trilinear"), cube)
    last = F.interpolate(t(x.transpose(0, 2, 3, 1)), scale_factor=2, mode="bilinear", data_format="NHWC")
    np.testing.assert_allclose(last.numpy().transpose(0, 3, 1, 2),
                               F.interpolate(t(x), scale_factor=2, mode="bilinear").numpy())


def test_upsample_layers_and_errors():
    x = t(rng.normal(size=(1, 2, 3, 4)))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(x).numpy(), F.upsample(x, scale_factor=2).numpy())
    np.testing.assert_array_equal(nn.UpsamplingNearest2D(size=[6, 8])(x).numpy(),
                                  F.interpolate(x, size=[6, 8]).numpy())
    np.testing.assert_allclose(nn.UpsamplingBilinear2D(scale_factor=2)(x).numpy(),
                               F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).numpy())
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="mode"):
        F.interpolate(x, scale_factor=2, mode="cubic")
    with pytest.raises(ValueError, match="5-D"):
        F.interpolate(x, scale_factor=2, mode="trilinear")
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, scale_factor=2, align_corners=True)


def test_pixel_shuffle_and_unshuffle():
    x = rng.normal(size=(2, 8, 2, 3))
    expected = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(F.pixel_shuffle(t(x), 2).numpy(), expected)
    np.testing.assert_array_equal(F.pixel_unshuffle(t(expected), 2).numpy(), x)
    np.testing.assert_array_equal(nn.PixelShuffle(2, "NHWC")(t(x.transpose(0, 2, 3, 1))).numpy(),
                                  expected.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(t(expected)).numpy(), x)
    check_grad(lambda a: F.pixel_shuffle(a, 2), x)
    with pytest.raises(ValueError, match="divisible"):
        F.pixel_shuffle(t(rng.normal(size=(1, 6, 2, 2))), 2)


def np_unfold(x, kernel, stride, pads, dilation):
    top, left, bottom, right = pads
    x = np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)])
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    blocks = [x[:, :, i * sh:i * sh + (kh - 1) * dh + 1:dh, j * sw:j * sw + (kw - 1) * dw + 1:dw].reshape(n, -1)
              for i in range(ho) for j in range(wo)]
    return np.stack(blocks, -1)


def test_unfold_and_fold():
    x = rng.normal(size=(2, 3, 5, 6))
    out = F.unfold(t(x), [2, 3], strides=[1, 2], paddings=[1, 0, 0, 1], dilations=[2, 1])
    np.testing.assert_array_equal(out.numpy(), np_unfold(x, (2, 3), (1, 2), (1, 0, 0, 1), (2, 1)))
    check_grad(lambda a: F.unfold(a, 2, strides=2, paddings=1), x)
    image = np.arange(9.0).reshape(1, 1, 3, 3) + 1
    cols = F.unfold(t(image), [2, 2])
    np.testing.assert_array_equal(F.fold(cols, [3, 3], [2, 2]).numpy(),
                                  [[[[1, 4, 3], [8, 20, 12], [7, 16, 9]]]])  # Paddle 3.3.1
    blocks = rng.normal(size=(2, 18, 9))
    check_grad(lambda a: F.fold(a, [5, 5], 3, strides=2, paddings=1), blocks)
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    x5 = rng.normal(size=(2, 3, 5, 5))
    unfolded = F.unfold(t(x5), 3, strides=2, paddings=1).numpy()
    y = rng.normal(size=unfolded.shape)
    folded = F.fold(t(y), [5, 5], 3, strides=2, paddings=1).numpy()
    np.testing.assert_allclose((unfolded * y).sum(), (x5 * folded).sum())
    assert nn.Unfold([2, 2])(t(image)).shape == [1, 4, 4]
    assert nn.Fold([3, 3], [2, 2])(cols).shape == [1, 1, 3, 3]
    with pytest.raises(ValueError, match="fold: input must be"):
        F.fold(t(blocks), [4, 4], 3)
    with pytest.raises(ValueError, match="paddings"):
        F.unfold(t(x), 2, paddings=[1, 2, 3])


def test_channel_shuffle():
    x = rng.normal(size=(2, 6, 2, 2))
    expected = x.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2)
    np.testing.assert_array_equal(F.channel_shuffle(t(x), 3).numpy(), expected)
    np.testing.assert_array_equal(nn.ChannelShuffle(3, "NHWC")(t(x.transpose(0, 2, 3, 1))).numpy(),
                                  expected.transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="divisible"):
        F.channel_shuffle(t(x), 4)


@pytest.mark.parametrize("layer, mode, widths", [
    (nn.ReflectionPad2D([1, 2, 0, 1]), "reflect", [(0, 1), (1, 2)]),
    (nn.ReplicationPad2D(1), "edge", [(1, 1), (1, 1)]),
    (nn.CircularPad2D([0, 1, 2, 0]), "wrap", [(2, 0), (0, 1)]),
    (nn.ZeroPad2d([1, 0, 0, 0]), "constant", [(0, 0), (1, 0)])])
def test_padding_classes(layer, mode, widths):
    x = rng.normal(size=(1, 2, 3, 4))
    np.testing.assert_array_equal(layer(t(x)).numpy(), np.pad(x, [(0, 0), (0, 0)] + widths, mode=mode))


def test_constant_1d_and_3d_padding_classes():
    seq = rng.normal(size=(1, 2, 3))
    np.testing.assert_array_equal(nn.ConstantPad1D(2, 0.5)(t(seq)).numpy(),
                                  np.pad(seq, [(0, 0), (0, 0), (2, 2)], constant_values=0.5))
    cube = rng.normal(size=(1, 1, 2, 3, 3))
    np.testing.assert_array_equal(nn.CircularPad3D(1)(t(cube)).numpy(),
                                  np.pad(cube, [(0, 0)] * 2 + [(1, 1)] * 3, "wrap"))
    assert nn.ReflectionPad1D([1, 2])(t(seq)).shape == [1, 2, 6]
    assert nn.ReplicationPad3D(1)(t(cube)).shape == [1, 1, 4, 5, 5]
    assert nn.ZeroPad3D(1)(t(cube)).shape == [1, 1, 4, 5, 5]
    assert nn.ZeroPad1D(1)(t(seq)).shape == [1, 2, 5] and nn.ConstantPad3D(1, 2.0)(t(cube)).shape == [1, 1, 4, 5, 5]


def test_bicubic_and_area_modes():
    ramp = np.arange(12.0).reshape(1, 1, 3, 4)
    np.testing.assert_allclose(F.interpolate(t(ramp), size=[4, 6], mode="bicubic").numpy()[0, 0, 0],
                               [-0.37391493, 0.11914065, 0.92585364, 1.49992774, 2.30664071, 2.79969621],
                               rtol=1e-6)  # Paddle 3.3.1
    aligned = F.interpolate(t(ramp), size=[4, 6], mode="bicubic", align_corners=True).numpy()[0, 0, 1]
    np.testing.assert_allclose(aligned,
                               [2.29629638, 2.80029641, 3.54429643, 4.04829646, 4.79229648, 5.29629638], rtol=1e-6)
    np.testing.assert_allclose(F.interpolate(t(ramp), size=[2, 3], mode="area").numpy()[0, 0],
                               [[2.5, 3.5, 4.5], [6.5, 7.5, 8.5]])
    # cubic convolution reproduces a linear ramp exactly away from the clamped borders
    line = np.tile(np.arange(8.0), (1, 1, 8, 1))
    upsampled = F.interpolate(t(line), size=[8, 15], mode="bicubic", align_corners=True).numpy()[0, 0, 0]
    np.testing.assert_allclose(upsampled[2:-2], np.linspace(0, 7, 15)[2:-2], atol=1e-6)
    x = rng.normal(size=(1, 2, 3, 4))
    check_grad(lambda a: F.interpolate(a, size=[5, 7], mode="bicubic"), x)
    check_grad(lambda a: F.interpolate(a, size=[2, 3], mode="area"), x)
    with pytest.raises(ValueError, match="area"):
        F.interpolate(t(rng.normal(size=(1, 1, 2, 2, 2))), size=[1, 1, 1], mode="area")


def test_temporal_shift():
    x = rng.normal(size=(6, 8, 2, 2))
    clip = x.reshape(2, 3, 8, 2, 2)
    expected = np.zeros_like(clip)
    expected[:, 1:, :2] = clip[:, :-1, :2]
    expected[:, :-1, 2:4] = clip[:, 1:, 2:4]
    expected[:, :, 4:] = clip[:, :, 4:]
    np.testing.assert_array_equal(F.temporal_shift(t(x), 3).numpy(), expected.reshape(x.shape))
    last = F.temporal_shift(t(x.transpose(0, 2, 3, 1)), 3, data_format="NHWC").numpy()
    np.testing.assert_array_equal(last.transpose(0, 3, 1, 2), expected.reshape(x.shape))
    check_grad(lambda a: F.temporal_shift(a, 3, 0.25), x)
    with pytest.raises(ValueError, match="seg_num"):
        F.temporal_shift(t(x), 4)


def np_grid_sample_zeros(x, grid):
    """Bilinear sampling with align_corners=True and zero padding, one point at a time."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in np.ndindex(n, *grid.shape[1:3]):
        px, py = (grid[b, i, j, 0] + 1) * (w - 1) / 2, (grid[b, i, j, 1] + 1) * (h - 1) / 2
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        for row, col in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            if 0 <= row < h and 0 <= col < w:
                out[b, :, i, j] += x[b, :, row, col] * (1 - abs(px - col)) * (1 - abs(py - row))
    return out


def test_affine_grid_and_grid_sample():
    theta = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]], [[1.2, -0.3, -0.2], [0.25, 0.8, 0.1]]])
    grid = F.affine_grid(t(theta), [2, 3, 4, 5]).numpy()
    xs, ys = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 4))
    base = np.stack([xs, ys, np.ones_like(xs)], -1)
    np.testing.assert_allclose(grid, base @ theta.transpose(0, 2, 1)[:, None], rtol=1e-12)
    check_grad(lambda a: F.affine_grid(a, [2, 3, 4, 5], align_corners=False), theta)
    image = rng.normal(size=(2, 2, 4, 5))
    identity = F.affine_grid(t(np.tile([[[1.0, 0, 0], [0, 1.0, 0]]], (2, 1, 1))), [2, 2, 4, 5])
    np.testing.assert_allclose(F.grid_sample(t(image), identity).numpy(), image, atol=1e-12)
    points = rng.uniform(-1.3, 1.3, size=(2, 3, 4, 2))
    np.testing.assert_allclose(F.grid_sample(t(image), t(points)).numpy(), np_grid_sample_zeros(image, points),
                               rtol=1e-10)
    for padding_mode in ("zeros", "border", "reflection"):
        for align_corners in (True, False):
            check_grad(lambda a, g: F.grid_sample(a, g, padding_mode=padding_mode, align_corners=align_corners),
                       image, points)
    nearest = F.grid_sample(t(image), t(points), mode="nearest", padding_mode="border").numpy()
    px = np.clip(np.floor((points[..., 0] + 1) * 2 + 0.5), 0, 4).astype(int)
    py = np.clip(np.floor((points[..., 1] + 1) * 1.5 + 0.5), 0, 3).astype(int)
    np.testing.assert_array_equal(nearest, np.moveaxis(image[np.arange(2)[:, None, None], :, py, px], -1, 1))
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(t(image), t(points), padding_mode="wrap")
    with pytest.raises(ValueError, match="theta"):
        F.affine_grid(t(theta[:, :1]), [2, 3, 4, 5])
