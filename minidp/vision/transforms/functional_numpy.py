"""The image functions on NumPy ``HWC`` arrays (uint8 or float), without OpenCV.

Paddle routes NumPy images through OpenCV; minidp computes the same operations with NumPy (and
``nn.functional.interpolate`` for resizing, whose bilinear mode samples at pixel centres as
OpenCV's does). A 2-D ``HW`` image is treated as one channel and comes back 2-D. Results keep the
input's dtype; uint8 results are rounded and clipped to [0, 255].
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy

from ...nn.functional import interpolate
from ...ops.creation import to_tensor

# ITU-R 601 luma weights on R, G, B, as OpenCV and Pillow convert to grey.
_LUMA = numpy.array([0.299, 0.587, 0.114])
_RESIZE_MODES = ("nearest", "bilinear", "bicubic")


def _as_hwc(img: numpy.ndarray) -> numpy.ndarray:
    return img[:, :, None] if img.ndim == 2 else img


def _like(result: numpy.ndarray, img: numpy.ndarray) -> numpy.ndarray:
    """``result`` (float, HWC) back in ``img``'s dtype and rank."""
    if img.dtype == numpy.uint8:
        result = numpy.clip(numpy.round(result), 0, 255)
    result = result.astype(img.dtype)
    return result[:, :, 0] if img.ndim == 2 else result


def resize(img: numpy.ndarray, size: tuple, interpolation: str) -> numpy.ndarray:
    """``img`` resized to ``size`` = (height, width)."""
    if interpolation not in _RESIZE_MODES:
        raise ValueError(f"interpolation should be one of {_RESIZE_MODES} for NumPy images, got {interpolation!r}")
    batch = to_tensor(_as_hwc(img).astype(numpy.float64).transpose(2, 0, 1)[None])
    out = interpolate(batch, size=list(size), mode=interpolation, align_corners=False).numpy()[0]
    return _like(out.transpose(1, 2, 0), img)


def pad(img: numpy.ndarray, left: int, top: int, right: int, bottom: int, fill, padding_mode: str) -> numpy.ndarray:
    """``img`` with borders added; ``fill`` is a number or one value per channel (constant mode)."""
    widths = ((top, bottom), (left, right)) + (((0, 0),) if img.ndim == 3 else ())
    if padding_mode != "constant":
        return numpy.pad(img, widths, mode=padding_mode)
    out = numpy.pad(img, widths, mode="constant")
    mask = numpy.ones(img.shape[:2], bool)
    mask = ~numpy.pad(mask, widths[:2], mode="constant")
    out[mask] = numpy.asarray(fill, dtype=img.dtype) if img.ndim == 3 else fill
    return out


def rotate(img: numpy.ndarray, angle: float, interpolation: str, expand: bool, center, fill) -> numpy.ndarray:
    """``img`` turned ``angle`` degrees counter-clockwise about ``center`` (default: the middle).

    Each output pixel samples the input at its inverse-rotated position (nearest pixel, or
    bilinear); positions outside the input take ``fill``."""
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"interpolation should be 'nearest' or 'bilinear' for NumPy images, got {interpolation!r}")
    src = _as_hwc(img).astype(numpy.float64)
    h, w = src.shape[:2]
    cx, cy = ((w - 1) * 0.5, (h - 1) * 0.5) if center is None else center
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    out_w, out_h = w, h
    if expand:
        corners = numpy.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]], float) - (cx, cy)
        xs = corners[:, 0] * cos + corners[:, 1] * sin
        ys = -corners[:, 0] * sin + corners[:, 1] * cos
        out_w = int(math.ceil(xs.max() - xs.min() + 1 - 1e-9))
        out_h = int(math.ceil(ys.max() - ys.min() + 1 - 1e-9))
    oy, ox = numpy.mgrid[0:out_h, 0:out_w].astype(numpy.float64)
    dx, dy = ox - (out_w - 1) * 0.5 if expand else ox - cx, oy - (out_h - 1) * 0.5 if expand else oy - cy
    # Counter-clockwise on screen (y grows downwards): the inverse map turns by -angle.
    sx, sy = cos * dx - sin * dy + cx, sin * dx + cos * dy + cy
    fill_value = numpy.broadcast_to(numpy.asarray(fill, numpy.float64), (src.shape[2],))
    if interpolation == "nearest":
        ix, iy = numpy.floor(sx + 0.5).astype(int), numpy.floor(sy + 0.5).astype(int)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = numpy.where(inside[..., None], src[iy.clip(0, h - 1), ix.clip(0, w - 1)], fill_value)
        return _like(out, img)
    x0, y0 = numpy.floor(sx).astype(int), numpy.floor(sy).astype(int)
    out = numpy.zeros((out_h, out_w, src.shape[2]))
    for ddx, ddy in ((0, 0), (1, 0), (0, 1), (1, 1)):
        xi, yi = x0 + ddx, y0 + ddy
        weight = (1 - abs(sx - xi)) * (1 - abs(sy - yi))
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        out += weight[..., None] * numpy.where(inside[..., None], src[yi.clip(0, h - 1), xi.clip(0, w - 1)], fill_value)
    return _like(out, img)


