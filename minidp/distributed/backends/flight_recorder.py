"""A flight recorder for the nccl backend: each rank's last collectives, compared through the store.

NCCL runs collectives on the GPU without telling the host what the peers issued, so ranks that
issue different collectives hang (or exchange mismatched bytes) instead of failing with a
message. Exchanging a :class:`~.base.Fingerprint` before every collective, as the CPU backends
do, would add a host round trip to each one. Instead each rank keeps its last fingerprints in a
:class:`FlightRecorder` (a ring buffer, no communication) and compares them with its peers
through the job's store only rarely:

- every ``MINIDP_NCCL_CHECK_EVERY`` collectives (:func:`check_every`, default 1000, 0 = never),
  before issuing, the ranks compare that collective's fingerprint (:meth:`FlightRecorder.check`);
- when an operation times out or NCCL reports an error, the rank publishes its record, asks
  its peers for theirs and reads them (a bounded wait), so the error names the first collective
  on which two ranks differ or, when the records agree, the rank that is behind
  (:meth:`FlightRecorder.report`).

A peer is asked through its request key (:meth:`FlightRecorder.request_key`): the nccl group's
watchdog thread waits on that key in the store and publishes the record when it appears,
whatever the peer's main thread is doing -- computing, blocked on I/O, or sleeping -- so even a
rank stuck outside every collective can be named. The recorder is therefore used from two
threads: the issuing one adds collectives, the watchdog reads the record (under a lock). Each
thread talks to the store through its own client, which ``publish`` and ``report`` take. A
peer's record, as read, is the latest it published: on request, at its own failure, or at
shutdown.

Collectives are numbered in issue order, from 1. Sends and receives involve two ranks only and
are not recorded.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from ...core.distributed.backends.base import Collective, Fingerprint, different_operations

RECORD_LENGTH = 64  # fingerprints kept per rank
REPORT_WAIT = 2.0  # seconds a failing rank waits for its peers' records
SHORTEST_STORE_WAIT = 0.001  # seconds: a peer's record already in the store is still read


def check_every() -> int:
    """Collectives between two fingerprint checks: ``MINIDP_NCCL_CHECK_EVERY`` (default 1000;
    0 turns the check off)."""
    value = os.environ.get("MINIDP_NCCL_CHECK_EVERY", "").strip() or "1000"
    try:
        every = int(value)
    except ValueError:
        every = -1
    if every < 0:
        raise ValueError(
            f"MINIDP_NCCL_CHECK_EVERY={value!r} must be a whole number of collectives (0 turns the check off)"
        )
    return every


def decode_record(data: bytes) -> List[Fingerprint]:
    """The fingerprints of a record published by :meth:`FlightRecorder.publish`."""
    size = Fingerprint.SIZE
    return [Fingerprint.decode(data[start : start + size]) for start in range(0, len(data), size)]


def absent_ranks(store: Any, keys: Sequence[str], describe_rank: Callable[[int], str]) -> str:
    """The ranks whose key (``keys`` holds one per rank) is not in ``store``, as ``rank 1,
    rank 3``, or ``a rank`` when all have arrived since: for the message of a bounded wait on
    ``keys`` that timed out."""
    absent = [describe_rank(rank) for rank, key in enumerate(keys) if not store.check([key])]
    return ", ".join(absent) or "a rank"


class FlightRecorder:
    """One rank's last :data:`RECORD_LENGTH` collectives, and their comparison with its peers'.

    ``store`` is the job's store and ``prefix`` the group's key prefix; ``describe_rank`` names
    a rank in messages; ``every`` is the period of :meth:`check` (0: never).
    """

    def __init__(
        self, rank: int, size: int, store: Any, prefix: str, every: int, describe_rank: Callable[[int], str]
    ) -> None:
        self.rank = rank
        self.size = size
        self.every = every if store is not None else 0
        self._store = store
        self._prefix = prefix
        self._describe_rank = describe_rank
        # (number, collective): fingerprints are made only when compared, off the hot path
        self._calls: Deque[Tuple[int, Collective]] = collections.deque(maxlen=RECORD_LENGTH)
        self._lock = threading.Lock()  # the watchdog thread reads what the issuing thread adds
        self.issued = 0

    def add(self, call: Collective) -> Optional[Fingerprint]:
        """Number and keep ``call``; return its fingerprint when the ranks compare this
        collective (every ``every``-th), else None. Sends and receives are not recorded."""
        if call.op in ("send", "recv"):
            return None
        with self._lock:
            self.issued += 1
            seq = self.issued
            self._calls.append((seq, call))
        if self.every > 0 and seq % self.every == 0:
            return Fingerprint.of(call, seq)
        return None

    @property
    def record(self) -> List[Fingerprint]:
        """The fingerprints of the last :data:`RECORD_LENGTH` collectives, oldest first."""
        with self._lock:
            calls = list(self._calls)
        return [Fingerprint.of(call, seq) for seq, call in calls]

    @property
    def can_report(self) -> bool:
        """True when the ranks share a store to compare their records in."""
        return self._store is not None

    def check(self, fingerprint: Fingerprint, timeout: float, who: str) -> None:
        """Compare ``fingerprint`` with the peers' collective of the same number, through the
        store (bounded by ``timeout``); ``RuntimeError`` (starting with ``who``) naming both
        operations on a mismatch, or the ranks that did not reach it."""
        keys = [f"{self._prefix}/fp/{fingerprint.seq}/{rank}" for rank in range(self.size)]
        self._store.set(keys[self.rank], fingerprint.encode())
        try:
            self._store.wait(keys, timeout=timeout)
        except RuntimeError as error:
            absent = absent_ranks(self._store, keys, self._describe_rank)
            raise RuntimeError(
                f"{who}: {absent} did not reach collective #{fingerprint.seq} "
                f"within {timeout:g} s, where the ranks compare their collectives "
                "(MINIDP_NCCL_CHECK_EVERY); every rank must issue the same collectives"
            ) from error
        for rank, key in enumerate(keys):
            theirs = Fingerprint.decode(self._store.get(key))
            if theirs != fingerprint:
                raise RuntimeError(
                    f"{who}: " + different_operations({self.rank: fingerprint, rank: theirs}, self._describe_rank)
                )

    def request_key(self, rank: int) -> str:
        """The key a failing peer sets to ask ``rank``'s watchdog for its record."""
        return f"{self._prefix}/dump/{rank}"

    def publish(self, store: Any = None) -> None:
        """Put this rank's record in the store, for a failing peer to read; ``store`` is the
        calling thread's client (default: the group's)."""
        (self._store if store is None else store).set(
            f"{self._prefix}/flight/{self.rank}", b"".join(fingerprint.encode() for fingerprint in self.record)
        )

    def report(self, store: Any = None, wait: float = REPORT_WAIT) -> str:
        """Publish this rank's record, ask the peers' watchdogs for theirs, read them (waiting
        up to ``wait`` seconds) and say what they show: the first collective on which two ranks
        differ, or who is behind. ``store`` is the calling thread's client (default: the
        group's)."""
        store = self._store if store is None else store
        self.publish(store)
        for rank in range(self.size):
            if rank != self.rank:
                store.set(self.request_key(rank), b"")
        deadline = time.monotonic() + wait
        records: Dict[int, List[Fingerprint]] = {}
        silent = []
        for rank in range(self.size):
            try:
                records[rank] = decode_record(
                    store.get(
                        f"{self._prefix}/flight/{rank}", timeout=max(deadline - time.monotonic(), SHORTEST_STORE_WAIT)
                    )
                )
            except RuntimeError:  # the store timed out: this peer has published nothing
                silent.append(self._describe_rank(rank))
        text = compare_records(records, self._describe_rank)
        if silent:
            text += (
                f"; {', '.join(silent)} published no record within {wait:g} s (no "
                "watchdog answered: its process may have exited or be frozen)"
            )
        return text


