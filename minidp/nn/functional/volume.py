"""3-D convolution (plain and transposed) and pooling, built from the 2-D ops applied to depth slices,
and 3-D max-unpooling.

A 3-D window is a stack of ``kd`` 2-D windows at depths d * stride + i * dilation. Each kernel
depth i takes the strided depth slice of the (depth-padded) input, folds its depths into the
batch, and runs the 2-D op over height and width; the kd results are then combined (summed for
convolution and average pooling; for max pooling the first depth with the largest value wins).
Gradients come from the 2-D ops.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from ...ops.indexing import take_along
from ._util import check_tensor, output_size, resolve_padding
from .conv import conv2d, conv2d_transpose
from .padding import pad_axes
from .pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool,
    averaging_matrix,
    avg_pool2d,
    max_pool2d,
    unpool_scatter,
    unpooled_size,
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


def _triple(value: Any, op: str, arg: str) -> tuple:
    values = (value,) * 3 if isinstance(value, int) else tuple(value)
    if len(values) != 3 or not all(isinstance(v, int) and v > 0 for v in values):
        raise ValueError(f"{op}: {arg} must be a positive int or three of them, got {value!r}")
    return values


def _split_padding(padding: Any, depth: int, kernel: tuple, stride: tuple, dilation: tuple, op: str) -> tuple:
    """(front, back) for depth and the 2-D padding for height and width (Paddle's forms: an int,
    three values, six values [front, back, top, bottom, left, right], 'SAME' or 'VALID')."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode not in ("SAME", "VALID"):
            raise ValueError(f"{op}: padding string must be 'SAME' or 'VALID', got {padding!r}")
        if mode == "VALID":
            return (0, 0), "VALID"
        total = max((math.ceil(depth / stride[0]) - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1 - depth, 0)
        return (total // 2, total - total // 2), "SAME"
    values = (padding,) * 3 if isinstance(padding, int) else tuple(padding)
    if len(values) == 3:
        values = (values[0], values[0], values[1], values[1], values[2], values[2])
    if len(values) != 6 or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(
            f"{op}: padding must be a non-negative int, three or six values, 'SAME' or 'VALID'; got {padding!r}"
        )
    return values[:2], values[2:]


def _channels_first(op: str, x: Tensor, data_format: str) -> Tensor:
    check_tensor(op, "x", x)
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"{op}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if x.ndim != 5:
        raise ValueError(f"{op}: expects a 5-D input [N, C, D, H, W], got shape {x.shape}")
    return x if data_format == "NCDHW" else ops.transpose(x, [0, 4, 1, 2, 3])


def _conv_operands(
    op: str, x: Tensor, weight: Tensor, stride: Any, dilation: Any, padding: Any, data_format: str, weight_layout: str
) -> tuple:
    """A 3-D convolution's ``x`` as [N, C, D, H, W], its stride and dilation as triples and its
    kernel size, after checking that ``weight`` is 5-D (``weight_layout`` names its axes for the
    error message). ``padding='SAME'`` sets the dilation to 1, as Paddle's kernels do."""
    x = _channels_first(op, x, data_format)
    check_tensor(op, "weight", weight)
    if weight.ndim != 5:
        raise ValueError(f"{op}: weight must be {weight_layout}, got shape {weight.shape}")
    stride, dilation = _triple(stride, op, "stride"), _triple(dilation, op, "dilation")
    if isinstance(padding, str) and padding.upper() == "SAME":
        dilation = (1, 1, 1)
    return x, stride, dilation, tuple(weight.shape[2:])


def _restore(out: Tensor, data_format: str) -> Tensor:
    return out if data_format == "NCDHW" else ops.transpose(out, [0, 2, 3, 4, 1])


def _depth_planes(x: Tensor, i: int, stride_d: int, dilation_d: int, depth_out: int) -> Tensor:
    """The depths that kernel depth ``i`` sees in ``x`` [N, C, D, H, W] (depth-padded already),
    folded into the batch: [N * depth_out, C, H, W]."""
    start = i * dilation_d
    depth_slice = x[:, :, start : start + stride_d * (depth_out - 1) + 1 : stride_d]
    return ops.reshape(
        ops.transpose(depth_slice, [0, 2, 1, 3, 4]), [x.shape[0] * depth_out] + x.shape[1:2] + x.shape[3:]
    )


def _unfold_depth(planes: Tensor, n: int, depth_out: int) -> Tensor:
    """[N * depth_out, C, H, W] planes back to [N, C, depth_out, H, W]."""
    return ops.transpose(ops.reshape(planes, [n, depth_out] + planes.shape[1:]), [0, 2, 1, 3, 4])


def _over_depth(
    x: Tensor, kernel_d: int, stride_d: int, dilation_d: int, depth_out: int, plane_op: Callable, combine: Callable
) -> Tensor:
    """Combine ``plane_op`` applied to each of the ``kernel_d`` strided depth slices of ``x``
    (depth-padded already); returns [N, C', depth_out, H', W']."""
    out = None
    for i in range(kernel_d):
        y = plane_op(_depth_planes(x, i, stride_d, dilation_d, depth_out), i)
        out = y if out is None else combine(out, y)
    return _unfold_depth(out, x.shape[0], depth_out)


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
    x, stride, dilation, kernel = _conv_operands(
        "conv3d", x, weight, stride, dilation, padding, data_format, "[O, C/groups, kd, kh, kw]"
    )
    (front, back), plane_padding = _split_padding(padding, x.shape[2], kernel, stride, dilation, "conv3d")
    depth_out = output_size(x.shape[2], front, back, kernel[0], stride[0], dilation[0], False, "conv3d")
    if front or back:
        x = pad_axes(x, [(0, 0), (0, 0), (front, back), (0, 0), (0, 0)])

    def plane(planes: Tensor, i: int) -> Tensor:
        return conv2d(planes, weight[:, :, i], None, stride[1:], plane_padding, dilation[1:], groups)

    out = _over_depth(x, kernel[0], stride[0], dilation[0], depth_out, plane, ops.add)
    if bias is not None:
        out = out + ops.reshape(bias, [1, -1, 1, 1, 1])
    return _restore(out, data_format)


def _pool_depth(op: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool) -> tuple:
    """Kernel, stride, (front, back + ceil extension), depth_out, plane padding and the ceil extension."""
    kernel = _triple(kernel_size, op, "kernel_size")
    stride = kernel if stride is None else _triple(stride, op, "stride")
    (front, back), plane_padding = _split_padding(padding, x.shape[2], kernel, stride, (1, 1, 1), op)
    depth = x.shape[2]
    depth_out = output_size(depth, front, back, kernel[0], stride[0], 1, ceil_mode, op)
    extra = max(0, (depth_out - 1) * stride[0] + kernel[0] - depth - front - back)
    return kernel, stride, (front, back + extra), depth_out, plane_padding, extra


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

    Each kernel depth's 2-D max pooling gives a candidate and its position in the plane; the
    first depth holding the largest candidate wins. With ``return_mask`` also returns, for each
    output, the flat index (d * H * W + h * W + w) of its maximum in the unpadded input, as
    Paddle's ``max_pool3d`` does (what ``max_unpool3d`` takes).
    """
    x = _channels_first("max_pool3d", x, data_format)
    kernel, stride, pads, depth_out, plane_padding, _ = _pool_depth(
        "max_pool3d", x, kernel_size, stride, padding, ceil_mode
    )
    n, _, _, height, width = x.shape
    if any(pads):
        x = pad_axes(x, [(0, 0), (0, 0), pads, (0, 0), (0, 0)], value=-math.inf)
    candidates = [
        max_pool2d(_depth_planes(x, i, stride[0], 1, depth_out), kernel[1:], stride[1:], plane_padding, True, ceil_mode)
        for i in range(kernel[0])
    ]
    values = ops.stack([value for value, _ in candidates])
    xp = backend.get_array_module(values._data)
    winner = values._data.argmax(axis=0)[None]
    pooled = _restore(_unfold_depth(take_along(values, winner, 0)[0], n, depth_out), data_format)
    if not return_mask:
        return pooled
    plane_index = xp.take_along_axis(xp.stack([where._data for _, where in candidates]), winner, 0)[0]
    first_depth = (xp.arange(n * depth_out) % depth_out * stride[0] - pads[0]).reshape(-1, 1, 1, 1)
    index = (first_depth + winner[0]) * (height * width) + plane_index
    return pooled, _restore(_unfold_depth(wrap(index.astype("int32")), n, depth_out), data_format)


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
    kernel, stride, pads, depth_out, plane_padding, extra = _pool_depth(
        "avg_pool3d", x, kernel_size, stride, padding, ceil_mode
    )
    depth = x.shape[2]
    if any(pads):
        x = pad_axes(x, [(0, 0), (0, 0), pads, (0, 0), (0, 0)])
    plane_divisor = 1 if divisor_override is not None else None

    def plane(planes: Tensor, i: int) -> Tensor:
        return avg_pool2d(planes, kernel[1:], stride[1:], plane_padding, ceil_mode, exclusive, plane_divisor)

    total = _over_depth(x, kernel[0], stride[0], 1, depth_out, plane, ops.add)
    if divisor_override is not None:
        return _restore(total / float(divisor_override), data_format)
    xp = backend.get_array_module(x._data)
    positions = xp.arange(depth_out)[:, None] * stride[0] + xp.arange(kernel[0])[None, :]
    real_end = pads[0] + depth if exclusive else pads[0] + depth + pads[1] - extra
    real_start = pads[0] if exclusive else 0
    counts = ((positions >= real_start) & (positions < real_end)).sum(axis=1)
    divisor = wrap(xp.maximum(counts, 1).astype(x._data.dtype).reshape(1, 1, depth_out, 1, 1))
    return _restore(total / divisor, data_format)


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
    """Transposed 3-D convolution of ``x`` [N, C, D, H, W] with ``weight`` [C, O/groups, kd, kh, kw].

    Each kernel depth i runs the 2-D transposed convolution on every input depth plane; the
    planes land at output depths d * stride + i * dilation (zeros between them), are summed over
    i, and the depth padding is cropped.
    """
    x, stride, dilation, kernel = _conv_operands(
        "conv3d_transpose", x, weight, stride, dilation, padding, data_format, "[C, O/groups, kd, kh, kw]"
    )
    n, _, depth, h, w = x.shape
    (front, back), plane_padding = _split_padding(padding, depth, kernel, stride, dilation, "conv3d_transpose")
    full = (depth - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1
    extras = [output_padding] * 3 if isinstance(output_padding, int) else list(output_padding)
    plane_size = None
    if output_size is not None:
        sizes = [output_size] * 3 if isinstance(output_size, int) else [int(v) for v in output_size][-3:]
        extras[0] = sizes[0] - (full - front - back)
        plane_size = sizes[1:]
    if len(extras) != 3 or not 0 <= extras[0] < max(stride[0], dilation[0]):
        raise ValueError(
            f"conv3d_transpose: output_padding/output_size give a depth outside the reachable range "
            f"(got output_padding={output_padding!r}, output_size={output_size!r})"
        )
    planes = ops.reshape(ops.transpose(x, [0, 2, 1, 3, 4]), [n * depth] + x.shape[1:2] + [h, w])
    xp = backend.get_array_module(x._data)
    spread_length = (depth - 1) * stride[0] + 1
    total = None
    for i in range(kernel[0]):
        y = conv2d_transpose(
            planes, weight[:, :, i], None, stride[1:], plane_padding, extras[1:], dilation[1:], groups, plane_size
        )
        y = ops.reshape(y, [n, depth] + y.shape[1:])
        if stride[0] > 1:
            gap = wrap(xp.zeros([n, depth, stride[0] - 1] + y.shape[2:], dtype=x._data.dtype))
            y = ops.reshape(ops.concat([ops.unsqueeze(y, 2), gap], axis=2), [n, depth * stride[0]] + y.shape[2:])
            y = y[:, :spread_length]
        before = i * dilation[0]
        y = pad_axes(y, [(0, 0), (before, full + extras[0] - spread_length - before), (0, 0), (0, 0), (0, 0)])
        total = y if total is None else total + y
    out = ops.transpose(total[:, front : full + extras[0] - back], [0, 2, 1, 3, 4])
    if bias is not None:
        out = out + ops.reshape(bias, [1, -1, 1, 1, 1])
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
    kernel = _triple(kernel_size, "max_unpool3d", "kernel_size")
    stride = kernel if stride is None else _triple(stride, "max_unpool3d", "stride")
    depth_pads, plane_padding = _split_padding(padding, x.shape[2], kernel, stride, (1, 1, 1), "max_unpool3d")
    plane_pads = resolve_padding(plane_padding, tuple(x.shape[3:]), kernel[1:], stride[1:], (1, 1), "max_unpool3d")
    out_dhw = unpooled_size(
        "max_unpool3d", x.shape[2:], kernel, stride, tuple(depth_pads) + tuple(plane_pads), output_size
    )
    return unpool_scatter("max_unpool3d", x, indices, out_dhw)
