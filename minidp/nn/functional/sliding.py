"""The N-d sliding-window ops under every convolution and pooling: their geometry (sizes per axis,
padding, output sizes, the strided slices each kernel offset sees) and convolution, transposed
convolution, max and average pooling over any number of spatial axes, forward and backward together.

The 1-D, 2-D and 3-D functions only normalise Paddle's arguments and call these. A window op loops
over the kernel offsets only: each step moves a strided slice of the whole batch, so the array
library does the work, on NumPy and CuPy alike. Convolution gathers the slices into columns
(im2col) laid out as [C * kernel, N * positions], so that the forward pass and both gradients are
one matmul per group over the whole batch (a batched matmul over N is slow on NumPy), and adds
column gradients back with the same slices (col2im). Max pooling goes one axis at a time.

A convolution leaves its output stored [C, N, *spatial] (its matmul's layout); the ops here
allocate their arrays in their input's order, since NumPy runs an elementwise op between arrays
stored in different orders several times slower.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Iterator, Optional

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result, wrap
from ._util import channel_sums

_SIZE_FORMS = {1: "a positive int", 2: "a positive int or a pair of them", 3: "a positive int or three of them"}
KERNEL_AXES = {1: "k", 2: "kh, kw", 3: "kd, kh, kw"}
_PADDING_FORMS = {
    1: "[pad] or [left, right]",
    2: "a pair, four values (top, bottom, left, right)",
    3: "three or six values",
}
_WHOLE = (slice(None), slice(None))


def per_axis(value: Any, nd: int, op: str, arg: str) -> tuple:
    """An int or ``nd`` ints (a kernel size, stride or dilation) as ``nd`` positive ints."""
    values = (value,) * nd if isinstance(value, int) else tuple(value)
    if len(values) != nd or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"{op}: {arg} must be {_SIZE_FORMS[nd]}, got {value!r}")
    return values


def spatial_padding(op: str, padding: Any, sizes: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """Padding as (before, after) per spatial axis, flat, from an int, one value per axis, two per
    axis, 'SAME' or 'VALID'."""
    nd = len(sizes)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0,) * (2 * nd)
        if mode != "SAME":
            raise ValueError(f"{op}: padding string must be 'SAME' or 'VALID', got {padding!r}")
        pads = []
        for n, k, s, d in zip(sizes, kernel, stride, dilation):
            total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    values = (padding,) * nd if isinstance(padding, int) else tuple(padding)
    if len(values) == nd:
        values = tuple(v for v in values for _ in range(2))
    if len(values) != 2 * nd or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(
            f"{op}: padding must be a non-negative int, {_PADDING_FORMS[nd]}, 'SAME' or 'VALID'; got {padding!r}"
        )
    return values


def conv_geometry(op: str, x: Tensor, kernel: tuple, stride: Any, padding: Any, dilation: Any) -> tuple:
    """A convolution's stride, flat padding and dilation for x [N, C, *spatial]; ``padding='SAME'``
    sets the dilation to 1, as Paddle's kernels do."""
    nd = len(kernel)
    stride, dilation = per_axis(stride, nd, op, "stride"), per_axis(dilation, nd, op, "dilation")
    if isinstance(padding, str) and padding.upper() == "SAME":
        dilation = (1,) * nd
    return stride, spatial_padding(op, padding, tuple(x.shape[2:]), kernel, stride, dilation), dilation


