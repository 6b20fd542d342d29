"""2-D convolution by im2col: gather the input under every kernel offset, then one batched matmul;
its transpose (col2im) and the 1-D forms on [N, C, 1, L] views.

The gather loops over the kh*kw kernel offsets only; each step copies a strided slice of the
whole batch, so the work is done by the array library, on NumPy and CuPy alike. The backward
pass scatters the column gradients back with the same slices (col2im).
"""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import (
    check_nchw,
    check_tensor,
    length_padding,
    length_pair,
    output_size,
    pad_spatial,
    pair,
    resolve_padding,
    window_slices,
)

__all__ = [
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
]


def _check_operands(op: str, x: Tensor, weight: Tensor, data_format: str) -> tuple:
    """The arrays of a 2-D convolution's ``x`` and ``weight``, checked to be tensors, ``x``
    [N, C, H, W], and of one dtype."""
    check_tensor(op, "x", x)
    check_tensor(op, "weight", weight)
    check_nchw(op, x, data_format)
    xd, wd = x._data, weight._data
    if xd.dtype != wd.dtype:
        raise TypeError(
            f"{op}: input dtype {xd.dtype} differs from weight dtype {wd.dtype}; "
            f"convert the input with .astype('{wd.dtype}')"
        )
    return xd, wd


def _grads_with_bias(gx: Any, gw: Any, g: Any, bias: Optional[Tensor]) -> tuple:
    """The gradients for a convolution's parents ``(x, weight)`` or ``(x, weight, bias)``; the
    bias one sums the output gradient ``g`` [N, O, H, W] over all but the channel axis."""
    if bias is None:
        return gx, gw
    return gx, gw, None if bias.stop_gradient else g.sum(axis=(0, 2, 3))


