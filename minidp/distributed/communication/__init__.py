"""Paddle's collectives on Tensors and Python objects (``paddle.distributed.communication``).

Where each lives:

=============================================================  ===================================
``all_reduce``, ``broadcast``, ``barrier``, ``wait``, groups    :mod:`minidp.core.distributed.collective`
``all_gather``                                                  :mod:`.all_gather`
``reduce_scatter``                                              :mod:`.reduce_scatter`
``reduce``, ``scatter``, ``gather`` (collectives with a root)   :mod:`.rooted`
``send``, ``recv``, ``isend``, ``irecv``, ``batch_isend_irecv``  :mod:`.p2p`
``alltoall``, ``alltoall_single``                               :mod:`.all_to_all`
``all_gather_object`` and the other object collectives          :mod:`.object_collectives`
how objects travel as bytes (``set_object_serializer``)         :mod:`.object_codec`
``stream.*`` (``minidp.distributed.stream``)                    :mod:`.stream`
=============================================================  ===================================

The core keeps what ``DataParallel`` and ``init_parallel_env`` need; the rest is here.
"""

from ...core.distributed.backends import ReduceOp
from ...core.distributed.collective import (
    Group,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_group,
    is_available,
    is_initialized,
    new_group,
    wait,
)
from . import stream
from .all_gather import all_gather
from .all_to_all import alltoall, alltoall_single
from .object_codec import get_object_serializer, set_object_serializer
from .object_collectives import (
    all_gather_object,
    broadcast_object_list,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .reduce_scatter import reduce_scatter
from .rooted import gather, reduce, scatter

__all__ = [
    "Group",
    "P2POp",
    "ReduceOp",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_group",
    "get_object_serializer",
    "irecv",
    "is_available",
    "is_initialized",
    "isend",
    "new_group",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_object_serializer",
    "stream",
    "wait",
]
