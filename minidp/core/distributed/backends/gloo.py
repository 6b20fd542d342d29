"""The gloo backend: minidp's CPU backend, and the one place that picks its transport.

Two transports carry it, each in a module of its own:

* ``shm`` (:mod:`.shm`, the default): ranks of one host meet in a shared-memory segment; ranks
  on different hosts, and point-to-point operations, go over the TCP mesh. It needs x86-64's
  store order, so elsewhere gloo uses ``tcp``.
* ``tcp`` (:mod:`.tcp`): every pair of ranks talks over TCP, loopback included.

``MINIDP_TRANSPORT=tcp`` forces TCP (``shm``, the default, asks for shared memory);
``init_parallel_env`` names the transport in its start-up log line.
"""

from __future__ import annotations

import os
from typing import Optional

from .base import GroupSpec
from .shm import SUPPORTED, SharedMemoryGlooGroup
from .tcp import GlooProcessGroup

TRANSPORTS = ("shm", "tcp")


def transport_choice() -> str:
    """The transport gloo groups use: ``MINIDP_TRANSPORT`` (``shm`` when unset), ``tcp`` where
    shared memory is not supported; unknown values are refused."""
    choice = os.environ.get("MINIDP_TRANSPORT", "shm").strip().lower() or "shm"
    if choice not in TRANSPORTS:
        raise ValueError(
            f"MINIDP_TRANSPORT={choice!r} is not a transport; use one of "
            f"{list(TRANSPORTS)} (tcp forces loopback TCP between ranks of a host)"
        )
    return choice if SUPPORTED else "tcp"


def create_process_group(spec: GroupSpec) -> Optional[GlooProcessGroup]:
    """The gloo backend's factory: a group over the chosen transport for members of ``spec``,
    None elsewhere."""
    transport = transport_choice()
    if spec.rank < 0:
        return None
    if spec.store is None and spec.size > 1:
        raise ValueError("the gloo backend needs a TCPStore to find its peers")
    group_class = SharedMemoryGlooGroup if transport == "shm" else GlooProcessGroup
    return group_class(
        spec.store, spec.rank, spec.size, name=spec.name, timeout=spec.timeout, global_ranks=spec.global_ranks
    )
