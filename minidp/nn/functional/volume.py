"""3-D convolution (plain and transposed), pooling and max-unpooling: Paddle's arguments (channels
first or last) normalised for the N-d ops of :mod:`.sliding` and :mod:`.pooling`."""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from ._util import check_tensor
from .pooling import adaptive_avg_pool2d, adaptive_max_pool, averaging_matrix, max_unpool
from .sliding import avg_pool, conv_geometry, convolution, max_pool, pool_geometry, transposed_convolution

__all__ = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "avg_pool3d",
    "conv3d",
    "conv3d_transpose",
    "max_pool3d",
    "max_unpool3d",
]


def _channels_first(op: str, x: Tensor, data_format: str) -> Tensor:
    check_tensor(op, "x", x)
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"{op}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if x.ndim != 5:
        raise ValueError(f"{op}: expects a 5-D input [N, C, D, H, W], got shape {x.shape}")
    return x if data_format == "NCDHW" else ops.transpose(x, [0, 4, 1, 2, 3])


def _restore(out: Tensor, data_format: str) -> Tensor:
    return out if data_format == "NCDHW" else ops.transpose(out, [0, 2, 3, 4, 1])


def _conv_operands(op: str, x: Tensor, weight: Tensor, data_format: str, weight_layout: str) -> Tensor:
    """A 3-D convolution's ``x`` as [N, C, D, H, W], after checking that ``weight`` is 5-D
    (``weight_layout`` names its axes for the error message)."""
    x = _channels_first(op, x, data_format)
    check_tensor(op, "weight", weight)
    if weight.ndim != 5:
        raise ValueError(f"{op}: weight must be {weight_layout}, got shape {weight.shape}")
    return x


def conv3d(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCDHW",
    name: Optional[str] = None,
) -> Tensor:
    """Cross-correlation of ``x`` [N, C, D, H, W] with ``weight`` [O, C/groups, kd, kh, kw], plus ``bias``."""
    x = _conv_operands("conv3d", x, weight, data_format, "[O, C/groups, kd, kh, kw]")
    geometry = conv_geometry("conv3d", x, tuple(weight.shape[2:]), stride, padding, dilation)
    return _restore(convolution("conv3d", x, weight, bias, *geometry, groups), data_format)


def max_pool3d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    data_format: str = "NCDHW",
    name: Optional[str] = None,
) -> Any:
    """Largest value of each 3-D window; the gradient goes to the first maximum in (d, h, w) order.

    With ``return_mask`` also returns, for each output, the flat index (d * H * W + h * W + w) of
    its maximum in the unpadded input, as Paddle's ``max_pool3d`` does (what ``max_unpool3d`` takes).
    """
    x = _channels_first("max_pool3d", x, data_format)
    geometry = pool_geometry("max_pool3d", x, kernel_size, stride, padding)
    out = max_pool("max_pool3d", x, *geometry, ceil_mode, return_mask)
    if return_mask:
        return _restore(out[0], data_format), _restore(out[1], data_format)
    return _restore(out, data_format)


def avg_pool3d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    exclusive: bool = True,
    divisor_override: Optional[float] = None,
    data_format: str = "NCDHW",
    name: Optional[str] = None,
) -> Tensor:
    """Mean of each 3-D window; with ``exclusive`` (the default) padding does not count, and
    positions that ``ceil_mode`` adds never count."""
    x = _channels_first("avg_pool3d", x, data_format)
    geometry = pool_geometry("avg_pool3d", x, kernel_size, stride, padding)
    return _restore(avg_pool("avg_pool3d", x, *geometry, ceil_mode, exclusive, divisor_override), data_format)


def adaptive_avg_pool3d(x: Tensor, output_size: Any, data_format: str = "NCDHW", name: Optional[str] = None) -> Tensor:
    """Mean over adaptive windows of a [N, C, D, H, W] input (None in ``output_size`` keeps a side)."""
    x = _channels_first("adaptive_avg_pool3d", x, data_format)
    sizes = [output_size] * 3 if isinstance(output_size, int) else list(output_size)
    if len(sizes) != 3:
        raise ValueError(f"adaptive_avg_pool3d: output_size must be an int or three values, got {output_size!r}")
    n, c, depth, h, w = x.shape
    od, oh, ow = [s if s is not None else size for s, size in zip(sizes, (depth, h, w))]
    planes = adaptive_avg_pool2d(ops.reshape(x, [n, c * depth, h, w]), [oh, ow])
    rows = wrap(averaging_matrix(backend.get_array_module(x._data), depth, od, x._data.dtype))
    out = ops.matmul(rows, ops.reshape(planes, [n, c, depth, oh * ow]))
    return _restore(ops.reshape(out, [n, c, od, oh, ow]), data_format)


def adaptive_max_pool3d(x: Tensor, output_size: Any, return_mask: bool = False, name: Optional[str] = None) -> Any:
    """Largest value of each adaptive window of a [N, C, D, H, W] input; with ``return_mask`` also
    the flat index (d * H * W + h * W + w) of each maximum, as Paddle's."""
    x = _channels_first("adaptive_max_pool3d", x, "NCDHW")
    return adaptive_max_pool("adaptive_max_pool3d", x, output_size, return_mask)


def conv3d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
    output_size: Any = None,
    data_format: str = "NCDHW",
    name: Optional[str] = None,
) -> Tensor:
    """Transposed 3-D convolution of ``x`` [N, C, D, H, W] with ``weight`` [C, O/groups, kd, kh, kw]."""
    x = _conv_operands("conv3d_transpose", x, weight, data_format, "[C, O/groups, kd, kh, kw]")
    stride, pads, dilation = conv_geometry("conv3d_transpose", x, tuple(weight.shape[2:]), stride, padding, dilation)
    out = transposed_convolution(
        "conv3d_transpose", x, weight, bias, stride, pads, dilation, groups, output_padding, output_size
    )
    return _restore(out, data_format)


def max_unpool3d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCDHW",
    output_size: Any = None,
    name: Optional[str] = None,
) -> Tensor:
    """The inverse of a 3-D max pooling: each value of x [N, C, D, H, W] goes back to the flat
    position (d * H * W + h * W + w) its index names, every other position is zero."""
    check_tensor("max_unpool3d", "x", x)
    if data_format != "NCDHW" or x.ndim != 5:
        raise ValueError(
            f"max_unpool3d: expects a 5-D input and data_format 'NCDHW', got shape {x.shape} and {data_format!r}"
        )
    return max_unpool("max_unpool3d", x, indices, kernel_size, stride, padding, output_size)