def _stride_and_dilation(op: str, stride: Any, dilation: Any, padding: Any) -> tuple:
    """``stride`` and ``dilation`` as pairs; ``padding='SAME'`` sets the dilation to 1, as
    Paddle's kernels do."""
    stride, dilation = pair(stride, op, "stride"), pair(dilation, op, "dilation")
    if isinstance(padding, str) and padding.upper() == "SAME":
        dilation = (1, 1)
    return stride, dilation


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
    xd, wd = _check_operands("conv2d", x, weight, data_format)
    n, c, h, w = xd.shape
    out_c, c_per_group, kh, kw = wd.shape
    if groups < 1 or c % groups or out_c % groups or c // groups != c_per_group:
        raise ValueError(
            f"conv2d: input has {c} channels and weight shape {list(wd.shape)}; with "
            f"groups={groups} the weight must be [O, C/groups, kh, kw] with O and C "
            "divisible by groups"
        )
    stride, dilation = _stride_and_dilation("conv2d", stride, dilation, padding)
    pads = resolve_padding(padding, (h, w), (kh, kw), stride, dilation, "conv2d")
    ho = output_size(h, pads[0], pads[1], kh, stride[0], dilation[0], False, "conv2d")
    wo = output_size(w, pads[2], pads[3], kw, stride[1], dilation[1], False, "conv2d")
    xp = backend.get_array_module(xd)
    padded = pad_spatial(xp, xd, pads, 0)
    windows = window_slices((kh, kw), stride, dilation, (ho, wo))
    cols = xp.empty((n, c, kh, kw, ho, wo), dtype=xd.dtype)
    for i, j, rows, columns in windows:
        cols[:, :, i, j] = padded[:, :, rows, columns]
    k = c_per_group * kh * kw
    cols = cols.reshape(n, groups, k, ho * wo)
    w_mat = wd.reshape(groups, out_c // groups, k)
    out = xp.matmul(w_mat, cols).reshape(n, out_c, ho, wo)
    if bias is not None:
        out += bias._data.reshape(1, out_c, 1, 1)
    parents = (x, weight) if bias is None else (x, weight, bias)

    def backward(g):
        g_mat = g.reshape(n, groups, out_c // groups, ho * wo)
        gx = gw = None
        if not x.stop_gradient:
            g_cols = xp.matmul(w_mat.transpose(0, 2, 1), g_mat).reshape(n, c, kh, kw, ho, wo)
            g_padded = xp.zeros(padded.shape, dtype=xd.dtype)
            for i, j, rows, columns in windows:
                g_padded[:, :, rows, columns] += g_cols[:, :, i, j]
            gx = g_padded[:, :, pads[0] : pads[0] + h, pads[2] : pads[2] + w]
        if not weight.stop_gradient:
            gw = xp.matmul(g_mat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(wd.shape)
        return _grads_with_bias(gx, gw, g, bias)

    return result(out, parents, backward)


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
    """Cross-correlation of ``x`` [N, C, L] with ``weight`` [O, C/groups, k]: the 2-D op on
    [N, C, 1, L] views. ``padding`` is an int, [left, right], 'SAME' or 'VALID'."""
    x = _checked_ncl("conv1d", x, weight, data_format, "[O, C/groups, k]")
    out = conv2d(
        ops.unsqueeze(x, 2),
        ops.unsqueeze(weight, 2),
        bias,
        length_pair(stride, "conv1d", "stride"),
        length_padding(padding),
        length_pair(dilation, "conv1d", "dilation"),
        groups,
    )
    out = ops.squeeze(out, 2)
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
    'SAME' and 'VALID' padding are computed from the input size as Paddle does. Each
    input pixel scatters ``weight`` scaled by its value: a matmul makes the columns and the
    kernel-offset slices add them into the output (col2im); backward gathers with the same slices.
    """
    xd, wd = _check_operands("conv2d_transpose", x, weight, data_format)
    n, c, h, w = xd.shape
    if wd.ndim != 4 or wd.shape[0] != c or groups < 1 or c % groups:
        raise ValueError(
            f"conv2d_transpose: input has {c} channels and weight shape {list(wd.shape)}; the weight "
            f"must be [C, O/groups, kh, kw] with C divisible by groups={groups}"
        )
    _, out_per_group, kh, kw = wd.shape
    out_c = out_per_group * groups
    stride, dilation = _stride_and_dilation("conv2d_transpose", stride, dilation, padding)
    pads = resolve_padding(padding, (h, w), (kh, kw), stride, dilation, "conv2d_transpose")
    full = [(n_in - 1) * s + d * (k - 1) + 1 for n_in, s, d, k in zip((h, w), stride, dilation, (kh, kw))]
    natural = [full[0] - pads[0] - pads[1], full[1] - pads[2] - pads[3]]
    if output_size is not None:
        wanted = [output_size] * 2 if isinstance(output_size, int) else [int(v) for v in output_size][-2:]
        extra = [o - m for o, m in zip(wanted, natural)]
        if any(e < 0 or e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise ValueError(
                f"conv2d_transpose: output_size {wanted} is out of reach; sizes from {natural} to "
                f"{[m + max(s, d) - 1 for m, s, d in zip(natural, stride, dilation)]} are possible"
            )
    else:
        extra = [output_padding] * 2 if isinstance(output_padding, int) else list(output_padding)
        if len(extra) != 2 or any(e < 0 or e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise ValueError(
                f"conv2d_transpose: output_padding must be smaller than stride or dilation, got {output_padding!r}"
            )
    ho, wo = natural[0] + extra[0], natural[1] + extra[1]
    xp = backend.get_array_module(xd)
    windows = window_slices((kh, kw), stride, dilation, (h, w))
    k = out_per_group * kh * kw
    w_mat = wd.reshape(groups, c // groups, k)
    x_mat = xd.reshape(n, groups, c // groups, h * w)
    cols = xp.matmul(w_mat.transpose(0, 2, 1), x_mat).reshape(n, out_c, kh, kw, h, w)
    canvas = xp.zeros((n, out_c, full[0] + extra[0], full[1] + extra[1]), dtype=xd.dtype)
    for i, j, rows, columns in windows:
        canvas[:, :, rows, columns] += cols[:, :, i, j]
    out = canvas[:, :, pads[0] : pads[0] + ho, pads[2] : pads[2] + wo]
    if bias is not None:
        out = out + bias._data.reshape(1, out_c, 1, 1)
    parents = (x, weight) if bias is None else (x, weight, bias)

    def backward(g):
        g_canvas = xp.zeros(canvas.shape, dtype=g.dtype)
        g_canvas[:, :, pads[0] : pads[0] + ho, pads[2] : pads[2] + wo] = g
        g_cols = xp.empty((n, out_c, kh, kw, h, w), dtype=g.dtype)
        for i, j, rows, columns in windows:
            g_cols[:, :, i, j] = g_canvas[:, :, rows, columns]
        g_cols = g_cols.reshape(n, groups, k, h * w)
        gx = None if x.stop_gradient else xp.matmul(w_mat, g_cols).reshape(xd.shape)
        gw = None
        if not weight.stop_gradient:
            gw = xp.matmul(x_mat, g_cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(wd.shape)
        return _grads_with_bias(gx, gw, g, bias)

    return result(out, parents, backward)


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
    """Transposed 1-D convolution of ``x`` [N, C, L] with ``weight`` [C, O/groups, k] (the 2-D op
    on [N, C, 1, L] views)."""
    x = _checked_ncl("conv1d_transpose", x, weight, data_format, "[C, O/groups, k]")
    extra = output_padding if isinstance(output_padding, int) else list(output_padding)[0]
    size = None if output_size is None else [1, output_size if isinstance(output_size, int) else list(output_size)[0]]
    out = conv2d_transpose(
        ops.unsqueeze(x, 2),
        ops.unsqueeze(weight, 2),
        bias,
        length_pair(stride, "conv1d_transpose", "stride"),
        length_padding(padding),
        (0, extra),
        length_pair(dilation, "conv1d_transpose", "dilation"),
        groups,
        size,
    )
    out = ops.squeeze(out, 2)
    return ops.transpose(out, [0, 2, 1]) if data_format == "NLC" else out
