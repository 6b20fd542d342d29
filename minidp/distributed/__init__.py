"""minidp.distributed: data-parallel communication with Paddle's names.

Start processes with ``spawn``, ``python -m minidp.distributed.launch`` or ``mpirun``, call
``init_parallel_env()``, then use the collectives (in place on Tensors) or ``DataParallel``.
"""

from ..core.distributed.backends import ReduceOp, Work, register_backend
from .communication import (
    Group,
    P2POp,
    all_gather,
    all_gather_object,
    all_reduce,
    alltoall,
    alltoall_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    get_backend,
    get_group,
    get_object_serializer,
    irecv,
    is_available,
    is_initialized,
    isend,
    new_group,
    recv,
    recv_object_list,
    reduce,
    reduce_scatter,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
    set_object_serializer,
    stream,
    wait,
)
from .fleet.fleet_base import ParallelMode
from .parallel_with_gloo import gloo_barrier, gloo_init_parallel_env, gloo_release
from ..core.distributed.data_parallel import DataParallel, fused_allreduce_gradients, sync_params_buffers
from ..core.distributed.env import ParallelEnv
from .parallel import get_rank, get_world_size, init_parallel_env
from .spawn import spawn
from ..core.timeline import timeline
from ..core.distributed.store import TCPStore
from . import collective, fleet, sharding
from . import launch

__all__ = [
    "DataParallel",
    "fused_allreduce_gradients",
    "spawn",
    "sync_params_buffers",
    "fleet",
    "Group",
    "ParallelEnv",
    "ReduceOp",
    "TCPStore",
    "Work",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_group",
    "get_rank",
    "get_world_size",
    "init_parallel_env",
    "is_initialized",
    "new_group",
    "recv",
    "reduce_scatter",
    "register_backend",
    "send",
    "P2POp",
    "ParallelMode",
    "all_gather_object",
    "alltoall",
    "alltoall_single",
    "batch_isend_irecv",
    "broadcast_object_list",
    "gather",
    "get_backend",
    "get_object_serializer",
    "gloo_barrier",
    "gloo_init_parallel_env",
    "gloo_release",
    "irecv",
    "is_available",
    "isend",
    "recv_object_list",
    "reduce",
    "scatter",
    "scatter_object_list",
    "send_object_list",
    "set_object_serializer",
    "stream",
    "wait",
    "timeline",
]
