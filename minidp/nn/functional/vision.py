"""Resampling and rearranging images: interpolate/upsample, pixel_(un)shuffle, channel_shuffle,
temporal_shift.

Interpolation is separable: each spatial axis is resampled in turn by one op that gathers a few
neighbouring rows and blends them (nearest takes one row, linear two, cubic four); backward
scatters the gradient to the same rows with the same weights.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_tensor
from .padding import pad_axes
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = [
    "channel_shuffle",
    "interpolate",
    "pixel_shuffle",
    "pixel_unshuffle",
    "temporal_shift",
    "upsample",
]

_LINEAR_MODES = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_LAYOUTS = {3: ("NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}


def _resample_axis(x: Tensor, axis: int, taps: list) -> Tensor:
    """sum over taps of x.take(index) * weight along ``axis`` (a weight of None means 1)."""
    xd = x._data
    xp = backend.get_array_module(xd)
    shape = [1] * xd.ndim
    shape[axis] = -1
    taps = [(index, None if weight is None else weight.astype(xd.dtype).reshape(shape)) for index, weight in taps]
    out = None
    for index, weight in taps:
        picked = xp.take(xd, index, axis=axis)
        picked = picked if weight is None else picked * weight
        out = picked if out is None else out + picked

    def backward(g):
        summed = xp.zeros((xd.shape[axis],) + tuple(n for i, n in enumerate(g.shape) if i != axis), dtype=g.dtype)
        for index, weight in taps:
            xp.add.at(summed, index, xp.moveaxis(g if weight is None else g * weight, axis, 0))
        return (xp.moveaxis(summed, 0, axis),)

    return result(out, (x,), backward)


_CUBIC_A = -0.75


def _cubic_weights(xp: Any, t: Any) -> list:
    """The four cubic-convolution weights (a = -0.75) for taps at -1, 0, 1, 2 from the floor."""
    a = _CUBIC_A
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


def _source_taps(
    xp: Any, n_in: int, n_out: int, scale: Optional[float], mode: str, align_corners: bool, align_mode: int
) -> list:
    """For each output position along an axis, the (source rows, weights) taps that blend into it,
    following Paddle's coordinate rules, which compute source coordinates in float32 whatever the
    data's dtype."""
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale else n_in / n_out
    ratio = xp.float32(ratio)
    out_index = xp.arange(n_out, dtype="float32")
    if mode == "nearest":
        src = xp.floor(out_index * ratio + (0.5 if align_corners else 0.0))
        return [(xp.minimum(src.astype("int64"), n_in - 1), None)]
    if mode == "bicubic":
        src = out_index * ratio if align_corners else (out_index + xp.float32(0.5)) * ratio - xp.float32(0.5)
        base = xp.floor(src)
        weights = _cubic_weights(xp, (src - base).astype("float64"))
        return [(xp.clip(base.astype("int64") + k - 1, 0, n_in - 1), w) for k, w in enumerate(weights)]
    if align_corners or align_mode == 1:
        src = out_index * ratio
    else:
        src = xp.maximum((out_index + xp.float32(0.5)) * ratio - xp.float32(0.5), xp.float32(0))
    low = xp.minimum(xp.floor(src).astype("int64"), n_in - 1)
    high = xp.minimum(low + 1, n_in - 1)
    weight = src - low
    return [(low, 1 - weight), (high, weight)]


