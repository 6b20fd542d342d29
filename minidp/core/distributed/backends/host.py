"""Which ranks of a process group share a host: the layout the shared-memory transport follows.

Every rank publishes a host identity through the job's store -- the hostname plus the kernel's
boot id, so two containers or machines that happen to share a hostname are not mistaken for one
host -- together with its process id (peers on the same host watch it to notice a death).
``MINIDP_HOST_ID`` replaces the identity, so tests can pretend that ranks on one machine live on
several hosts.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, List, NamedTuple


def host_identity() -> str:
    """This machine's identity: ``MINIDP_HOST_ID`` if set, else hostname and boot id."""
    override = os.environ.get("MINIDP_HOST_ID")
    if override:
        return override
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            boot_id = boot.read().strip()
    except OSError:
        boot_id = "unknown-boot"
    return f"{socket.gethostname()}/{boot_id}"


class HostLayout(NamedTuple):
    """How a group's ranks fall on hosts, as seen by one rank.

    ``hosts`` lists each host's group ranks (hosts ordered by their lowest rank, ranks
    ascending); ``pids`` are the ranks' process ids; ``host`` indexes this rank's host.
    """

    hosts: List[List[int]]
    pids: List[int]
    host: int

    @property
    def local_ranks(self) -> List[int]:
        """The group ranks sharing this rank's host (this rank included), ascending."""
        return self.hosts[self.host]

    @property
    def leaders(self) -> List[int]:
        """The lowest group rank of every host: the ranks that talk across hosts."""
        return [ranks[0] for ranks in self.hosts]


def discover_hosts(store: Any, prefix: str, rank: int, size: int, timeout: float) -> HostLayout:
    """Publish this rank's host identity and pid under ``prefix`` and read every rank's."""
    store.set(f"{prefix}/host/{rank}", f"{os.getpid()} {host_identity()}")
    deadline = time.monotonic() + timeout
    identities, pids = [], []
    for peer in range(size):
        try:
            value = store.get(f"{prefix}/host/{peer}", timeout=max(0.0, deadline - time.monotonic())).decode()
        except RuntimeError as error:
            raise RuntimeError(f"rank {peer} did not publish its host identity ({error})") from error
        pid, _, identity = value.partition(" ")
        pids.append(int(pid))
        identities.append(identity)
    order = list(dict.fromkeys(identities))
    hosts = [[peer for peer in range(size) if identities[peer] == identity] for identity in order]
    return HostLayout(hosts, pids, order.index(identities[rank]))
