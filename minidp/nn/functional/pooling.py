"""Max, average, L^p and adaptive pooling and max-unpooling in 1-D and 2-D: Paddle's arguments
normalised for the N-d window ops of :mod:`.sliding`; the pooling steps that 3-D shares (the
channels-last layout, adaptive windows, unpooling)."""

from __future__ import annotations

import itertools
import math
from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import result, wrap
from ._util import LAYOUTS, channels_first, check_tensor, to_format
from .sliding import avg_pool, max_pool, pool_geometry

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "lp_pool1d",
    "lp_pool2d",
    "max_pool1d",
    "max_pool2d",
    "max_unpool1d",
    "max_unpool2d",
]


def max_pool_nd(
    op: str, nd: int, x: Tensor, window: tuple, return_mask: bool, ceil_mode: bool, data_format: str
) -> Any:
    """Max pooling over ``nd`` spatial axes in ``data_format``; ``window`` is Paddle's (kernel_size,
    stride, padding). As in Paddle, ``return_mask`` needs channels first."""
    x = channels_first(op, x, data_format, LAYOUTS[nd])
    if return_mask and data_format != LAYOUTS[nd][0]:
        raise ValueError(
            f"{op}: return_mask=True needs data_format={LAYOUTS[nd][0]!r} (as in Paddle), got {data_format!r}; "
            "transpose the input to channels first"
        )
    geometry = pool_geometry(op, x, *window)
    out = max_pool(op, x, *geometry, ceil_mode, return_mask)
    return out if return_mask else to_format(out, data_format)


def avg_pool_nd(op: str, nd: int, x: Tensor, window: tuple, options: tuple, data_format: str) -> Tensor:
    """Average pooling over ``nd`` spatial axes in ``data_format``; ``window`` is Paddle's
    (kernel_size, stride, padding), ``options`` its (ceil_mode, exclusive, divisor_override)."""
    x = channels_first(op, x, data_format, LAYOUTS[nd])
    geometry = pool_geometry(op, x, *window)
    return to_format(avg_pool(op, x, *geometry, *options), data_format)


def max_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Any:
    """Largest value of each window of [N, C, H, W] (or, with ``data_format='NHWC'``, [N, H, W, C])
    inputs; the gradient goes to the first maximum of the window.

    With ``return_mask`` (channels first only, as in Paddle) also returns, for each output, the flat
    index (h * W + w) of its maximum in the unpadded input.
    """
    return max_pool_nd("max_pool2d", 2, x, (kernel_size, stride, padding), return_mask, ceil_mode, data_format)


def avg_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    exclusive: bool = True,
    divisor_override: Optional[int] = None,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """Mean of each window of [N, C, H, W] (or [N, H, W, C]) inputs; with ``exclusive`` (Paddle's
    default) padding does not count.

    Without ``exclusive`` the padding counts, but, as in Paddle (and PyTorch), the positions
    that ``ceil_mode`` adds past the padding do not: a window hanging over them divides by less
    than kernel_size**2.
    """
    window, options = (kernel_size, stride, padding), (ceil_mode, exclusive, divisor_override)
    return avg_pool_nd("avg_pool2d", 2, x, window, options, data_format)


def max_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    name: Optional[str] = None,
) -> Any:
    """Largest value of each window of an [N, C, L] input."""
    return max_pool_nd("max_pool1d", 1, x, (kernel_size, stride, padding), return_mask, ceil_mode, "NCL")


def avg_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    exclusive: bool = True,
    ceil_mode: bool = False,
    name: Optional[str] = None,
) -> Tensor:
    """Mean of each window of an [N, C, L] input."""
    return avg_pool_nd("avg_pool1d", 1, x, (kernel_size, stride, padding), (ceil_mode, exclusive, None), "NCL")


def adaptive_bounds(n_in: int, n_out: int) -> list:
    """Paddle's adaptive windows: [floor(i n / o), ceil((i + 1) n / o)) for each output i."""
    return [((i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)) for i in range(n_out)]


