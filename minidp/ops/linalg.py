"""Matrix multiplication (batched, with optional transposes) and its backward."""
from __future__ import annotations

from ..autograd.tensor import Tensor
from ._util import matmul_arrays, result, unbroadcast


def _t(a):
    return a.swapaxes(-1, -2)


def matmul(x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False,
           name: str = None) -> Tensor:
    """x @ y over the last two axes, broadcasting leading (batch) axes; 1-D operands are vectors."""
    xd, yd = x._data, y._data
    if xd.dtype != yd.dtype:
        raise TypeError(
            f"matmul: the operands have different dtypes {xd.dtype} and {yd.dtype}; "
            f"convert one with .astype('{xd.dtype}') first"
        )
    if transpose_x and xd.ndim >= 2:
        xd = _t(xd)
    if transpose_y and yd.ndim >= 2:
        yd = _t(yd)
    try:
        data = matmul_arrays(xd, yd)
    except ValueError:
        raise ValueError(
            f"matmul: shapes {list(xd.shape)} and {list(yd.shape)} (after transposes) do not "
            "match: the last axis of x must equal the second-to-last axis of y"
        ) from None
    x_vec, y_vec = xd.ndim == 1, yd.ndim == 1

    def backward(g):
        a = xd[None, :] if x_vec else xd
        b = yd[:, None] if y_vec else yd
        if x_vec:
            g = g[..., None, :]
        if y_vec:
            g = g[..., None]
        gx = gy = None
        if not x.stop_gradient:
            gx = unbroadcast(matmul_arrays(g, _t(b)), a.shape)
            gx = gx[0] if x_vec else (_t(gx) if transpose_x else gx)
        if not y.stop_gradient:
            gy = unbroadcast(matmul_arrays(_t(a), g), b.shape)
            gy = gy[:, 0] if y_vec else (_t(gy) if transpose_y else gy)
        return gx, gy

    return result(data, (x, y), backward)
