"""Max and average pooling over 2-D windows, vectorised over the batch (loops over kernel offsets only)."""
from __future__ import annotations

from typing import Any, Optional

from ... import backend
from ...autograd.tensor import Tensor
from ...ops._util import result, wrap
from ._util import check_nchw, check_tensor, output_size, pad_spatial, pair, resolve_padding, window_slices


def _geometry(op: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              data_format: str) -> tuple:
    """Kernel, stride, padding (with the extra bottom/right rows ceil_mode needs), output size and
    the extra (bottom, right) rows and columns that ceil_mode added beyond the requested padding."""
    check_tensor(op, "x", x)
    check_nchw(op, x, data_format)
    kernel = pair(kernel_size, op, "kernel_size")
    stride = kernel if stride is None else pair(stride, op, "stride")
    h, w = x._data.shape[2:]
    top, bottom, left, right = resolve_padding(padding, (h, w), kernel, stride, (1, 1), op)
    ho = output_size(h, top, bottom, kernel[0], stride[0], 1, ceil_mode, op)
    wo = output_size(w, left, right, kernel[1], stride[1], 1, ceil_mode, op)
    extra = (max(0, (ho - 1) * stride[0] + kernel[0] - h - top - bottom),
             max(0, (wo - 1) * stride[1] + kernel[1] - w - left - right))
    return kernel, stride, (top, bottom + extra[0], left, right + extra[1]), (ho, wo), extra


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
               ceil_mode: bool = False, data_format: str = "NCHW", name: Optional[str] = None) -> Any:
    """Largest value of each window; the gradient goes to the first maximum of the window.

    With ``return_mask`` also returns, for each output, the flat index (h * W + w) of its maximum
    in the unpadded input.
    """
    kernel, stride, pads, out_hw, _ = _geometry("max_pool2d", x, kernel_size, stride, padding, ceil_mode,
                                                data_format)
    xd = x._data
    xp = backend.get_array_module(xd)
    padded = pad_spatial(xp, xd, pads, -xp.inf)
    windows = window_slices(kernel, stride, (1, 1), out_hw)
    stacked = xp.empty((len(windows),) + xd.shape[:2] + out_hw, dtype=xd.dtype)
    for k, (_, _, rows, columns) in enumerate(windows):
        stacked[k] = padded[:, :, rows, columns]
    winner = stacked.argmax(axis=0)
    out = xp.take_along_axis(stacked, winner[None], axis=0)[0]

    def backward(g):
        g_padded = xp.zeros(padded.shape, dtype=xd.dtype)
        for k, (_, _, rows, columns) in enumerate(windows):
            g_padded[:, :, rows, columns] += g * (winner == k)
        h, w = xd.shape[2:]
        return (g_padded[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + w],)

    pooled = result(out, (x,), backward)
    if not return_mask:
        return pooled
    ho, wo = out_hw
    row = (winner // kernel[1]) + (xp.arange(ho) * stride[0] - pads[0]).reshape(ho, 1)
    col = (winner % kernel[1]) + (xp.arange(wo) * stride[1] - pads[2])
    return pooled, wrap((row * xd.shape[3] + col).astype("int32"))


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: Optional[int] = None, data_format: str = "NCHW",
               name: Optional[str] = None) -> Tensor:
    """Mean of each window; with ``exclusive`` (Paddle's default) padding does not count.

    Without ``exclusive`` the padding counts, but, as in Paddle (and PyTorch), the positions
    that ``ceil_mode`` adds past the padding do not: a window hanging over them divides by less
    than kernel_size**2.
    """
    kernel, stride, pads, out_hw, extra = _geometry("avg_pool2d", x, kernel_size, stride, padding,
                                                    ceil_mode, data_format)
    xd = x._data
    xp = backend.get_array_module(xd)
    padded = pad_spatial(xp, xd, pads, 0)
    windows = window_slices(kernel, stride, (1, 1), out_hw)
    total = xp.zeros(xd.shape[:2] + out_hw, dtype=xd.dtype)
    for _, _, rows, columns in windows:
        total += padded[:, :, rows, columns]
    if divisor_override is not None:
        divisor = float(divisor_override)
    elif exclusive or any(extra):
        if exclusive:  # the input only
            inside = pad_spatial(xp, xp.ones((1, 1) + xd.shape[2:], dtype=xd.dtype), pads, 0)
        else:  # the input and its padding, not the ceil_mode extension
            inside = xp.ones((1, 1) + padded.shape[2:], dtype=xd.dtype)
            inside[:, :, inside.shape[2] - extra[0]:] = 0
            inside[:, :, :, inside.shape[3] - extra[1]:] = 0
        divisor = sum(inside[:, :, rows, columns] for _, _, rows, columns in windows)
    else:
        divisor = float(kernel[0] * kernel[1])
    out = total / divisor

    def backward(g):
        share = g / divisor
        g_padded = xp.zeros(padded.shape, dtype=xd.dtype)
        for _, _, rows, columns in windows:
            g_padded[:, :, rows, columns] += share
        h, w = xd.shape[2:]
        return (g_padded[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + w],)

    return result(out, (x,), backward)