def interpolate(
    x: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool = False,
    align_mode: int = 0,
    data_format: Optional[str] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
    name: Optional[str] = None,
) -> Tensor:
    """Resize the spatial axes of ``x`` to ``size``, or by ``scale_factor``.

    Modes: 'nearest' (any of 3-, 4- or 5-D inputs), 'area' (adaptive average pooling, 3-D and
    4-D), 'linear' (3-D), 'bilinear' and 'bicubic' (4-D), 'trilinear' (5-D). ``align_corners``
    maps the corner pixels onto each other; otherwise ``align_mode=0`` uses half-pixel centres
    and ``align_mode=1`` the top-left corners (linear modes only).
    """
    check_tensor("interpolate", "x", x)
    if not isinstance(mode, str):
        raise TypeError(
            f"interpolate: mode must be a string such as 'nearest' or 'bilinear', got {type(mode).__name__}"
        )
    mode = mode.lower()
    if mode not in ("nearest", "area") and mode not in _LINEAR_MODES:
        raise ValueError(
            f"interpolate: mode must be 'nearest', 'area', 'linear', 'bilinear', 'bicubic' or 'trilinear', got {mode!r}"
        )
    ndim = x.ndim
    if ndim not in _LAYOUTS:
        raise ValueError(f"interpolate: expects a 3-, 4- or 5-D input, got shape {x.shape}")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != ndim:
        raise ValueError(f"interpolate: mode {mode!r} needs a {_LINEAR_MODES[mode]}-D input, got shape {x.shape}")
    if mode in ("nearest", "area") and align_corners:
        raise ValueError("interpolate: align_corners is only valid for the linear and cubic modes")
    layout = data_format or _LAYOUTS[ndim][0]
    if layout not in _LAYOUTS[ndim] and not (ndim == 3 and layout in ("NCL", "NLC")):
        raise ValueError(
            f"interpolate: data_format {data_format!r} does not fit a {ndim}-D input; use one of {_LAYOUTS[ndim]}"
        )
    axes = list(range(2, ndim)) if layout[1] == "C" else list(range(1, ndim - 1))
    in_sizes = [x.shape[a] for a in axes]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        if isinstance(size, Tensor):
            size = size.tolist()
        sizes = [int(size)] * len(axes) if isinstance(size, (int, float)) else [int(s) for s in size]
        scales = [None] * len(axes)
    else:
        if isinstance(scale_factor, Tensor):
            scale_factor = scale_factor.tolist()
        scales = (
            [float(scale_factor)] * len(axes)
            if isinstance(scale_factor, (int, float))
            else [float(s) for s in scale_factor]
        )
        if len(scales) != len(axes) or any(s <= 0 for s in scales):
            raise ValueError(f"interpolate: scale_factor must be positive, one per spatial axis, got {scale_factor!r}")
        sizes = [int(math.floor(n * s)) for n, s in zip(in_sizes, scales)]
        if recompute_scale_factor:
            scales = [None] * len(axes)
    if len(sizes) != len(axes) or any(s < 1 for s in sizes):
        raise ValueError(f"interpolate: size must give a positive length per spatial axis, got {sizes}")
    if mode == "area":
        return _area(x, sizes, layout)
    xp = backend.get_array_module(x._data)
    out = x
    for axis, n_in, n_out, scale in zip(axes, in_sizes, sizes, scales):
        out = _resample_axis(out, axis, _source_taps(xp, n_in, n_out, scale, mode, align_corners, align_mode))
    return out


def _area(x: Tensor, sizes: list, layout: str) -> Tensor:
    """'area' resizing: adaptive average pooling to ``sizes`` (3-D and 4-D inputs)."""
    if x.ndim == 5:
        raise ValueError("interpolate: mode 'area' supports 3-D and 4-D inputs")
    channels_last = layout[1] != "C"
    if channels_last:
        x = ops.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))
    out = adaptive_avg_pool1d(x, sizes[0]) if x.ndim == 3 else adaptive_avg_pool2d(x, sizes)
    return ops.transpose(out, [0] + list(range(2, x.ndim)) + [1]) if channels_last else out


def upsample(
    x: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool = False,
    align_mode: int = 0,
    data_format: Optional[str] = None,
    name: Optional[str] = None,
) -> Tensor:
    """Same as :func:`interpolate`."""
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


def _check_factor(op: str, x: Tensor, factor: Any, data_format: str) -> None:
    check_tensor(op, "x", x)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if x.ndim != 4:
        raise ValueError(f"{op}: expects a 4-D input, got shape {x.shape}")
    if not isinstance(factor, int) or factor < 1:
        raise ValueError(f"{op}: the factor must be a positive int, got {factor!r}")


