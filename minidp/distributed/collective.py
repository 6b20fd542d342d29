"""Paddle's ``paddle.distributed.collective`` module path: groups and the collectives, from
:mod:`minidp.distributed.communication`."""

from .communication import (
    Group,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_group,
    is_available,
    is_initialized,
    new_group,
    recv,
    reduce_scatter,
    send,
    wait,
)

__all__ = [
    "Group",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_group",
    "is_available",
    "is_initialized",
    "new_group",
    "recv",
    "reduce_scatter",
    "send",
    "wait",
]
