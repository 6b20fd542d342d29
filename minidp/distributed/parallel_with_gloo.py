"""``gloo_init_parallel_env``, ``gloo_barrier`` and ``gloo_release``: Paddle's stand-alone CPU
context for synchronising processes without ``init_parallel_env`` (Paddle's module
``paddle.distributed.parallel_with_gloo``).

Rank 0 hosts a :class:`TCPStore` at ``server_endpoint``; every rank makes a gloo group of
``rank_num`` ranks on it, registered like any other group (``collective.create_group``; the
group timeout is ``PADDLE_PG_TIMEOUT``). ``gloo_barrier`` waits
for every rank; ``gloo_release`` shuts the group down and closes the store, which rank 0 keeps
serving until then so that late ranks can still find their peers.
"""

from __future__ import annotations

from typing import Optional, Tuple

from ..core.distributed import collective
from ..core.distributed.backends import GroupSpec
from ..core.distributed.collective import Group
from ..core.distributed.env import ParallelEnv
from ..core.distributed.store import TCPStore

_context: Optional[Tuple[TCPStore, Group]] = None


def gloo_init_parallel_env(rank_id: int, rank_num: int, server_endpoint: str) -> None:
    """Join the gloo context of ``rank_num`` processes as rank ``rank_id``; rank 0 serves the
    rendezvous at ``server_endpoint`` (``'ip:port'``)."""
    global _context
    if not isinstance(rank_num, int) or rank_num < 2:
        raise ValueError(f"gloo_init_parallel_env: rank_num must be an int of at least 2, got {rank_num!r}")
    if not isinstance(rank_id, int) or not 0 <= rank_id < rank_num:
        raise ValueError(f"gloo_init_parallel_env: rank_id must be an int in 0..{rank_num - 1}, got {rank_id!r}")
    host, _, port = str(server_endpoint).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"gloo_init_parallel_env: server_endpoint {server_endpoint!r} is not 'ip:port'")
    if _context is not None:
        raise RuntimeError(
            "gloo_init_parallel_env: this process already joined a gloo context; call gloo_release() first"
        )
    timeout = ParallelEnv().pg_timeout / 1000.0
    store = TCPStore(host, int(port), is_master=rank_id == 0, timeout=timeout)
    spec = GroupSpec(
        name="gloo_context", global_ranks=tuple(range(rank_num)), global_rank=rank_id, timeout=timeout, store=store
    )
    try:
        group = collective.create_group(spec, "gloo")
    except BaseException:
        store.close()
        raise
    _context = (store, group)


def gloo_barrier() -> None:
    """Return once every rank of the gloo context has called ``gloo_barrier``."""
    if _context is None:
        raise RuntimeError(
            "gloo_barrier needs the gloo context: call "
            "minidp.distributed.gloo_init_parallel_env(rank_id, rank_num, "
            "server_endpoint) first"
        )
    collective.barrier(_context[1])


def gloo_release() -> None:
    """Leave the gloo context (nothing to do when there is none)."""
    global _context
    if _context is not None:
        store, group = _context
        _context = None
        collective.destroy_process_group(group)
        store.close()
