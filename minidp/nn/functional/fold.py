"""unfold (im2col) and fold (col2im): sliding blocks as columns and back, each the other's gradient."""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_tensor, output_size, pad_spatial, pair, window_slices

__all__ = [
    "fold",
    "unfold",
]


def _block_geometry(op: str, kernel_sizes: Any, strides: Any, paddings: Any, dilations: Any) -> tuple:
    """Kernel, stride, dilation pairs and padding as (top, bottom, left, right).

    Paddle's paddings are an int, [pad_h, pad_w] or [top, left, bottom, right].
    """
    kernel, stride, dilation = (
        pair(kernel_sizes, op, "kernel_sizes"),
        pair(strides, op, "strides"),
        pair(dilations, op, "dilations"),
    )
    values = [paddings] * 4 if isinstance(paddings, int) else list(paddings)
    if len(values) == 2:
        values = values * 2
    if len(values) != 4 or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(
            f"{op}: paddings must be a non-negative int, [pad_h, pad_w] or [top, left, bottom, right], got {paddings!r}"
        )
    top, left, bottom, right = values
    return kernel, stride, dilation, (top, bottom, left, right)


def unfold(
    x: Tensor, kernel_sizes: Any, strides: Any = 1, paddings: Any = 0, dilations: Any = 1, name: Optional[str] = None
) -> Tensor:
    """[N, C, H, W] -> [N, C * kh * kw, L]: every sliding block as a column (L blocks)."""
    check_tensor("unfold", "x", x)
    if x.ndim != 4:
        raise ValueError(f"unfold: expects a 4-D input [N, C, H, W], got shape {x.shape}")
    kernel, stride, dilation, pads = _block_geometry("unfold", kernel_sizes, strides, paddings, dilations)
    xd = x._data
    n, c, h, w = xd.shape
    out_hw = (
        output_size(h, pads[0], pads[1], kernel[0], stride[0], dilation[0], False, "unfold"),
        output_size(w, pads[2], pads[3], kernel[1], stride[1], dilation[1], False, "unfold"),
    )
    xp = backend.get_array_module(xd)
    padded = pad_spatial(xp, xd, pads, 0)
    windows = window_slices(kernel, stride, dilation, out_hw)
    cols = xp.empty((n, c, kernel[0], kernel[1]) + out_hw, dtype=xd.dtype)
    for i, j, rows, columns in windows:
        cols[:, :, i, j] = padded[:, :, rows, columns]

    def backward(g):
        g = g.reshape(cols.shape)
        g_padded = xp.zeros(padded.shape, dtype=g.dtype)
        for i, j, rows, columns in windows:
            g_padded[:, :, rows, columns] += g[:, :, i, j]
        return (g_padded[:, :, pads[0] : pads[0] + h, pads[2] : pads[2] + w],)

    return result(cols.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1]), (x,), backward)


def fold(
    x: Tensor,
    output_sizes: Any,
    kernel_sizes: Any,
    strides: Any = 1,
    paddings: Any = 0,
    dilations: Any = 1,
    name: Optional[str] = None,
) -> Tensor:
    """[N, C * kh * kw, L] -> [N, C, H, W]: columns summed back into their blocks (overlaps add)."""
    check_tensor("fold", "x", x)
    kernel, stride, dilation, pads = _block_geometry("fold", kernel_sizes, strides, paddings, dilations)
    h, w = pair(output_sizes, "fold", "output_sizes")
    out_hw = (
        output_size(h, pads[0], pads[1], kernel[0], stride[0], dilation[0], False, "fold"),
        output_size(w, pads[2], pads[3], kernel[1], stride[1], dilation[1], False, "fold"),
    )
    xd = x._data
    blocks = kernel[0] * kernel[1]
    if xd.ndim != 3 or xd.shape[1] % blocks or xd.shape[2] != out_hw[0] * out_hw[1]:
        raise ValueError(
            f"fold: input must be [N, C * {blocks}, {out_hw[0] * out_hw[1]}] for these sizes, got {x.shape}"
        )
    n, c = xd.shape[0], xd.shape[1] // blocks
    xp = backend.get_array_module(xd)
    cols = xd.reshape((n, c) + kernel + out_hw)
    windows = window_slices(kernel, stride, dilation, out_hw)
    canvas = xp.zeros((n, c, h + pads[0] + pads[1], w + pads[2] + pads[3]), dtype=xd.dtype)
    for i, j, rows, columns in windows:
        canvas[:, :, rows, columns] += cols[:, :, i, j]

    def backward(g):
        g_padded = pad_spatial(xp, g, pads, 0)
        g_cols = xp.empty(cols.shape, dtype=g.dtype)
        for i, j, rows, columns in windows:
            g_cols[:, :, i, j] = g_padded[:, :, rows, columns]
        return (g_cols.reshape(xd.shape),)

    return result(canvas[:, :, pads[0] : pads[0] + h, pads[2] : pads[2] + w], (x,), backward)