def grey(img: numpy.ndarray) -> numpy.ndarray:
    """The luma of an RGB ``HWC`` image as float ``HW``."""
    return _as_hwc(img)[:, :, :3].astype(numpy.float64) @ _LUMA


def to_grayscale(img: numpy.ndarray, num_output_channels: int) -> numpy.ndarray:
    """``img`` as grey, ``HW1`` or ``HW3`` (the grey copied to every channel)."""
    luma = grey(img)[:, :, None]
    return _like(numpy.repeat(luma, num_output_channels, axis=2), _as_hwc(img))


def blend(img: numpy.ndarray, other, factor: float) -> numpy.ndarray:
    """``other + factor * (img - other)``: 0 gives ``other``, 1 gives ``img``, over 1 pushes past it."""
    src = _as_hwc(img).astype(numpy.float64)
    out = other + factor * (src - other)
    if img.dtype == numpy.uint8:
        out = numpy.clip(out, 0, 255)
    return _like(out, img)


def adjust_hue(img: numpy.ndarray, hue_factor: float) -> numpy.ndarray:
    """``img`` with its hue turned by ``hue_factor`` of a full circle (HSV, hue in [0, 1))."""
    rgb = _as_hwc(img)[:, :, :3].astype(numpy.float64)
    high, low = rgb.max(axis=2), rgb.min(axis=2)
    delta = high - low
    safe = numpy.where(delta == 0, 1, delta)
    r, g, b = (rgb[:, :, i] for i in range(3))
    hue = numpy.where(high == r, (g - b) / safe, numpy.where(high == g, 2 + (b - r) / safe, 4 + (r - g) / safe))
    hue = numpy.where(delta == 0, 0, hue / 6.0) + hue_factor
    hue = hue % 1.0
    sector = numpy.floor(hue * 6) % 6
    frac = hue * 6 - numpy.floor(hue * 6)
    p, q, t = low, high - delta * frac, low + delta * frac
    table = [(high, t, p), (q, high, p), (p, high, t), (p, q, high), (t, p, high), (high, p, q)]
    out = numpy.zeros_like(rgb)
    for k, channels in enumerate(table):
        out[sector == k] = numpy.stack(channels, axis=2)[sector == k]
    return _like(out, img)


def normalize(img: numpy.ndarray, mean: Sequence, std: Sequence, data_format: str, to_rgb: bool) -> numpy.ndarray:
    """``(img - mean) / std`` per channel, float32; ``to_rgb`` first turns BGR into RGB."""
    img = numpy.asarray(img, numpy.float32)
    shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
    mean = numpy.asarray(mean, numpy.float32).reshape(shape)
    std = numpy.asarray(std, numpy.float32).reshape(shape)
    if to_rgb:  # the last axis, as Paddle reverses it whatever the layout
        img = img[..., ::-1]
    return (img - mean) / std