def pool_geometry(op: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    """A pooling's kernel, stride (the kernel by default) and flat padding for x [N, C, *spatial]."""
    nd = x.ndim - 2
    kernel = per_axis(kernel_size, nd, op, "kernel_size")
    stride = kernel if stride is None else per_axis(stride, nd, op, "stride")
    return kernel, stride, spatial_padding(op, padding, tuple(x.shape[2:]), kernel, stride, (1,) * nd)


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


def output_sizes(op: str, sizes: tuple, pads: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """Number of window positions along each axis (no ceil mode)."""
    return tuple(
        output_size(n, before, after, k, s, d, False, op)
        for n, before, after, k, s, d in zip(sizes, pads[::2], pads[1::2], kernel, stride, dilation)
    )


def batch_second_zeros(xp: Any, shape: tuple, dtype: Any) -> Any:
    """A new array of zeros [N, C, ...] of ``shape`` stored as [C, N, ...]: the layout in which
    col2im adds whole channels at once and a convolution's matmul leaves its output, so that the
    gradients passed between convolutions need no transposing copy."""
    return xp.zeros((shape[1], shape[0]) + tuple(shape[2:]), dtype=dtype).swapaxes(0, 1)


def is_batch_second(data: Any) -> bool:
    """Whether ``data`` [N, C, ...] is stored as [C, N, ...], as convolutions leave their outputs
    (and the ops after them keep): the window ops then allocate their arrays alike, since an
    elementwise op between arrays stored in different orders runs several times slower."""
    return data.ndim > 2 and not data.flags.c_contiguous and data.swapaxes(0, 1).flags.c_contiguous


def zeros_stored_like(xp: Any, data: Any, shape: tuple) -> Any:
    """A new array of zeros [N, C, ...] of ``shape``, stored batch-second when ``data`` is."""
    if is_batch_second(data):
        return batch_second_zeros(xp, shape, data.dtype)
    return xp.zeros(shape, dtype=data.dtype)


def pad(xp: Any, data: Any, pads: tuple, value: float) -> Any:
    """``data`` [N, C, *spatial] padded by (before, after) per spatial axis (flat) with ``value``,
    stored in the same order as ``data``."""
    if not any(pads):
        return data
    shape = data.shape[:2] + tuple(n + b + a for n, b, a in zip(data.shape[2:], pads[::2], pads[1::2]))
    # zeros come from fresh pages, cheaper than a fill
    out = zeros_stored_like(xp, data, shape)
    if value != 0:
        out.fill(value)
    out[interior(pads, data.shape[2:])] = data
    return out


def interior(pads: tuple, sizes: tuple) -> tuple:
    """The index of the unpadded ``sizes`` inside an array padded by ``pads``."""
    return _WHOLE + tuple(slice(before, before + n) for before, n in zip(pads[::2], sizes))


@functools.lru_cache(maxsize=512)
def window_slices(kernel: tuple, stride: tuple, dilation: tuple, out_sizes: tuple) -> tuple:
    """For each kernel offset (row-major), its index into the columns [C, *kernel, N, *out_sizes]
    and the index of the strided slice of the padded input [C, N, *spatial] that it sees across the
    output (cached: a network asks for the same few geometries at every step)."""
    return tuple(
        (
            (slice(None),) + offset,
            _WHOLE
            + tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s) for i, s, d, o in zip(offset, stride, dilation, out_sizes)
            ),
        )
        for offset in itertools.product(*(range(k) for k in kernel))
    )


def im2col(xp: Any, padded: Any, windows: list, kernel: tuple, out_sizes: tuple) -> Any:
    """The columns [C, *kernel, N, *out_sizes] of padded [N, C, *spatial]: what each kernel offset
    sees at each output position, laid out so that a convolution over the whole batch is one matmul
    of the weight [O, C * prod(kernel)] by the columns [C * prod(kernel), N * prod(out_sizes)]."""
    n, c = padded.shape[:2]
    cols = xp.empty((c,) + tuple(kernel) + (n,) + tuple(out_sizes), dtype=padded.dtype)
    channels_first = padded.swapaxes(0, 1)
    for at, seen in windows:
        cols[at] = channels_first[seen]
    return cols


def col2im(xp: Any, cols: Any, windows: list, padded_shape: tuple) -> Any:
    """The columns [C, *kernel, N, *out_sizes] added back into a zero array of ``padded_shape``
    [N, C, *spatial] stored batch-second (overlaps add): im2col's adjoint."""
    canvas = batch_second_zeros(xp, padded_shape, cols.dtype)
    channels_first = canvas.swapaxes(0, 1)
    for at, seen in windows:
        channels_first[seen] += cols[at]
    return canvas


def _check_conv_operands(op: str, x: Tensor, weight: Tensor, layout: str) -> tuple:
    """The arrays of a convolution's ``x`` and ``weight``, checked to have one dtype and matching ranks
    (``layout`` names the weight's leading axes for the error message)."""
    xd, wd = x._data, weight._data
    if wd.ndim != xd.ndim:
        raise ValueError(f"{op}: weight must be [{layout}, {KERNEL_AXES[xd.ndim - 2]}], got shape {weight.shape}")
    if xd.dtype != wd.dtype:
        raise TypeError(
            f"{op}: input dtype {xd.dtype} differs from weight dtype {wd.dtype}; "
            f"convert the input with .astype('{wd.dtype}')"
        )
    return xd, wd


