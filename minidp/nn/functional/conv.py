"""1-D and 2-D convolutions and their transposes, channels first or last: Paddle's arguments
normalised for the N-d ops of :mod:`.sliding` (im2col and one batched matmul; the transpose
scatters by col2im)."""

from __future__ import annotations

from typing import Any, Optional

from ...core.tensor import Tensor
from ._util import LAYOUTS, channels_first, check_tensor, to_format
from .sliding import KERNEL_AXES, conv_geometry, convolution, transposed_convolution

__all__ = [
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
]


def conv_input(op: str, x: Tensor, weight: Tensor, data_format: str, nd: int, weight_axes: str) -> Tensor:
    """A convolution's ``x`` as [N, C, *spatial], after checking it, its ``data_format`` (channels
    first or last) and that ``weight`` has ``nd`` kernel axes after ``weight_axes``."""
    x = channels_first(op, x, data_format, LAYOUTS[nd])
    check_tensor(op, "weight", weight)
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: weight must be [{weight_axes}, {KERNEL_AXES[nd]}], got shape {weight.shape}")
    return x


def conv_nd(
    op: str, nd: int, x: Tensor, weight: Tensor, bias: Optional[Tensor], options: tuple, data_format: str
) -> Tensor:
    """A convolution over ``nd`` spatial axes in ``data_format``; ``options`` are Paddle's
    (stride, padding, dilation, groups)."""
    stride, padding, dilation, groups = options
    x = conv_input(op, x, weight, data_format, nd, "O, C/groups")
    geometry = conv_geometry(op, x, tuple(weight.shape[2:]), stride, padding, dilation)
    return to_format(convolution(op, x, weight, bias, *geometry, groups), data_format)


def conv_transpose_nd(
    op: str, nd: int, x: Tensor, weight: Tensor, bias: Optional[Tensor], options: tuple, data_format: str
) -> Tensor:
    """A transposed convolution over ``nd`` spatial axes in ``data_format``; ``options`` are Paddle's
    (stride, padding, output_padding, dilation, groups, output_size)."""
    stride, padding, output_padding, dilation, groups, output_size = options
    x = conv_input(op, x, weight, data_format, nd, "C, O/groups")
    stride, pads, dilation = conv_geometry(op, x, tuple(weight.shape[2:]), stride, padding, dilation)
    out = transposed_convolution(op, x, weight, bias, stride, pads, dilation, groups, output_padding, output_size)
    return to_format(out, data_format)


def conv2d(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """Cross-correlation of ``x`` [N, C, H, W] (or [N, H, W, C] with ``data_format='NHWC'``) with
    ``weight`` [O, C/groups, kh, kw], plus ``bias`` [O].

    ``padding='SAME'`` sets ``dilation`` to 1, as Paddle's kernels do.
    """
    return conv_nd("conv2d", 2, x, weight, bias, (stride, padding, dilation, groups), data_format)


def conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCL",
    name: Optional[str] = None,
) -> Tensor:
    """Cross-correlation of ``x`` [N, C, L] (or [N, L, C] with ``data_format='NLC'``) with ``weight``
    [O, C/groups, k]. ``padding`` is an int, [left, right], 'SAME' or 'VALID'."""
    return conv_nd("conv1d", 1, x, weight, bias, (stride, padding, dilation, groups), data_format)


def conv2d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    output_size: Any = None,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """Transposed convolution (the gradient of conv2d with respect to its input) of ``x``
    [N, C, H, W] (or [N, H, W, C] with ``data_format='NHWC'``) with ``weight`` [C, O/groups, kh, kw].

    The output is (H - 1) * stride - (top + bottom) + dilation * (kh - 1) + 1 + output_padding
    high (and likewise wide); ``output_size`` may ask for a size in the range that allows.
    'SAME' and 'VALID' padding are computed from the input size as Paddle does.
    """
    options = (stride, padding, output_padding, dilation, groups, output_size)
    return conv_transpose_nd("conv2d_transpose", 2, x, weight, bias, options, data_format)


def conv1d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
    output_size: Any = None,
    data_format: str = "NCL",
    name: Optional[str] = None,
) -> Tensor:
    """Transposed 1-D convolution of ``x`` [N, C, L] (or [N, L, C] with ``data_format='NLC'``) with
    ``weight`` [C, O/groups, k]."""
    options = (stride, padding, output_padding, dilation, groups, output_size)
    return conv_transpose_nd("conv1d_transpose", 1, x, weight, bias, options, data_format)
