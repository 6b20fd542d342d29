"""minidp.distributed: data-parallel communication with Paddle's names.

Start processes with ``spawn``, ``python -m minidp.distributed.launch`` or ``mpirun``, call
``init_parallel_env()``, then use the collectives (in place on Tensors) or ``DataParallel``.
"""
from .backends import ReduceOp, Work, register_backend
from .collective import (
    Group,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_group,
    is_initialized,
    new_group,
    recv,
    reduce_scatter,
    send,
)
from .data_parallel import DataParallel, fused_allreduce_gradients, sync_params_buffers
from .env import ParallelEnv
from .parallel import get_rank, get_world_size, init_parallel_env
from .spawn import spawn
from .store import TCPStore
from . import fleet

__all__ = [
    "DataParallel", "fused_allreduce_gradients", "spawn", "sync_params_buffers", "fleet", "Group", "ParallelEnv", "ReduceOp", "TCPStore", "Work", "all_gather", "all_reduce",
    "barrier", "broadcast", "destroy_process_group", "get_group", "get_rank", "get_world_size",
    "init_parallel_env", "is_initialized", "new_group", "recv", "reduce_scatter",
    "register_backend", "send",
]
