"""2-D convolution by im2col: gather the input under every kernel offset, then one batched matmul.

The gather loops over the kh*kw kernel offsets only; each step copies a strided slice of the
whole batch, so the work is done by the array library, on NumPy and CuPy alike. The backward
pass scatters the column gradients back with the same slices (col2im).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import backend, ops
from ...autograd.tensor import Tensor
from ...ops._util import result
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


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """Cross-correlation of ``x`` [N, C, H, W] with ``weight`` [O, C/groups, kh, kw], plus ``bias`` [O].

    ``padding='SAME'`` sets ``dilation`` to 1, as Paddle's kernels do.
    """
    check_tensor("conv2d", "x", x)
    check_tensor("conv2d", "weight", weight)
    check_nchw("conv2d", x, data_format)
    xd, wd = x._data, weight._data
    if xd.dtype != wd.dtype:
        raise TypeError(f"conv2d: input dtype {xd.dtype} differs from weight dtype {wd.dtype}; "
                        f"convert the input with .astype('{wd.dtype}')")
    n, c, h, w = xd.shape
    out_c, c_per_group, kh, kw = wd.shape
    if groups < 1 or c % groups or out_c % groups or c // groups != c_per_group:
        raise ValueError(f"conv2d: input has {c} channels and weight shape {list(wd.shape)}; with "
                         f"groups={groups} the weight must be [O, C/groups, kh, kw] with O and C "
                         "divisible by groups")
    stride, dilation = pair(stride, "conv2d", "stride"), pair(dilation, "conv2d", "dilation")
    if isinstance(padding, str) and padding.upper() == "SAME":
        dilation = (1, 1)
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
            gx = g_padded[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + w]
        if not weight.stop_gradient:
            gw = xp.matmul(g_mat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(wd.shape)
        if bias is None:
            return gx, gw
        return gx, gw, None if bias.stop_gradient else g.sum(axis=(0, 2, 3))

    return result(out, parents, backward)


def conv1d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, data_format: str = "NCL", name: Optional[str] = None) -> Tensor:
    """Cross-correlation of ``x`` [N, C, L] with ``weight`` [O, C/groups, k]: the 2-D op on
    [N, C, 1, L] views. ``padding`` is an int, [left, right], 'SAME' or 'VALID'."""
    check_tensor("conv1d", "x", x)
    check_tensor("conv1d", "weight", weight)
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"conv1d: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if x.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"conv1d: expects x [N, C, L] and weight [O, C/groups, k], got {x.shape} and {weight.shape}")
    if data_format == "NLC":
        x = ops.transpose(x, [0, 2, 1])
    out = conv2d(ops.unsqueeze(x, 2), ops.unsqueeze(weight, 2), bias, length_pair(stride, "conv1d", "stride"),
                 length_padding(padding), length_pair(dilation, "conv1d", "dilation"), groups)
    out = ops.squeeze(out, 2)
    return ops.transpose(out, [0, 2, 1]) if data_format == "NLC" else out