def _adaptive_sizes(op: str, x: Tensor, output_size: Any, spatial: int) -> list:
    sizes = [output_size] * spatial if isinstance(output_size, int) or output_size is None else list(output_size)
    if len(sizes) != spatial:
        raise ValueError(f"{op}: output_size must be an int or {spatial} values, got {output_size!r}")
    in_sizes = x.shape[-spatial:]
    sizes = [n if s is None else s for s, n in zip(sizes, in_sizes)]
    if not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ValueError(f"{op}: output sizes must be positive ints, got {output_size!r}")
    return sizes


def averaging_matrix(xp: Any, n_in: int, n_out: int, dtype: Any) -> Any:
    """[n_out, n_in] rows that average each adaptive window."""
    matrix = xp.zeros((n_out, n_in), dtype=dtype)
    for i, (start, end) in enumerate(adaptive_bounds(n_in, n_out)):
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def global_avg_pool(x: Tensor) -> Tensor:
    """The mean of x [N, C, *spatial] over all its spatial axes, kept as size-1 axes: an adaptive
    average pool to size 1, the usual head of a CNN. One matrix-vector product; the gradient is
    stored like x (batch-second after a convolution), so that the ops before the pool get their
    gradients in the order they stored their outputs."""
    xd = x._data
    xp = backend.get_array_module(xd)
    n, c = xd.shape[:2]
    count = math.prod(xd.shape[2:])
    mean = xd.reshape(n, c, count) @ xp.full(count, 1.0 / count, dtype=xd.dtype)

    def backward(g):
        gx = xp.empty_like(xd)
        gx[...] = g * (1.0 / count)
        return (gx,)

    return result(mean.reshape((n, c) + (1,) * (xd.ndim - 2)), (x,), backward)


