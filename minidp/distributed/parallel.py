"""Paddle's ``paddle.distributed.parallel`` module path; the implementation is
:mod:`minidp.core.distributed.parallel`."""

from ..core.distributed.data_parallel import DataParallel
from ..core.distributed.env import ParallelEnv
from ..core.distributed.parallel import get_rank, get_world_size, init_parallel_env

__all__ = ["init_parallel_env", "get_rank", "get_world_size", "ParallelEnv", "DataParallel"]
