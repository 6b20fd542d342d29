"""Per-rank function for tests/test_fleet_base.py: one data-parallel step through fleet."""

import numpy as np

import minidp
import minidp.nn as nn
from minidp.distributed import fleet


def fleet_step(bucket_mb: float) -> dict:
    """fleet.init, distributed_model/optimizer with a strategy, one SGD step on rank-dependent
    data; returns what the rank saw and its updated weight."""
    strategy = fleet.DistributedStrategy()
    strategy.fuse_grad_size_in_MB = bucket_mb
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 1, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    minidp.seed(fleet.worker_index())  # different initial weights: DataParallel takes rank 0's
    model = fleet.distributed_model(nn.Linear(3, 1, bias_attr=False))
    optimizer = fleet.distributed_optimizer(minidp.optimizer.SGD(0.5, parameters=model.parameters()))
    initial = model._layers.weight.numpy().copy()
    x = minidp.full([2, 3], float(fleet.worker_index() + 1))
    model(x).sum().backward()
    optimizer.step()
    fleet.barrier_worker()
    return {
        "index": fleet.worker_index(),
        "num": fleet.worker_num(),
        "first": fleet.is_first_worker(),
        "wrapped": type(model).__name__,
        "bucket": model.comm_buffer_size,
        "same_optimizer": type(optimizer).__name__,
        "initial": initial,
        "updated": model._layers.weight.numpy(),
    }


def expected_update(initial: np.ndarray) -> np.ndarray:
    """SGD(0.5) on the mean over ranks 0 and 1 of the gradient of sum(x @ w), x = rank + 1."""
    mean_grad = np.full_like(initial, (2 * 1.0 + 2 * 2.0) / 2)
    return initial - 0.5 * mean_grad