def adaptive_avg_pool2d(x: Tensor, output_size: Any, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """Mean over adaptive windows that cover [H, W] with ``output_size`` cells (None keeps a side),
    of [N, C, H, W] (or [N, H, W, C]) inputs.

    Separable: rows then columns are averaged by two small matrices (A_h @ x @ A_w^T); to one cell,
    a global mean.
    """
    x = channels_first("adaptive_avg_pool2d", x, data_format, LAYOUTS[2])
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", x, output_size, 2)
    if oh == ow == 1:
        return to_format(global_avg_pool(x), data_format)
    xp = backend.get_array_module(x._data)
    rows = wrap(averaging_matrix(xp, x.shape[2], oh, x._data.dtype))
    columns = wrap(averaging_matrix(xp, x.shape[3], ow, x._data.dtype).T.copy())
    return to_format(ops.matmul(ops.matmul(rows, x), columns), data_format)


def adaptive_avg_pool1d(x: Tensor, output_size: int, name: Optional[str] = None) -> Tensor:
    """Mean over adaptive windows of an [N, C, L] input."""
    channels_first("adaptive_avg_pool1d", x, "NCL", LAYOUTS[1])
    return ops.squeeze(adaptive_avg_pool2d(ops.unsqueeze(x, 2), [1, output_size]), 2)


def adaptive_max_pool(op: str, x: Tensor, output_size: Any, return_mask: bool) -> Any:
    """Largest value of each adaptive window over all spatial axes of x [N, C, ...]; the gradient
    goes to it (the first maximum in row-major order at ties, as in Paddle).

    With ``return_mask`` also returns the flat row-major index of each maximum over the spatial
    axes (h * W + w in 2-D, d * H * W + h * W + w in 3-D), as int32.
    """
    sizes = tuple(_adaptive_sizes(op, x, output_size, x.ndim - 2))
    xd = x._data
    xp = backend.get_array_module(xd)
    n, c = xd.shape[:2]
    spatial = xd.shape[2:]
    out = xp.empty((n, c) + sizes, dtype=xd.dtype)
    where = xp.empty((n, c) + sizes, dtype="int64")
    axes = [list(enumerate(adaptive_bounds(size, cells))) for size, cells in zip(spatial, sizes)]
    for cell in itertools.product(*axes):
        at = (slice(None), slice(None)) + tuple(i for i, _ in cell)
        window = xd[(slice(None), slice(None)) + tuple(slice(start, end) for _, (start, end) in cell)]
        k = window.reshape(n, c, -1).argmax(axis=2)
        out[at] = xp.take_along_axis(window.reshape(n, c, -1), k[..., None], axis=2)[..., 0]
        flat = 0
        for (_, (start, _)), offset, size in zip(cell, xp.unravel_index(k, window.shape[2:]), spatial):
            flat = flat * size + start + offset
        where[at] = flat

    def backward(g):
        grad = xp.zeros((n * c, math.prod(spatial)), dtype=g.dtype)
        xp.add.at(grad, (xp.arange(n * c)[:, None], where.reshape(n * c, -1)), g.reshape(n * c, -1))
        return (grad.reshape(xd.shape),)

    pooled = result(out, (x,), backward)
    return (pooled, wrap(where.astype("int32"))) if return_mask else pooled


def adaptive_max_pool2d(x: Tensor, output_size: Any, return_mask: bool = False, name: Optional[str] = None) -> Any:
    """Largest value of each adaptive window of an [N, C, H, W] input; the gradient goes to it.

    With ``return_mask`` also returns the flat index (h * W + w) of each maximum.
    """
    x = channels_first("adaptive_max_pool2d", x, "NCHW", LAYOUTS[2])
    return adaptive_max_pool("adaptive_max_pool2d", x, output_size, return_mask)


def adaptive_max_pool1d(x: Tensor, output_size: int, return_mask: bool = False, name: Optional[str] = None) -> Any:
    """Largest value of each adaptive window of an [N, C, L] input."""
    x = channels_first("adaptive_max_pool1d", x, "NCL", LAYOUTS[1])
    return adaptive_max_pool("adaptive_max_pool1d", x, output_size, return_mask)


def _lp_pool(
    op: str, x: Tensor, norm_type: float, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool
) -> Tensor:
    """(sum of x^p over each window)^(1/p), p = ``norm_type``, for a channels-first ``x``."""
    if not isinstance(norm_type, (int, float)) or norm_type <= 0:
        raise ValueError(f"{op}: norm_type must be a positive number, got {norm_type!r}")
    geometry = pool_geometry(op, x, kernel_size, stride, padding)
    sums = avg_pool(op, ops.pow(x, float(norm_type)), *geometry, ceil_mode, True, 1)
    return ops.pow(sums, 1.0 / norm_type)


def lp_pool2d(
    x: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """(sum of x^p over each window)^(1/p), p = ``norm_type`` (zero padding adds nothing), of
    [N, C, H, W] (or [N, H, W, C]) inputs."""
    x = channels_first("lp_pool2d", x, data_format, LAYOUTS[2])
    return to_format(_lp_pool("lp_pool2d", x, norm_type, kernel_size, stride, padding, ceil_mode), data_format)


def lp_pool1d(
    x: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    data_format: str = "NCL",
    name: Optional[str] = None,
) -> Tensor:
    """L^p pooling of an [N, C, L] input (``data_format='NLC'`` for channels last)."""
    x = channels_first("lp_pool1d", x, data_format, LAYOUTS[1])
    return to_format(_lp_pool("lp_pool1d", x, norm_type, kernel_size, stride, padding, ceil_mode), data_format)


def unpool_scatter(op: str, x: Tensor, indices: Tensor, out_spatial: tuple) -> Tensor:
    """The core of max-unpooling: each value of x [N, C, ...] goes to the flat position over
    ``out_spatial`` that its index names (row-major), every other position is zero; the gradient
    gathers from the same positions."""
    check_tensor(op, "indices", indices)
    if indices.shape != x.shape:
        raise ValueError(f"{op}: indices must have the input's shape {x.shape}, got {indices.shape}")
    xd, where = x._data, indices._data.astype("int64")
    n, c = xd.shape[:2]
    area = math.prod(out_spatial)
    if where.size and (int(where.min()) < 0 or int(where.max()) >= area):
        raise ValueError(f"{op}: indices must lie in [0, {area}) for an output of size {list(out_spatial)}")
    xp = backend.get_array_module(xd)
    flat_where = where.reshape(n * c, -1)
    rows = xp.arange(n * c)[:, None]
    out = xp.zeros((n * c, area), dtype=xd.dtype)
    out[rows, flat_where] = xd.reshape(n * c, -1)
    return result(
        out.reshape((n, c) + tuple(out_spatial)),
        (x,),
        lambda g: (g.reshape(n * c, area)[rows, flat_where].reshape(xd.shape),),
    )


def unpooled_size(op: str, sizes: Any, kernel: tuple, stride: tuple, pads: tuple, output_size: Any) -> tuple:
    """The spatial size max-unpooling restores: by default (n - 1) * stride - padding + kernel per
    axis (``pads`` holds (before, after) per axis, flat). ``output_size`` (the spatial sizes, or
    the full shape) may pick another size strictly within a stride of that default, as in Paddle:
    the sizes a pooling with that kernel and stride maps to the input's."""
    default = tuple(
        (n - 1) * s - before - after + k for n, s, k, before, after in zip(sizes, stride, kernel, pads[::2], pads[1::2])
    )
    if output_size is None:
        return default
    if not isinstance(output_size, (list, tuple)):
        raise TypeError(f"{op}: output_size must be a list or tuple of ints, got {output_size!r}")
    wanted = list(output_size)[2:] if len(output_size) == len(kernel) + 2 else list(output_size)
    if len(wanted) != len(kernel):
        raise ValueError(
            f"{op}: output_size must hold {len(kernel)} sizes (or {len(kernel) + 2} with batch and channels), "
            f"got {list(output_size)}"
        )
    for axis, (size, usual, s) in enumerate(zip(wanted, default, stride)):
        if not usual - s < size < usual + s:
            raise ValueError(
                f"{op}: output_size {list(output_size)} is invalid: spatial size {axis} must lie strictly "
                f"between {usual - s} and {usual + s}"
            )
    return tuple(int(size) for size in wanted)


def max_unpool(
    op: str, x: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any
) -> Tensor:
    """The inverse of a max pooling with ``return_mask`` over the spatial axes of a channels-first
    ``x``: each value goes back to the flat position its index names, every other position is zero."""
    kernel, stride, pads = pool_geometry(op, x, kernel_size, stride, padding)
    return unpool_scatter(op, x, indices, unpooled_size(op, x.shape[2:], kernel, stride, pads, output_size))


def max_unpool2d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCHW",
    output_size: Any = None,
    name: Optional[str] = None,
) -> Tensor:
    """The inverse of max_pool2d with ``return_mask``: each value goes back to the flat position
    (h * W + w) its index names, every other position is zero."""
    x = channels_first("max_unpool2d", x, data_format, ("NCHW",))
    return max_unpool("max_unpool2d", x, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCL",
    output_size: Any = None,
    name: Optional[str] = None,
) -> Tensor:
    """The inverse of max_pool1d with ``return_mask`` for an [N, C, L] input."""
    check_tensor("max_unpool1d", "x", x)
    if data_format != "NCL" or x.ndim != 3:
        raise ValueError(
            f"max_unpool1d: expects a 3-D input and data_format 'NCL', got shape {x.shape} and {data_format!r}"
        )
    return max_unpool("max_unpool1d", x, indices, kernel_size, stride, padding, output_size)
