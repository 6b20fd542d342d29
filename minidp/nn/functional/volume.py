"""3-D convolution (plain and transposed), pooling and max-unpooling: Paddle's arguments (channels
first or last) normalised for the N-d ops of :mod:`.sliding` and :mod:`.pooling`."""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from ._util import LAYOUTS, channels_first, check_tensor, to_format
from .conv import conv_nd, conv_transpose_nd
from .pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool,
    averaging_matrix,
    avg_pool_nd,
    global_avg_pool,
    max_pool_nd,
    max_unpool,
)

__all__ = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "avg_pool3d",
    "conv3d",
    "conv3d_transpose",
    "max_pool3d",
    "max_unpool3d",
]


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
    return conv_nd("conv3d", 3, x, weight, bias, (stride, padding, dilation, groups), data_format)


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

    With ``return_mask`` (channels first only, as in Paddle) also returns, for each output, the flat
    index (d * H * W + h * W + w) of its maximum in the unpadded input, as Paddle's ``max_pool3d``
    does (what ``max_unpool3d`` takes).
    """
    return max_pool_nd("max_pool3d", 3, x, (kernel_size, stride, padding), return_mask, ceil_mode, data_format)


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
    window, options = (kernel_size, stride, padding), (ceil_mode, exclusive, divisor_override)
    return avg_pool_nd("avg_pool3d", 3, x, window, options, data_format)


def adaptive_avg_pool3d(x: Tensor, output_size: Any, data_format: str = "NCDHW", name: Optional[str] = None) -> Tensor:
    """Mean over adaptive windows of a [N, C, D, H, W] input (None in ``output_size`` keeps a side)."""
    x = channels_first("adaptive_avg_pool3d", x, data_format, LAYOUTS[3])
    sizes = [output_size] * 3 if isinstance(output_size, int) else list(output_size)
    if len(sizes) != 3:
        raise ValueError(f"adaptive_avg_pool3d: output_size must be an int or three values, got {output_size!r}")
    n, c, depth, h, w = x.shape
    od, oh, ow = [s if s is not None else size for s, size in zip(sizes, (depth, h, w))]
    if od == oh == ow == 1:
        return to_format(global_avg_pool(x), data_format)
    planes = adaptive_avg_pool2d(ops.reshape(x, [n, c * depth, h, w]), [oh, ow])
    rows = wrap(averaging_matrix(backend.get_array_module(x._data), depth, od, x._data.dtype))
    out = ops.matmul(rows, ops.reshape(planes, [n, c, depth, oh * ow]))
    return to_format(ops.reshape(out, [n, c, od, oh, ow]), data_format)


def adaptive_max_pool3d(x: Tensor, output_size: Any, return_mask: bool = False, name: Optional[str] = None) -> Any:
    """Largest value of each adaptive window of a [N, C, D, H, W] input; with ``return_mask`` also
    the flat index (d * H * W + h * W + w) of each maximum, as Paddle's."""
    x = channels_first("adaptive_max_pool3d", x, "NCDHW", LAYOUTS[3])
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
    options = (stride, padding, output_padding, dilation, groups, output_size)
    return conv_transpose_nd("conv3d_transpose", 3, x, weight, bias, options, data_format)


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
