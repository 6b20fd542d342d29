"""The part of Paddle's ``paddle.distributed.fleet`` namespace that data-parallel scripts use:
the collective entry points of :mod:`.fleet_base` and ``utils``."""

from . import utils
from .fleet_base import (
    DistributedStrategy,
    barrier_worker,
    distributed_model,
    distributed_optimizer,
    init,
    is_first_worker,
    worker_index,
    worker_num,
)

__all__ = [
    "DistributedStrategy",
    "barrier_worker",
    "distributed_model",
    "distributed_optimizer",
    "init",
    "is_first_worker",
    "utils",
    "worker_index",
    "worker_num",
]
