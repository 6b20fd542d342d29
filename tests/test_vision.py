"""Resampling of images (``minidp/nn/functional/vision.py``): interpolate/upsample in every mode,
pixel_shuffle/unshuffle, channel_shuffle, temporal_shift and their layers.

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float64).
"""

import numpy as np
import pytest

import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)
IMAGE = np.arange(6.0).reshape(1, 1, 2, 3)


def test_interpolate_literals_from_paddle():
    np.testing.assert_array_equal(
        F.interpolate(t(IMAGE), scale_factor=2).numpy(), np.repeat(np.repeat(IMAGE, 2, 2), 2, 3)
    )
    np.testing.assert_allclose(
        F.interpolate(t(IMAGE), size=[3, 4], mode="bilinear").numpy(),
        [[[[0.0, 0.625, 1.375, 2.0], [1.5, 2.125, 2.875, 3.5], [3.0, 3.625, 4.375, 5.0]]]],
    )
    np.testing.assert_allclose(
        F.interpolate(t(IMAGE), size=[3, 4], mode="bilinear", align_corners=True).numpy(),
        [
            [
                [
                    [0.0, 0.66666669, 1.33333337, 2.0],
                    [1.5, 2.16666669, 2.83333337, 3.5],
                    [3.0, 3.66666669, 4.33333337, 5.0],
                ]
            ]
        ],
        rtol=1e-7,
    )


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


@pytest.mark.parametrize(
    "size, align_corners, align_mode", [([5, 7], False, 0), ([5, 7], True, 0), ([5, 7], False, 1), ([2, 3], False, 0)]
)
def test_bilinear_matches_numpy_and_gradients(size, align_corners, align_mode):
    x = rng.normal(size=(2, 2, 3, 4))
    expected = np_linear_resize(
        np_linear_resize(x, 2, size[0], align_corners, align_mode), 3, size[1], align_corners, align_mode
    )
    out = F.interpolate(t(x), size=size, mode="bilinear", align_corners=align_corners, align_mode=align_mode)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-7)
    check_grad(
        lambda a: F.interpolate(a, size=size, mode="bilinear", align_corners=align_corners, align_mode=align_mode), x
    )


def test_nearest_linear_trilinear_and_channels_last():
    x = rng.normal(size=(1, 2, 3, 4))
    near = F.interpolate(t(x), size=[5, 3]).numpy()
    rows, columns = (np.arange(5) * 3 / 5).astype(int), (np.arange(3) * 4 / 3).astype(int)
    np.testing.assert_array_equal(near, x[:, :, rows][..., columns])
    check_grad(lambda a: F.interpolate(a, size=[5, 3]), x)
    line = rng.normal(size=(1, 2, 4))
    np.testing.assert_allclose(
        F.interpolate(t(line), size=[7], mode="linear", data_format="NCW").numpy(),
        np_linear_resize(line, 2, 7),
        rtol=1e-6,
    )
    cube = rng.normal(size=(1, 1, 2, 3, 2))
    expected = cube
    for axis in (2, 3, 4):
        expected = np_linear_resize(expected, axis, 2 * cube.shape[axis])
    np.testing.assert_allclose(F.interpolate(t(cube), scale_factor=2, mode="trilinear").numpy(), expected, rtol=1e-6)
    check_grad(lambda a: F.interpolate(a, scale_factor=2, mode="trilinear"), cube)
    last = F.interpolate(t(x.transpose(0, 2, 3, 1)), scale_factor=2, mode="bilinear", data_format="NHWC")
    np.testing.assert_allclose(
        last.numpy().transpose(0, 3, 1, 2), F.interpolate(t(x), scale_factor=2, mode="bilinear").numpy()
    )


def test_upsample_layers_and_errors():
    x = t(rng.normal(size=(1, 2, 3, 4)))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(x).numpy(), F.upsample(x, scale_factor=2).numpy())
    np.testing.assert_array_equal(nn.UpsamplingNearest2D(size=[6, 8])(x).numpy(), F.interpolate(x, size=[6, 8]).numpy())
    np.testing.assert_allclose(
        nn.UpsamplingBilinear2D(scale_factor=2)(x).numpy(),
        F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).numpy(),
    )
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
    np.testing.assert_array_equal(
        nn.PixelShuffle(2, "NHWC")(t(x.transpose(0, 2, 3, 1))).numpy(), expected.transpose(0, 2, 3, 1)
    )
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(t(expected)).numpy(), x)
    check_grad(lambda a: F.pixel_shuffle(a, 2), x)
    with pytest.raises(ValueError, match="divisible"):
        F.pixel_shuffle(t(rng.normal(size=(1, 6, 2, 2))), 2)


def test_channel_shuffle():
    x = rng.normal(size=(2, 6, 2, 2))
    expected = x.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2)
    np.testing.assert_array_equal(F.channel_shuffle(t(x), 3).numpy(), expected)
    np.testing.assert_array_equal(
        nn.ChannelShuffle(3, "NHWC")(t(x.transpose(0, 2, 3, 1))).numpy(), expected.transpose(0, 2, 3, 1)
    )
    with pytest.raises(ValueError, match="divisible"):
        F.channel_shuffle(t(x), 4)


def test_bicubic_and_area_modes():
    ramp = np.arange(12.0).reshape(1, 1, 3, 4)
    np.testing.assert_allclose(
        F.interpolate(t(ramp), size=[4, 6], mode="bicubic").numpy()[0, 0, 0],
        [-0.37391493, 0.11914065, 0.92585364, 1.49992774, 2.30664071, 2.79969621],
        rtol=1e-6,
    )  # Paddle 3.3.1
    aligned = F.interpolate(t(ramp), size=[4, 6], mode="bicubic", align_corners=True).numpy()[0, 0, 1]
    np.testing.assert_allclose(
        aligned, [2.29629638, 2.80029641, 3.54429643, 4.04829646, 4.79229648, 5.29629638], rtol=1e-6
    )
    np.testing.assert_allclose(
        F.interpolate(t(ramp), size=[2, 3], mode="area").numpy()[0, 0], [[2.5, 3.5, 4.5], [6.5, 7.5, 8.5]]
    )
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
