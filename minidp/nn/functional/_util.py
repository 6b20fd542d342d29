"""Argument normalisation and sliding-window geometry shared by convolution and pooling."""

from __future__ import annotations

import math
from typing import Any

from ...core.tensor import Tensor
from ...core.op_util import check_tensor

__all__ = [
    "check_tensor",
    "check_reduction",
    "pair",
    "check_nchw",
    "resolve_padding",
    "output_size",
    "pad_spatial",
    "window_slices",
    "reduce_loss",
    "length_pair",
    "length_padding",
]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(op: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def pair(value: Any, op: str, arg: str) -> tuple:
    """An int or a pair of ints as a pair of positive ints."""
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"{op}: {arg} must be a positive int or a pair of them, got {value!r}")
    return values


def check_nchw(op: str, x: Tensor, data_format: str) -> None:
    if data_format != "NCHW":
        raise ValueError(
            f"{op}: only data_format='NCHW' is supported, got {data_format!r}; "
            "transpose the input to [N, C, H, W] first"
        )
    if x._data.ndim != 4:
        raise ValueError(f"{op}: expects a 4-D input [N, C, H, W], got shape {x.shape}")


def resolve_padding(padding: Any, size: tuple, kernel: tuple, stride: tuple, dilation: tuple, op: str) -> tuple:
    """Padding as (top, bottom, left, right) from an int, a pair, four values, 'SAME' or 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return 0, 0, 0, 0
        if mode != "SAME":
            raise ValueError(f"{op}: padding string must be 'SAME' or 'VALID', got {padding!r}")
        pads = []
        for n, k, s, d in zip(size, kernel, stride, dilation):
            total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    values = (padding,) * 2 if isinstance(padding, int) else tuple(padding)
    if len(values) == 2:
        values = (values[0], values[0], values[1], values[1])
    if len(values) != 4 or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(
            f"{op}: padding must be a non-negative int, a pair, four values "
            f"(top, bottom, left, right), 'SAME' or 'VALID'; got {padding!r}"
        )
    return values


def output_size(n: int, pad_before: int, pad_after: int, k: int, s: int, d: int, ceil_mode: bool, op: str) -> int:
    """Number of window positions along one axis."""
    span = n + pad_before + pad_after - (k - 1) * d - 1
    if span < 0:
        raise ValueError(f"{op}: the window ({k} with dilation {d}) is larger than the padded input ({n})")
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= n + pad_before:
        out -= 1
    return out


def pad_spatial(xp: Any, data: Any, pads: tuple, value: float) -> Any:
    """``data`` [N, C, H, W] padded by (top, bottom, left, right) with ``value``."""
    top, bottom, left, right = pads
    if not any(pads):
        return data
    n, c, h, w = data.shape
    out = xp.full((n, c, h + top + bottom, w + left + right), value, dtype=data.dtype)
    out[:, :, top : top + h, left : left + w] = data
    return out


def window_slices(kernel: tuple, stride: tuple, dilation: tuple, out_hw: tuple) -> list:
    """For each kernel offset (i, j), the slices of the padded input that it sees across the output."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out_hw
    return [
        (i, j, slice(i * dh, i * dh + sh * (ho - 1) + 1, sh), slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))
        for i in range(kh)
        for j in range(kw)
    ]


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """A per-element loss tensor averaged, summed or returned as it is, by ``reduction``."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def length_pair(value: Any, op: str, arg: str) -> tuple:
    """A 1-D size (an int or a one-element list) as the (1, size) pair of an [N, C, 1, L] view."""
    values = [value] if isinstance(value, int) else list(value)
    if len(values) != 1 or not isinstance(values[0], int) or values[0] <= 0:
        raise ValueError(f"{op}: {arg} must be a positive int, got {value!r}")
    return 1, values[0]


def length_padding(padding: Any) -> Any:
    """1-D padding (an int, [p] or [left, right], or a string) as 2-D padding of an [N, C, 1, L] view."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return 0, padding
    values = list(padding)
    return 0, 0, values[0], values[-1]
