"""unfold (im2col) and fold (col2im): sliding blocks as columns and back, each the other's gradient."""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_tensor
from . import sliding
from .sliding import col2im, im2col, interior, pad, per_axis, window_slices

__all__ = [
    "fold",
    "unfold",
]


def _block_geometry(op: str, kernel_sizes: Any, strides: Any, paddings: Any, dilations: Any) -> tuple:
    """Kernel, stride, dilation pairs and padding as (top, bottom, left, right).

    Paddle's paddings are an int, [pad_h, pad_w] or [top, left, bottom, right].
    """
    kernel, stride, dilation = (
        per_axis(kernel_sizes, 2, op, "kernel_sizes"),
        per_axis(strides, 2, op, "strides"),
        per_axis(dilations, 2, op, "dilations"),
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
    out_hw = sliding.output_sizes("unfold", (h, w), pads, kernel, stride, dilation)
    xp = backend.get_array_module(xd)
    padded = pad(xp, xd, pads, 0)
    windows = window_slices(kernel, stride, dilation, out_hw)
    cols = im2col(xp, padded, windows, kernel, out_hw)
    blocks = cols.reshape(c * kernel[0] * kernel[1], n, out_hw[0] * out_hw[1]).swapaxes(0, 1)

    def backward(g):
        g_cols = g.swapaxes(0, 1).reshape(cols.shape)
        return (col2im(xp, g_cols, windows, padded.shape)[interior(pads, (h, w))],)

    return result(xp.ascontiguousarray(blocks), (x,), backward)


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
    h, w = per_axis(output_sizes, 2, "fold", "output_sizes")
    out_hw = sliding.output_sizes("fold", (h, w), pads, kernel, stride, dilation)
    xd = x._data
    blocks = kernel[0] * kernel[1]
    if xd.ndim != 3 or xd.shape[1] % blocks or xd.shape[2] != out_hw[0] * out_hw[1]:
        raise ValueError(
            f"fold: input must be [N, C * {blocks}, {out_hw[0] * out_hw[1]}] for these sizes, got {x.shape}"
        )
    n, c = xd.shape[0], xd.shape[1] // blocks
    xp = backend.get_array_module(xd)
    cols = xd.swapaxes(0, 1).reshape((c,) + kernel + (n,) + out_hw)
    windows = window_slices(kernel, stride, dilation, out_hw)
    canvas = col2im(xp, cols, windows, (n, c, h + pads[0] + pads[1], w + pads[2] + pads[3]))

    def backward(g):
        g_cols = im2col(xp, pad(xp, g, pads, 0), windows, kernel, out_hw)
        return (xp.ascontiguousarray(g_cols.reshape(xd.shape[1], n, xd.shape[2]).swapaxes(0, 1)),)

    return result(canvas[interior(pads, (h, w))], (x,), backward)