def compare_records(records: Dict[int, Sequence[Fingerprint]], describe_rank: Callable[[int], str]) -> str:
    """What the ranks' records show: the first number at which two differ, else which ranks
    are behind (the fewest collectives issued), else that they agree."""
    by_seq: Dict[int, Dict[int, Fingerprint]] = collections.defaultdict(dict)
    for rank, record in records.items():
        for fingerprint in record:
            by_seq[fingerprint.seq][rank] = fingerprint
    for seq in sorted(by_seq):
        held = by_seq[seq]
        first_rank, first = next(iter(sorted(held.items())))
        for rank, fingerprint in sorted(held.items()):
            if fingerprint != first:
                return different_operations({first_rank: first, rank: fingerprint}, describe_rank)
    last = {rank: record[-1].seq if record else 0 for rank, record in records.items()}
    if len(last) == 1:
        ((rank, record),) = records.items()
        return f"{describe_rank(rank)}'s last collective: {record[-1] if record else 'none'}"
    behind = min(last.values())
    ahead = max(last.values())
    if behind == ahead:
        return f"the ranks' records agree up to collective #{ahead}"
    lagging = [rank for rank, seq in sorted(last.items()) if seq == behind]
    latest = ", ".join(f"{describe_rank(rank)} at #{seq}" for rank, seq in sorted(last.items()))
    last_call = records[lagging[0]][-1] if records[lagging[0]] else "no collective"
    return (
        f"{', '.join(describe_rank(rank) for rank in lagging)} is behind (its last: "
        f"{last_call}): the records agree, and the last collectives issued are {latest}; "
        "every rank must issue the same number of collectives"
    )