def _bias_grads(xp: Any, gx: Any, gw: Any, g: Any, bias: Optional[Tensor]) -> tuple:
    """The gradients for a convolution's parents ``(x, weight)`` or ``(x, weight, bias)``; the bias
    one sums the output gradient ``g`` [N, O, *spatial] over all but the channel axis."""
    if bias is None:
        return gx, gw
    return gx, gw, None if bias.stop_gradient else channel_sums(xp, g.reshape(g.shape[0], g.shape[1], -1))


def weight_gradient(xp: Any, g_mat: Any, cols: Any) -> Any:
    """``g_mat`` [groups, O, P] times the transpose of ``cols`` [groups, K, P]: a convolution's
    weight gradient, a sum over the P columns, stored in order as the optimizer wants it.

    Where the columns outnumber twice the rows K (big maps), it is the transpose of
    ``cols @ g_mat^T``, which OpenBLAS runs 15-40% faster for the conv shapes measured, copied in
    order; with fewer columns that copy of the weight-sized result costs more than it saves."""
    if cols.shape[2] < 2 * cols.shape[1]:
        return xp.matmul(g_mat, cols.transpose(0, 2, 1))
    return xp.ascontiguousarray(xp.matmul(cols, g_mat.transpose(0, 2, 1)).transpose(0, 2, 1))


#: Largest share of the column gradient, [C, N * positions] elements, that one kernel offset may
#: have for the input gradient to be built offset by offset (measured: 1.7x faster col2im-plus-matmul
#: on 8x8 ResNet maps, slower once the share outgrows the cache).
OFFSET_BY_OFFSET_LIMIT = 1 << 17