def pixel_shuffle(x: Tensor, upscale_factor: int, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """[N, C r^2, H, W] -> [N, C, H r, W r]: channel blocks become r x r pixel blocks."""
    _check_factor("pixel_shuffle", x, upscale_factor, data_format)
    r = upscale_factor
    if data_format == "NHWC":
        x = ops.transpose(x, [0, 3, 1, 2])
    n, c, h, w = x.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: channels ({c}) must be divisible by upscale_factor^2 ({r * r})")
    out = ops.reshape(
        ops.transpose(ops.reshape(x, [n, c // (r * r), r, r, h, w]), [0, 1, 4, 2, 5, 3]),
        [n, c // (r * r), h * r, w * r],
    )
    return ops.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


def pixel_unshuffle(x: Tensor, downscale_factor: int, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """[N, C, H r, W r] -> [N, C r^2, H, W], the inverse of :func:`pixel_shuffle`."""
    _check_factor("pixel_unshuffle", x, downscale_factor, data_format)
    r = downscale_factor
    if data_format == "NHWC":
        x = ops.transpose(x, [0, 3, 1, 2])
    n, c, h, w = x.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height and width ({h}, {w}) must be divisible by {r}")
    out = ops.reshape(
        ops.transpose(ops.reshape(x, [n, c, h // r, r, w // r, r]), [0, 1, 3, 5, 2, 4]), [n, c * r * r, h // r, w // r]
    )
    return ops.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


def channel_shuffle(x: Tensor, groups: int, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """[N, g * k, H, W] -> channels reordered k-major: channel i * k + j moves to j * g + i."""
    _check_factor("channel_shuffle", x, groups, data_format)
    axis = 1 if data_format == "NCHW" else 3
    channels = x.shape[axis]
    if channels % groups:
        raise ValueError(f"channel_shuffle: channels ({channels}) must be divisible by groups ({groups})")
    shape = x.shape
    split = shape[:axis] + [groups, channels // groups] + shape[axis + 1 :]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    return ops.reshape(ops.transpose(ops.reshape(x, split), perm), shape)


def temporal_shift(
    x: Tensor, seg_num: int, shift_ratio: float = 0.25, name: Optional[str] = None, data_format: str = "NCHW"
) -> Tensor:
    """Temporal shift (TSM) of an [N * seg_num, C, H, W] input: the first ``shift_ratio`` of the
    channels take the previous segment's values, the second ``shift_ratio`` the next one's
    (zeros at the ends), the rest stay."""
    check_tensor("temporal_shift", "x", x)
    if data_format not in ("NCHW", "NHWC") or x.ndim != 4:
        raise ValueError(
            f"temporal_shift: expects a 4-D input and data_format 'NCHW' or 'NHWC', got shape "
            f"{x.shape} and {data_format!r}"
        )
    if not isinstance(seg_num, int) or seg_num < 1 or x.shape[0] % seg_num:
        raise ValueError(
            f"temporal_shift: seg_num must be a positive divisor of the batch ({x.shape[0]}), got {seg_num!r}"
        )
    if not 0 <= shift_ratio <= 0.5:
        raise ValueError(f"temporal_shift: shift_ratio must lie in [0, 0.5], got {shift_ratio!r}")
    if data_format == "NHWC":
        x = ops.transpose(x, [0, 3, 1, 2])
    shape = x.shape
    c = shape[1]
    first, second = int(c * shift_ratio), int(c * 2 * shift_ratio)
    clip = ops.reshape(x, [shape[0] // seg_num, seg_num] + shape[1:])
    no_pad = [(0, 0)] * 3
    from_previous = pad_axes(clip[:, :-1, :first], [(0, 0), (1, 0)] + no_pad)
    from_next = pad_axes(clip[:, 1:, first:second], [(0, 0), (0, 1)] + no_pad)
    out = ops.reshape(ops.concat([from_previous, from_next, clip[:, :, second:]], axis=2), shape)
    return ops.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out
