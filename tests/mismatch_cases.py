"""Ranks that issue different operations: each case must raise on every rank involved, at once,
naming both ranks' operations (the fingerprints of ``backends/base.py``); and all-to-alls whose
ranks disagree on the blocks, which must raise on every rank, at once, naming both sides.

``run_mismatch_cases(new_group)`` runs on every rank of a job; ``new_group()`` makes a fresh
process group over all ranks (a mismatch leaves a group broken). Rank 0 issues one operation and
the other ranks another; the report maps each case to (error message or "no error", seconds).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Tuple

import numpy as np

import minidp
import minidp.distributed as dist
from minidp.core.distributed.backends.base import ReduceOp


def _barrier_vs_all_reduce(group: Any) -> None:
    if group.rank == 0:
        group.barrier()
    else:
        group.all_reduce(np.ones(1000, np.float32))


def _counts_differ(group: Any) -> None:
    group.all_reduce(np.ones(10 if group.rank == 0 else 20, np.float32))


def _dtypes_differ(group: Any) -> None:
    group.all_reduce(np.ones(8, np.float32 if group.rank == 0 else np.int32))


def _reduce_ops_differ(group: Any) -> None:
    group.all_reduce(np.ones(4), ReduceOp.MAX if group.rank == 0 else ReduceOp.SUM, sync_op=False).wait()


def _roots_differ(group: Any) -> None:
    group.broadcast(np.ones(3), 0 if group.rank == 0 else 1)


def _one_rank_is_a_collective_ahead(group: Any) -> None:
    if group.rank == 0:
        group.all_reduce(np.ones(2))
    group.all_reduce(np.ones(5))


def _send_and_recv_differ(group: Any) -> None:
    if group.rank == 0:
        group.send(np.ones(3, np.float32), 1)
    elif group.rank == 1:
        group.recv(np.ones(4, np.float32), 0)


def _send_vs_barrier(group: Any) -> None:
    if group.rank == 0:
        group.send(np.ones(3, np.float32), 1)
    else:
        group.barrier()


def _send_vs_all_reduce(group: Any) -> None:
    if group.rank == 0:
        group.send(np.ones(3, np.float32), 1)
    else:
        group.all_reduce(np.ones(3, np.float32))


CASES: Dict[str, Tuple[Callable[[Any], None], str, str]] = {
    # case: (what every rank runs, rank 0's operation, the others' operation)
    "barrier vs all_reduce": (_barrier_vs_all_reduce, "barrier (#1)", "all_reduce SUM float32[1000] (#1)"),
    "counts": (_counts_differ, "all_reduce SUM float32[10] (#1)", "all_reduce SUM float32[20] (#1)"),
    "dtypes": (_dtypes_differ, "all_reduce SUM float32[8] (#1)", "all_reduce SUM int32[8] (#1)"),
    "reduce ops": (_reduce_ops_differ, "all_reduce MAX float64[4] (#1)", "all_reduce SUM float64[4] (#1)"),
    "roots": (_roots_differ, "broadcast float64[3] from rank 0 (#1)", "broadcast float64[3] from rank 1 (#1)"),
    "one ahead": (_one_rank_is_a_collective_ahead, "all_reduce SUM float64[2] (#1)", "all_reduce SUM float64[5] (#1)"),
    "send vs recv": (_send_and_recv_differ, "send float32[3] to rank 1 (#1)", "recv float32[4] from rank 0 (#1)"),
    "send vs barrier": (_send_vs_barrier, "send float32[3] to rank 1 (#1)", "barrier (#1)"),
    "send vs all_reduce": (_send_vs_all_reduce, "send float32[3] to rank 1 (#1)", "all_reduce SUM float32[3] (#1)"),
}


def _blocks(sizes, dtype="float32"):
    return [minidp.zeros([n], dtype) for n in sizes]


def _alltoall_blocks_differ(group: Any) -> None:
    """Rank 0 sends and expects blocks of 3 elements, the others blocks of 2."""
    n = 3 if group.rank == 0 else 2
    dist.alltoall(_blocks([n] * group.size), _blocks([n] * group.size), group=group)


def _alltoall_own_block_differs(group: Any) -> None:
    """Rank 1's block for itself (3 elements) does not fit its output block for itself (2)."""
    sizes = [2] * group.size
    dist.alltoall(_blocks(sizes), _blocks([3 if k == group.rank == 1 else 2 for k in range(group.size)]), group=group)


