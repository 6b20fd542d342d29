"""affine_grid and grid_sample (``minidp/nn/functional/grid.py``) against NumPy and finite
differences."""

import numpy as np
import pytest

import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)


def np_grid_sample_zeros(x, grid):
    """Bilinear sampling with align_corners=True and zero padding, one point at a time."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in np.ndindex(n, *grid.shape[1:3]):
        px, py = (grid[b, i, j, 0] + 1) * (w - 1) / 2, (grid[b, i, j, 1] + 1) * (h - 1) / 2
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        for row, col in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            if 0 <= row < h and 0 <= col < w:
                out[b, :, i, j] += x[b, :, row, col] * (1 - abs(px - col)) * (1 - abs(py - row))
    return out


def test_affine_grid_and_grid_sample():
    theta = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]], [[1.2, -0.3, -0.2], [0.25, 0.8, 0.1]]])
    grid = F.affine_grid(t(theta), [2, 3, 4, 5]).numpy()
    xs, ys = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 4))
    base = np.stack([xs, ys, np.ones_like(xs)], -1)
    np.testing.assert_allclose(grid, base @ theta.transpose(0, 2, 1)[:, None], rtol=1e-12)
    check_grad(lambda a: F.affine_grid(a, [2, 3, 4, 5], align_corners=False), theta)
    image = rng.normal(size=(2, 2, 4, 5))
    identity = F.affine_grid(t(np.tile([[[1.0, 0, 0], [0, 1.0, 0]]], (2, 1, 1))), [2, 2, 4, 5])
    np.testing.assert_allclose(F.grid_sample(t(image), identity).numpy(), image, atol=1e-12)
    points = rng.uniform(-1.3, 1.3, size=(2, 3, 4, 2))
    np.testing.assert_allclose(
        F.grid_sample(t(image), t(points)).numpy(), np_grid_sample_zeros(image, points), rtol=1e-10
    )
    for padding_mode in ("zeros", "border", "reflection"):
        for align_corners in (True, False):
            check_grad(
                lambda a, g: F.grid_sample(a, g, padding_mode=padding_mode, align_corners=align_corners), image, points
            )
    nearest = F.grid_sample(t(image), t(points), mode="nearest", padding_mode="border").numpy()
    px = np.clip(np.floor((points[..., 0] + 1) * 2 + 0.5), 0, 4).astype(int)
    py = np.clip(np.floor((points[..., 1] + 1) * 1.5 + 0.5), 0, 3).astype(int)
    np.testing.assert_array_equal(nearest, np.moveaxis(image[np.arange(2)[:, None, None], :, py, px], -1, 1))
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(t(image), t(points), padding_mode="wrap")
    with pytest.raises(ValueError, match="theta"):
        F.affine_grid(t(theta[:, :1]), [2, 3, 4, 5])
