"""What each rank runs in the SyncBatchNorm test of tests/test_norm.py, and its reference.

Rank ``r`` of ``n`` gets rows ``r*B/n .. (r+1)*B/n`` of a seeded global batch and trains a small
Conv2D -> SyncBatchNorm -> Conv2D model wrapped in DataParallel for one step; the reference
runs the same model with BatchNorm2D in one process on the whole batch.
"""

from __future__ import annotations

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn

GLOBAL_BATCH = 12  # divisible by 2 and 3


def build(norm: nn.Layer) -> nn.Layer:
    minidp.seed(3)
    return nn.Sequential(nn.Conv2D(3, 4, 1), norm, nn.Conv2D(4, 2, 1)).to(dtype="float64")


def data() -> tuple:
    generator = np.random.default_rng(11)
    return generator.normal(size=(GLOBAL_BATCH, 3, 3, 3)), generator.uniform(0.5, 1.5, (GLOBAL_BATCH, 2, 3, 3))


def run(model: nn.Layer, layers: nn.Layer, x: np.ndarray, weights: np.ndarray) -> dict:
    """One forward and backward of ``model`` (``layers`` is the Sequential inside it)."""
    inputs = minidp.to_tensor(x)
    inputs.stop_gradient = False
    out = model(inputs)
    (out * minidp.to_tensor(weights)).sum().backward()
    norm = layers[1]
    return {
        "out": out.numpy(),
        "x_grad": inputs.grad.numpy(),
        "mean": norm._mean.numpy(),
        "variance": norm._variance.numpy(),
        "norm_weight_grad": norm.weight.grad.numpy(),
        "conv_weight_grad": layers[0].weight.grad.numpy(),
    }


def worker() -> dict:
    """One rank: its slice of the batch through DataParallel(model with SyncBatchNorm)."""
    dist.init_parallel_env()
    rank, size = dist.get_rank(), dist.get_world_size()
    layers = build(nn.SyncBatchNorm(4))
    x, weights = data()
    rows = slice(rank * GLOBAL_BATCH // size, (rank + 1) * GLOBAL_BATCH // size)
    return run(minidp.DataParallel(layers), layers, x[rows], weights[rows])


def reference() -> dict:
    """The same step in one process on the whole batch, with plain BatchNorm2D."""
    x, weights = data()
    layers = build(nn.BatchNorm2D(4))
    return run(layers, layers, x, weights)