def _padded_input_gradient(
    xp: Any, w_mat: Any, g_mat: Any, windows: tuple, padded_shape: tuple, kernel: tuple, out_sizes: tuple
) -> Any:
    """The gradient of a convolution's padded input [N, C, *padded] (stored batch-second) from the
    weight [groups, O/groups, C/groups * kernel] and the output gradient [groups, O/groups,
    N * positions]: the weight's transpose times it, added back by col2im. Where one kernel
    offset's share is small, each offset's product is added while it is still in cache instead of
    building all the columns first."""
    n, c = padded_shape[:2]
    groups, _, columns = g_mat.shape
    if c * columns > OFFSET_BY_OFFSET_LIMIT:
        g_cols = xp.matmul(w_mat.transpose(0, 2, 1), g_mat).reshape((c,) + tuple(kernel) + (n,) + tuple(out_sizes))
        return col2im(xp, g_cols, windows, padded_shape)
    canvas = batch_second_zeros(xp, padded_shape, g_mat.dtype)
    channels_first = canvas.swapaxes(0, 1)
    per_offset = w_mat.reshape(groups, w_mat.shape[1], c // groups, len(windows))
    for k, (_, seen) in enumerate(windows):
        share = xp.matmul(per_offset[..., k].transpose(0, 2, 1), g_mat)
        channels_first[seen] += share.reshape((c, n) + tuple(out_sizes))
    return canvas


def convolution(
    op: str, x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: tuple, pads: tuple, dilation: tuple, groups: int
) -> Tensor:
    """Cross-correlation of x [N, C, *spatial] with weight [O, C/groups, *kernel], plus bias [O]:
    im2col, then one matmul per group over the whole batch (forward and both gradients)."""
    xd, wd = _check_conv_operands(op, x, weight, "O, C/groups")
    n, c = xd.shape[:2]
    sizes = xd.shape[2:]
    out_c, c_per_group = wd.shape[:2]
    kernel = wd.shape[2:]
    if groups < 1 or c % groups or out_c % groups or c // groups != c_per_group:
        raise ValueError(
            f"{op}: input has {c} channels and weight shape {list(wd.shape)}; with "
            f"groups={groups} the weight must be [O, C/groups, {KERNEL_AXES[len(kernel)]}] with O and C "
            "divisible by groups"
        )
    out_sizes = output_sizes(op, sizes, pads, kernel, stride, dilation)
    xp = backend.get_array_module(xd)
    padded = pad(xp, xd, pads, 0)
    windows = window_slices(kernel, stride, dilation, out_sizes)
    columns = n * math.prod(out_sizes)
    cols = im2col(xp, padded, windows, kernel, out_sizes).reshape(groups, -1, columns)
    w_mat = wd.reshape(groups, out_c // groups, -1)
    out = xp.matmul(w_mat, cols).reshape((out_c, n) + out_sizes)
    if bias is not None:
        out += bias._data.reshape((out_c,) + (1,) * (len(sizes) + 1))
    parents = (x, weight) if bias is None else (x, weight, bias)

    def backward(g):
        g_mat = g.swapaxes(0, 1).reshape(groups, out_c // groups, columns)
        gx = gw = None
        if not x.stop_gradient:
            gx = _padded_input_gradient(xp, w_mat, g_mat, windows, padded.shape, kernel, out_sizes)
            gx = gx[interior(pads, sizes)]
        if not weight.stop_gradient:
            gw = weight_gradient(xp, g_mat, cols).reshape(wd.shape)
        return _bias_grads(xp, gx, gw, g, bias)

    return result(out.swapaxes(0, 1), parents, backward)


def _transposed_extra(
    op: str, natural: list, stride: tuple, dilation: tuple, output_padding: Any, output_size: Any
) -> list:
    """How far a transposed convolution's output reaches past its natural size on each axis: from
    ``output_size`` (the spatial sizes, or the full shape) or ``output_padding``; each must stay
    below the stride or the dilation."""
    nd = len(natural)
    if output_size is not None:
        wanted = [output_size] * nd if isinstance(output_size, int) else [int(v) for v in output_size][-nd:]
        extra = [o - m for o, m in zip(wanted, natural)]
        if len(wanted) != nd or any(e < 0 or e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise ValueError(
                f"{op}: output_size {wanted} is out of reach; the reachable sizes run from {natural} to "
                f"{[m + max(s, d) - 1 for m, s, d in zip(natural, stride, dilation)]}"
            )
        return extra
    extra = [output_padding] * nd if isinstance(output_padding, int) else list(output_padding)
    if len(extra) != nd or any(e < 0 or e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise ValueError(f"{op}: output_padding must be smaller than stride or dilation, got {output_padding!r}")
    return extra


def transposed_convolution(
    op: str,
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    stride: tuple,
    pads: tuple,
    dilation: tuple,
    groups: int,
    output_padding: Any,
    output_size: Any,
) -> Tensor:
    """Transposed convolution (the gradient of a convolution with respect to its input) of x
    [N, C, *spatial] with weight [C, O/groups, *kernel], plus bias [O].

    Each input position scatters the weight scaled by its value: one matmul per group over the whole
    batch makes the columns and col2im adds them into the output; backward gathers with im2col. The
    output is the full scatter cropped by ``pads``, plus ``output_padding`` (or as much as
    ``output_size`` asks).
    """
    xd, wd = _check_conv_operands(op, x, weight, "C, O/groups")
    n, c = xd.shape[:2]
    sizes = xd.shape[2:]
    kernel = wd.shape[2:]
    if wd.shape[0] != c or groups < 1 or c % groups:
        raise ValueError(
            f"{op}: input has {c} channels and weight shape {list(wd.shape)}; the weight "
            f"must be [C, O/groups, {KERNEL_AXES[len(kernel)]}] with C divisible by groups={groups}"
        )
    out_per_group = wd.shape[1]
    out_c = out_per_group * groups
    full = [(n_in - 1) * s + d * (k - 1) + 1 for n_in, s, d, k in zip(sizes, stride, dilation, kernel)]
    natural = [f - before - after for f, before, after in zip(full, pads[::2], pads[1::2])]
    extra = _transposed_extra(op, natural, stride, dilation, output_padding, output_size)
    out_sizes = tuple(m + e for m, e in zip(natural, extra))
    xp = backend.get_array_module(xd)
    windows = window_slices(kernel, stride, dilation, sizes)
    w_mat = wd.reshape(groups, c // groups, -1)
    x_mat = xd.swapaxes(0, 1).reshape(groups, c // groups, -1)
    cols = xp.matmul(w_mat.transpose(0, 2, 1), x_mat).reshape((out_c,) + kernel + (n,) + sizes)
    canvas_shape = (n, out_c) + tuple(f + e for f, e in zip(full, extra))
    crop = interior(pads, out_sizes)
    out = col2im(xp, cols, windows, canvas_shape)[crop]
    if bias is not None:
        out = out + bias._data.reshape((1, out_c) + (1,) * len(sizes))
    parents = (x, weight) if bias is None else (x, weight, bias)

    def backward(g):
        g_canvas = xp.zeros(canvas_shape, dtype=g.dtype)
        g_canvas[crop] = g
        g_cols = im2col(xp, g_canvas, windows, kernel, sizes).reshape(groups, -1, x_mat.shape[2])
        gx = None
        if not x.stop_gradient:
            gx = xp.ascontiguousarray(xp.matmul(w_mat, g_cols).reshape((c, n) + sizes).swapaxes(0, 1))
        gw = None if weight.stop_gradient else weight_gradient(xp, x_mat, g_cols).reshape(wd.shape)
        return _bias_grads(xp, gx, gw, g, bias)

    return result(out, parents, backward)


def _pooled_sizes(op: str, sizes: tuple, kernel: tuple, stride: tuple, pads: tuple, ceil_mode: bool) -> tuple:
    """Output sizes, the padding grown by the positions ``ceil_mode`` adds after each axis, and those
    added positions per axis."""
    out_sizes = tuple(
        output_size(n, before, after, k, s, 1, ceil_mode, op)
        for n, before, after, k, s in zip(sizes, pads[::2], pads[1::2], kernel, stride)
    )
    extra = tuple(
        max(0, (o - 1) * s + k - n - before - after)
        for o, s, k, n, before, after in zip(out_sizes, stride, kernel, sizes, pads[::2], pads[1::2])
    )
    grown = tuple(p for before, after, e in zip(pads[::2], pads[1::2], extra) for p in (before, after + e))
    return out_sizes, grown, extra


def _first_maxima(padded: Any, windows: list, out: Any) -> Iterator[tuple]:
    """For each kernel offset in row-major order, its strided slice of ``padded`` and where that
    offset holds its window's first maximum ``out`` (a bool array shaped like ``out``)."""
    taken = None
    for _, seen in windows:
        hit = padded[seen] == out
        if taken is None:
            taken = hit.copy()
        else:
            hit &= ~taken
            taken |= hit
        yield seen, hit


def _axis_maxima(xp: Any, data: Any, axis: int, k: int, s: int, o: int) -> tuple:
    """1-D max pooling of ``data`` [N, C, *spatial] along spatial ``axis`` (window ``k``, stride
    ``s``, ``o`` outputs): the maxima, each one's offset in its window (the first of equal maxima;
    None when ``k`` is 1) and the offsets' slices of ``data``."""
    lead = (slice(None),) * (2 + axis)
    slices = [lead + (slice(i, i + s * (o - 1) + 1, s),) for i in range(k)]
    best, winner = data[slices[0]], None
    for i, index in enumerate(slices[1:], 1):
        seen = data[index]
        # offsets only grow, so the winner is the largest offset that beat every one before it
        beaten = xp.multiply(seen > best, i, dtype="uint8" if k < 256 else "int32")
        winner = beaten if winner is None else xp.maximum(winner, beaten, out=winner)
        best = xp.maximum(best, seen, out=None if i == 1 else best)
    if winner is not None and xp.isnan(best).any():
        _nan_wins(xp, winner, [data[index] for index in slices])
    return best, winner, slices


def _nan_wins(xp: Any, winner: Any, seen: list) -> None:
    """Make a window's last NaN its winner, as PyTorch does (a NaN compares false with anything,
    so the running maximum propagates it but never records where it came from)."""
    for i, values in enumerate(seen):
        winner[xp.isnan(values)] = i


def max_pool(op: str, x: Tensor, kernel: tuple, stride: tuple, pads: tuple, ceil_mode: bool, return_mask: bool) -> Any:
    """Largest value of each window of x [N, C, *spatial]; the gradient goes to the window's first
    maximum in row-major order (to its last NaN where it holds NaNs, as in PyTorch). With
    ``return_mask`` also the flat row-major index of each maximum in the unpadded input (int32).

    Separable: 1-D max pooling along the last spatial axis, then along each axis before it. Each
    step keeps which offset won (the first of equal maxima), so the winner is the first maximum
    along the leading axis among the first ones along the later axes: the window's first maximum
    in row-major order. Each step slices one axis only, so the array library moves whole rows
    (k_1 + ... + k_n slices instead of k_1 * ... * k_n); backward hands the gradient back through
    the steps in reverse. Measured forward plus backward: 2x2x2 windows on [8, 16, 16, 32, 32]
    13 -> 11 ms, on [8, 32, 8, 16, 16] 3.5 -> 2.1 ms, ResNet's 3x3 stride 2 on [32, 64, 16, 16]
    7.6 -> 5.9 ms.
    """
    xd = x._data
    sizes = xd.shape[2:]
    out_sizes, pads, _ = _pooled_sizes(op, sizes, kernel, stride, pads, ceil_mode)
    xp = backend.get_array_module(xd)
    padded = pad(xp, xd, pads, -xp.inf)
    steps = []
    out = padded
    for axis in reversed(range(len(kernel))):
        k, s, o = kernel[axis], stride[axis], out_sizes[axis]
        shape, tiles = out.shape, k == s and o * s == out.shape[2 + axis]
        out, winner, slices = _axis_maxima(xp, out, axis, k, s, o)
        steps.append((shape, tiles, winner, slices))
    if not out.flags.owndata:  # the first axis's windows are one wide: a view
        out = out.copy(order="K")

    def backward(g):
        for shape, tiles, winner, slices in reversed(steps):
            g_in = zeros_stored_like(xp, xd, shape)
            for i, index in enumerate(slices):
                if winner is None:
                    g_in[index] += g
                elif tiles:  # each input in one window: written in place
                    xp.multiply(g, winner == i, out=g_in[index])
                else:
                    g_in[index] += g * (winner == i)
            g = g_in
        return (g[interior(pads, sizes)],)

    pooled = result(out, (x,), backward)
    if not return_mask:
        return pooled
    windows = window_slices(kernel, stride, (1,) * len(kernel), out_sizes)
    winner = xp.zeros(out.shape, dtype="int64")
    for k, (_, hit) in enumerate(_first_maxima(padded, windows, out)):
        winner[hit] = k
    if xp.isnan(out).any():
        _nan_wins(xp, winner, [padded[seen] for _, seen in windows])
    flat = 0
    for axis, (offset, o, s, before, n) in enumerate(
        zip(xp.unravel_index(winner, kernel), out_sizes, stride, pads[::2], sizes)
    ):
        start = (xp.arange(o) * s - before).reshape((o,) + (1,) * (len(sizes) - axis - 1))
        flat = flat * n + offset + start
    return pooled, wrap(flat.astype("int32"))


def avg_pool(
    op: str,
    x: Tensor,
    kernel: tuple,
    stride: tuple,
    pads: tuple,
    ceil_mode: bool,
    exclusive: bool,
    divisor_override: Optional[float],
) -> Tensor:
    """Mean of each window of x [N, C, *spatial]; with ``exclusive`` padding does not count.

    Without ``exclusive`` the padding counts, but, as in Paddle (and PyTorch), the positions that
    ``ceil_mode`` adds past the padding do not: a window hanging over them divides by less than its
    size. ``divisor_override`` divides every window by one number.
    """
    xd = x._data
    sizes = xd.shape[2:]
    out_sizes, pads, extra = _pooled_sizes(op, sizes, kernel, stride, pads, ceil_mode)
    xp = backend.get_array_module(xd)
    padded = pad(xp, xd, pads, 0)
    windows = window_slices(kernel, stride, (1,) * len(kernel), out_sizes)
    total = xp.zeros(xd.shape[:2] + out_sizes, dtype=xd.dtype)
    for _, seen in windows:
        total += padded[seen]
    if divisor_override is not None:
        divisor = float(divisor_override)
    elif exclusive or any(extra):
        if exclusive:  # the input only
            inside = pad(xp, xp.ones((1, 1) + sizes, dtype=xd.dtype), pads, 0)
        else:  # the input and its padding, not the ceil_mode extension
            inside = xp.ones((1, 1) + padded.shape[2:], dtype=xd.dtype)
            for axis, e in enumerate(extra):
                inside[_WHOLE + (slice(None),) * axis + (slice(inside.shape[2 + axis] - e, None),)] = 0
        divisor = sum(inside[seen] for _, seen in windows)
    else:
        divisor = float(math.prod(kernel))
    out = total / divisor

    def backward(g):
        share = g / divisor
        g_padded = xp.zeros_like(padded)
        for _, seen in windows:
            g_padded[seen] += share
        return (g_padded[interior(pads, sizes)],)

    return result(out, (x,), backward)