def _alltoall_dtypes_differ(group: Any) -> None:
    sizes = [2] * group.size
    dtype = "float32" if group.rank == 0 else "int32"
    dist.alltoall(_blocks(sizes, dtype), _blocks(sizes, dtype), group=group)


def _alltoall_single_refused(group: Any) -> None:
    """Rank 1's split sizes do not add up to its rows: it refuses its own arguments."""
    rows = [1] * group.size
    splits = [2] + [1] * (group.size - 1) if group.rank == 1 else rows
    dist.alltoall_single(minidp.zeros([group.size]), minidp.zeros([group.size]), splits, rows, group=group)


ALLTOALL_CASES: Dict[str, Tuple[Callable[[Any], None], Tuple[str, ...], Tuple[str, ...]]] = {
    # case: (what every rank runs, what rank 1's error says, what the other ranks' errors say)
    "alltoall blocks": (
        _alltoall_blocks_differ,
        ("rank 0 sends float32[3] to rank 1, which expects float32[2]",),
        ("rank 0 sends float32[3] to rank 1, which expects float32[2]", "rank 1 sends float32[2] to rank 0"),
    ),
    "alltoall own block": (
        _alltoall_own_block_differs,
        ("rank 1 keeps float32[3] for itself but its own output block holds float32[2]",),
        ("rank 1 keeps float32[3] for itself but its own output block holds float32[2]",),
    ),
    "alltoall dtypes": (
        _alltoall_dtypes_differ,
        ("rank 0 sends float32 blocks while rank 1 sends int32 blocks",),
        ("rank 0 sends float32 blocks while rank ", " sends int32 blocks"),
    ),
    "alltoall_single refused": (
        _alltoall_single_refused,
        ("alltoall_single: the split sizes of in_tensor [2, 1", "but it has"),
        ("rank 1 refused its arguments (see the error on that rank); no block was exchanged",),
    ),
}
"""Every rank raises at once: rank 1 names what it refused or the mismatch, the others name it too
(``RuntimeError``) instead of waiting for rank 1 until the group timeout."""

AGAINST_A_SEND = {"send vs barrier", "send vs all_reduce"}
"""Rank 0 sends to rank 1 while the others issue a collective: ranks beyond 1 raise too, once
rank 0 gives up, but they see only that it failed."""


def run_mismatch_cases(new_group: Callable[[], Any]) -> Dict[str, Tuple[str, float]]:
    """Every case on a fresh group: this rank's error message (or "no error") and its time."""
    report = {}
    bodies = [(name, body) for name, (body, _, _) in CASES.items()]
    for name, body in bodies + [(name, body) for name, (body, _, _) in ALLTOALL_CASES.items()]:
        group = new_group()
        started = time.monotonic()
        try:
            body(group)
            message = "no error"
        except (RuntimeError, ValueError) as error:
            message = f"{type(error).__name__}: {error}"
        report[name] = (message, time.monotonic() - started)
    return report


def check_mismatch_reports(reports: Any) -> None:
    """Every rank involved raised, naming rank 0's operation and its own, long before the group
    timeout (30 s in the tests): the fingerprints caught the mismatch, not the timeout. (Issue 13
    asks for 5 s; the check allows 15 s so that a loaded machine does not fail it.) Every rank of
    an all-to-all whose ranks disagree raised as :data:`ALLTOALL_CASES` says, as fast."""
    for rank, report in enumerate(reports):
        for name, (body, first, other) in CASES.items():
            message, seconds = report[name]
            if name == "send vs recv" and rank > 1:
                assert message == "no error", (rank, name, message)
                continue
            if name in AGAINST_A_SEND and rank > 1:
                assert message != "no error" and seconds < 15, (rank, name, message, seconds)
                continue
            mine = first if rank == 0 else other
            assert "the ranks issued different operations" in message, (rank, name, message)
            assert f"at rank {rank}:" in message and f"called {mine}" in message, (rank, name, message)
            assert f"rank 0 called {first} while rank " in message, (rank, name, message)
            assert f"called {other}" in message, (rank, name, message)
            assert seconds < 15, (rank, name, seconds)
        for name, (_, of_rank_one, of_the_others) in ALLTOALL_CASES.items():
            message, seconds = report[name]
            for text in of_rank_one if rank == 1 else of_the_others:
                assert text in message, (rank, name, message)
            refused = rank == 1 and name == "alltoall_single refused"
            assert message.startswith("ValueError: " if refused else "RuntimeError: "), (rank, name, message)
            assert refused or f"at rank {rank}: " in message, (rank, name, message)
            assert seconds < 15, (rank, name, seconds)
