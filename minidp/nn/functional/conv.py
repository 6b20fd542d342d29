"""1-D and 2-D convolutions and their transposes: Paddle's arguments normalised for the N-d ops
of :mod:`.sliding` (im2col and one batched matmul; the transpose scatters by col2im)."""

from __future__ import annotations

from typing import Any, Optional

from ... import ops
from ...core.tensor import Tensor
from ._util import check_nchw, check_tensor
from .sliding import conv_geometry, convolution, transposed_convolution

__all__ = [
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
]


def _checked_ncl(op: str, x: Tensor, weight: Tensor, data_format: str, weight_layout: str) -> Tensor:
    """``x`` of a 1-D convolution checked and turned to [N, C, L]; ``weight`` must be 3-D
    (``weight_layout`` names its axes for the error message)."""
    check_tensor(op, "x", x)
    check_tensor(op, "weight", weight)
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"{op}: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if x.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"{op}: expects x [N, C, L] and weight {weight_layout}, got {x.shape} and {weight.shape}")
    return ops.transpose(x, [0, 2, 1]) if data_format == "NLC" else x


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
    """Cross-correlation of ``x`` [N, C, H, W] with ``weight`` [O, C/groups, kh, kw], plus ``bias`` [O].

    ``padding='SAME'`` sets ``dilation`` to 1, as Paddle's kernels do.
    """
    check_tensor("conv2d", "x", x)
    check_tensor("conv2d", "weight", weight)
    check_nchw("conv2d", x, data_format)
    geometry = conv_geometry("conv2d", x, tuple(weight.shape[2:]), stride, padding, dilation)
    return convolution("conv2d", x, weight, bias, *geometry, groups)


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
    """Cross-correlation of ``x`` [N, C, L] with ``weight`` [O, C/groups, k].
    ``padding`` is an int, [left, right], 'SAME' or 'VALID'."""
    x = _checked_ncl("conv1d", x, weight, data_format, "[O, C/groups, k]")
    geometry = conv_geometry("conv1d", x, tuple(weight.shape[2:]), stride, padding, dilation)
    out = convolution("conv1d", x, weight, bias, *geometry, groups)
    return ops.transpose(out, [0, 2, 1]) if data_format == "NLC" else out


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
    [N, C, H, W] with ``weight`` [C, O/groups, kh, kw].

    The output is (H - 1) * stride - (top + bottom) + dilation * (kh - 1) + 1 + output_padding
    high (and likewise wide); ``output_size`` may ask for a size in the range that allows.
    'SAME' and 'VALID' padding are computed from the input size as Paddle does.
    """
    check_tensor("conv2d_transpose", "x", x)
    check_tensor("conv2d_transpose", "weight", weight)
    check_nchw("conv2d_transpose", x, data_format)
    stride, pads, dilation = conv_geometry("conv2d_transpose", x, tuple(weight.shape[2:]), stride, padding, dilation)
    return transposed_convolution(
        "conv2d_transpose", x, weight, bias, stride, pads, dilation, groups, output_padding, output_size
    )


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
    """Transposed 1-D convolution of ``x`` [N, C, L] with ``weight`` [C, O/groups, k]."""
    x = _checked_ncl("conv1d_transpose", x, weight, data_format, "[C, O/groups, k]")
    stride, pads, dilation = conv_geometry("conv1d_transpose", x, tuple(weight.shape[2:]), stride, padding, dilation)
    out = transposed_convolution(
        "conv1d_transpose", x, weight, bias, stride, pads, dilation, groups, output_padding, output_size
    )
    return ops.transpose(out, [0, 2, 1]) if data_format == "NLC" else out
