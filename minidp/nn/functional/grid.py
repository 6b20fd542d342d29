"""Spatial transformers: affine_grid builds sampling grids, grid_sample reads an image at them.

grid_sample is one op: for every output pixel it gathers the (up to) four input pixels around
the sampling point and blends them; backward scatters the gradient to those pixels and, through
the blend weights, to the grid coordinates.
"""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import result, wrap
from ._util import check_tensor

__all__ = [
    "affine_grid",
    "grid_sample",
]


def _base_coordinates(xp: Any, n: int, align_corners: bool, dtype: Any) -> Any:
    """Normalised pixel centres in [-1, 1] along an axis of ``n`` pixels."""
    coords = xp.linspace(-1.0, 1.0, n, dtype="float64") if n > 1 else xp.zeros(1)
    if not align_corners:
        coords = coords * (n - 1) / n
    return coords.astype(dtype)


def affine_grid(theta: Tensor, out_shape: Any, align_corners: bool = True, name: Optional[str] = None) -> Tensor:
    """Sampling grid [N, H, W, 2] of (x, y) points: the normalised output pixel centres mapped by
    the affine matrices ``theta`` [N, 2, 3]."""
    check_tensor("affine_grid", "theta", theta)
    shape = out_shape.tolist() if isinstance(out_shape, Tensor) else [int(v) for v in out_shape]
    if theta.ndim != 3 or theta.shape[1:] != [2, 3] or len(shape) != 4 or shape[0] != theta.shape[0]:
        raise ValueError(
            f"affine_grid: theta must be [N, 2, 3] and out_shape [N, C, H, W] with the same N, got "
            f"{theta.shape} and {shape}"
        )
    n, _, h, w = shape
    xp = backend.get_array_module(theta._data)
    dtype = theta._data.dtype
    xs, ys = _base_coordinates(xp, w, align_corners, dtype), _base_coordinates(xp, h, align_corners, dtype)
    base = xp.stack(
        [xp.broadcast_to(xs[None, :], (h, w)), xp.broadcast_to(ys[:, None], (h, w)), xp.ones((h, w), dtype=dtype)],
        axis=-1,
    ).reshape(1, h * w, 3)
    grid = ops.matmul(wrap(base), ops.transpose(theta, [0, 2, 1]))
    return ops.reshape(grid, [n, h, w, 2])


def _unnormalise(xp: Any, coord: Any, size: int, align_corners: bool, padding_mode: str) -> tuple:
    """Pixel coordinates for normalised ones along an axis, and d(pixel)/d(normalised)."""
    scale = (size - 1) / 2.0 if align_corners else size / 2.0
    pixel = (coord + 1) * scale if align_corners else (coord + 1) * scale - 0.5
    slope = xp.full(coord.shape, scale)
    if padding_mode == "border":
        inside = (pixel >= 0) & (pixel <= size - 1)
        return xp.clip(pixel, 0, size - 1), slope * inside
    if padding_mode == "reflection":
        low, high = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        span = high - low
        if span <= 0:
            return xp.zeros_like(pixel), xp.zeros_like(slope)
        distance = xp.abs(pixel - low)
        flips = xp.floor(distance / span)
        extra = distance - flips * span
        even = (flips % 2) == 0
        reflected = xp.where(even, low + extra, high - extra)
        slope = slope * xp.sign(pixel - low) * xp.where(even, 1.0, -1.0)
        inside = (reflected >= 0) & (reflected <= size - 1)
        return xp.clip(reflected, 0, size - 1), slope * inside
    return pixel, slope


def grid_sample(
    x: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = True,
    name: Optional[str] = None,
) -> Tensor:
    """Sample ``x`` [N, C, H, W] at the normalised (x, y) points of ``grid`` [N, Ho, Wo, 2].

    (-1, -1) is the top-left pixel (its centre with ``align_corners``, Paddle's default, else its
    corner). Points outside read zeros ('zeros'), the nearest edge ('border') or a mirror image
    ('reflection'); ``mode`` is 'bilinear' or 'nearest'.
    """
    check_tensor("grid_sample", "x", x)
    check_tensor("grid_sample", "grid", grid)
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"grid_sample: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ValueError(
            f"grid_sample: x must be [N, C, H, W] and grid [N, Ho, Wo, 2] with the same N, got "
            f"{x.shape} and {grid.shape}"
        )
    xd, gd = x._data, grid._data
    xp = backend.get_array_module(xd)
    n, c, h, w = xd.shape
    px, dpx = _unnormalise(xp, gd[..., 0].astype("float64"), w, align_corners, padding_mode)
    py, dpy = _unnormalise(xp, gd[..., 1].astype("float64"), h, align_corners, padding_mode)
    batch = xp.arange(n)[:, None, None]
    if mode == "nearest":
        corners = [(xp.floor(py + 0.5).astype("int64"), xp.floor(px + 0.5).astype("int64"), None, None, None)]
    else:
        x0, y0 = xp.floor(px), xp.floor(py)
        fx, fy = px - x0, py - y0
        x0, y0 = x0.astype("int64"), y0.astype("int64")
        # (row, column, weight, d weight / d px, d weight / d py) for the four neighbours
        corners = [
            (y0, x0, (1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)),
            (y0, x0 + 1, fx * (1 - fy), 1 - fy, -fx),
            (y0 + 1, x0, (1 - fx) * fy, -fy, 1 - fx),
            (y0 + 1, x0 + 1, fx * fy, fy, fx),
        ]
    gathered = []
    out = xp.zeros((n, c) + px.shape[1:], dtype=xd.dtype)
    for row, col, weight, _, _ in corners:
        valid = (row >= 0) & (row < h) & (col >= 0) & (col < w)
        r, q = xp.clip(row, 0, h - 1), xp.clip(col, 0, w - 1)
        values = xd[batch, :, r, q] * valid[..., None]  # [N, Ho, Wo, C]
        gathered.append((r, q, valid, values))
        contribution = values if weight is None else values * weight[..., None]
        out += xp.moveaxis(contribution, -1, 1).astype(xd.dtype)

    def backward(g):
        g_last = xp.moveaxis(g, 1, -1)  # [N, Ho, Wo, C]
        gx = gg = None
        if not x.stop_gradient:
            gx = xp.zeros_like(xd)
            for (r, q, valid, _), (_, _, weight, _, _) in zip(gathered, corners):
                share = g_last * valid[..., None] * (1 if weight is None else weight[..., None])
                xp.add.at(gx, (batch, slice(None), r, q), share.astype(xd.dtype))
        if not grid.stop_gradient:
            d_px = xp.zeros(px.shape)
            d_py = xp.zeros(py.shape)
            if mode == "bilinear":
                for (_, _, _, values), (_, _, _, dwx, dwy) in zip(gathered, corners):
                    dot = (g_last * values).sum(axis=-1)
                    d_px += dot * dwx
                    d_py += dot * dwy
            gg = xp.stack([d_px * dpx, d_py * dpy], axis=-1).astype(gd.dtype)
        return gx, gg

    return result(out, (x, grid), backward)
