"""The job supervisor shared by ``spawn`` and ``python -m minidp.distributed.launch``.

It watches one node's ranks and owns the policy both front-ends follow:

* **Watching.** Each rank handle reports its exit as an ``("exit", rank)`` event; front-ends
  post their own events (a signal to the launcher, news from another node) to the same queue,
  and :meth:`Supervisor.wait` returns the first that needs a decision.
* **The first failure.** When a rank fails, its peers soon fail too (their connections to it
  break) and may even exit before it does. Ranks that wrote a failure record (see
  :mod:`minidp.core.distributed.failure_record`) but still run are exiting by themselves, and ranks
  that a record blames are about to fail or to report: both get up to ``STOP_GRACE_SECONDS``
  to exit. The failed ranks are then ordered: those whose record
  blames another failed rank last; within each part by the time of their record (for a rank
  that wrote none -- killed by a signal, or ``sys.exit(3)`` -- by when its exit was seen). No
  error text is read.
* **Where the others are.** The ranks still running when the first failure is known are asked
  for their Python stacks (SIGUSR1 to the rank's own process, not its group: DataLoader workers
  are left alone; only ranks that armed the dump, see
  :func:`~minidp.core.distributed.failure_record.arm_stack_dump`), which the failure carries for
  the front-end's summary; waiting for them takes at most ``STACK_DUMP_SECONDS``.
* **Stopping.** SIGTERM (or the given signal) to every live rank, SIGKILL to those still alive
  ``STOP_GRACE_SECONDS`` later.
"""

from __future__ import annotations

import abc
import ctypes
import logging
import os
import queue
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from .failure_record import STACK_DUMP_SIGNAL, FailureRecord, read_failure_records, stack_dump_path

logger = logging.getLogger("minidp.distributed")

STOP_GRACE_SECONDS = 5.0
STACK_DUMP_SECONDS = 1.5
# A stack dump shows at most this many frames of each thread (the innermost: where it waits).
STACK_DUMP_FRAMES = 12

_PR_SET_PDEATHSIG = 1
# Loaded at import, in the parent: a child between fork and exec must not call dlopen.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15; ``40`` for a number with no name (real-time signals)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def die_with_parent(parent_pid: Optional[int]) -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux only).

    ``parent_pid`` is the pid the caller expects as parent: if the parent already died before
    the request was made, this process exits at once. Pass None when the real parent is an
    intermediary (the ``forkserver``), which itself exits with the parent. Elsewhere than Linux
    this does nothing.
    """
    if _LIBC is None or _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


class RankHandle(abc.ABC):
    """One running rank as the supervisor sees it; front-ends implement the process side.

    ``stopped`` tells whether the supervisor signalled the rank; ``exited_at`` is the wall-clock
    time its exit was seen.
    """

    def __init__(self, rank: int, pid: int) -> None:
        self.rank = rank
        self.pid = pid
        self.stopped = False
        self.exited_at: Optional[float] = None

    @property
    @abc.abstractmethod
    def returncode(self) -> Optional[int]:
        """None while running; the exit code, negative for a signal (as ``subprocess``)."""

    @abc.abstractmethod
    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        """Start watching; put ``("exit", rank)`` in ``events`` once the rank has ended."""

    @abc.abstractmethod
    def _deliver(self, signum: int) -> None:
        """Send ``signum`` to the rank (and whatever it started, where that is tracked)."""

    @abc.abstractmethod
    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the rank to end; True once it has."""

    def send_signal(self, signum: int) -> None:
        """Signal the rank, marking it as stopped by the supervisor."""
        self.stopped = True
        try:
            self._deliver(signum)
        except (ProcessLookupError, PermissionError):
            pass

    def failed_by_itself(self) -> bool:
        """True once the rank has exited non-zero without the supervisor having signalled it."""
        return self.returncode not in (None, 0) and not self.stopped

    def describe(self, record: Optional[FailureRecord]) -> str:
        """How the rank failed, in one phrase: its exit, its signal or its recorded error."""
        who = f"rank {self.rank} (pid {self.pid})"
        code = self.returncode
        if code is None:
            error = f" ({record.error})" if record is not None else ""
            return f"{who} raised an exception{error} and has not exited"
        if code < 0:
            return f"{who} was killed by signal {signal_name(-code)}"
        return f"{who} exited with code {code}"


@dataclass
class Failure:
    """The rank that failed first (``culprit``, with its record if it wrote one), the ranks
    that failed after it (``others``, in order) and every failure record read (``records``)."""

    culprit: RankHandle
    record: Optional[FailureRecord]
    others: List[RankHandle] = field(default_factory=list)
    records: Dict[int, FailureRecord] = field(default_factory=dict)
    stacks: Dict[int, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One line naming the culprit and how it failed."""
        return self.culprit.describe(self.record)

    def others_described(self) -> List[str]:
        """One line per other failed rank, telling only what the evidence shows.

        A rank whose own record blames another failed rank failed because it lost its connection
        to that rank; any other rank failed for reasons of its own: its recorded error, else its
        exit or signal. Nothing is inferred from timing alone.
        """
        failed = {self.culprit.rank, *(handle.rank for handle in self.others)}
        lines = []
        for handle in self.others:
            record = self.records.get(handle.rank)
            if record is not None and record.blamed_rank in failed - {handle.rank}:
                lines.append(
                    f"rank {handle.rank} failed after it lost its connection to rank {record.blamed_rank} "
                    f"(its failure record: {record.error})"
                )
            elif record is not None:
                lines.append(f"rank {handle.rank} (pid {handle.pid}) failed with its own error: {record.error}")
            else:
                lines.append(f"{handle.describe(None)} without reporting an error")
        return lines

    def stacks_described(self) -> List[str]:
        """One paragraph per rank that was still running, showing where its threads were."""
        return [
            f"rank {rank} was still running; its Python stacks (most recent call first):\n{text}"
            for rank, text in sorted(self.stacks.items())
        ]


def trim_stack_dump(text: str) -> str:
    """``faulthandler``'s dump of all threads, each cut to its innermost ``STACK_DUMP_FRAMES``
    frames and indented for a summary."""
    lines: List[str] = []
    frames = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            frames = 0
        elif frames == STACK_DUMP_FRAMES:
            lines.append("      ...")
            frames += 1
            continue
        elif frames > STACK_DUMP_FRAMES:
            continue
        else:
            frames += 1
        lines.append(f"    {line}")
    return "\n".join(lines)


class JobEvent(NamedTuple):
    """What :meth:`Supervisor.wait` returns: ``kind`` is "finished", "timeout", "failed" (the
    value is a :class:`Failure`) or a kind a front-end posted."""

    kind: str
    value: object = None


def _blamed(records: Dict[int, FailureRecord]) -> Set[int]:
    """The ranks that some record blames."""
    return {record.blamed_rank for record in records.values() if record.blamed_rank is not None}


def _read_text(path: str) -> str:
    """The file's text, or "" when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return ""


class Supervisor:
    """Watches one node's ranks: see the module docstring for the policy."""

    def __init__(self, failure_dir: str) -> None:
        self.failure_dir = failure_dir
        self.ranks: Dict[int, RankHandle] = {}
        self.events: "queue.SimpleQueue[Tuple[str, object]]" = queue.SimpleQueue()
        self.running: Set[int] = set()

    def add(self, handle: RankHandle) -> None:
        """Supervise one more started rank (call :meth:`watch` once all are started)."""
        self.ranks[handle.rank] = handle
        self.running.add(handle.rank)

    def watch(self) -> None:
        """Start every rank's watcher (after all processes started: no fork after threads)."""
        for handle in self.ranks.values():
            handle.watch(self.events)

    def post(self, kind: str, value: object = None) -> None:
        """Put a front-end's event in the queue (safe from a signal handler)."""
        self.events.put((kind, value))

    def wait(self, timeout: Optional[float] = None) -> JobEvent:
        """Wait until every rank finished cleanly, one failed, a posted event came, or
        ``timeout`` seconds passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                kind, value = self.events.get(timeout=remaining)
            except queue.Empty:
                return JobEvent("timeout")
            if kind != "exit":
                return JobEvent(kind, value)
            self._exited(value)
            if self.ranks[value].returncode != 0:
                return JobEvent("failed", self._first_failure(self.ranks[value]))
        return JobEvent("finished")

    def _exited(self, rank: object) -> None:
        handle = self.ranks[rank]
        handle.wait(STOP_GRACE_SECONDS)
        handle.exited_at = time.time()
        self.running.discard(rank)

    def _first_failure(self, exited: RankHandle) -> Failure:
        """Let the ranks that recorded a failure exit by themselves, then order the failed
        ranks (``exited`` is the rank whose failed exit was seen first)."""
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        postponed = []
        records = read_failure_records(self.failure_dir)
        while any(rank in records or rank in _blamed(records) for rank in self.running):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                kind, value = self.events.get(timeout=min(remaining, 0.2))
            except queue.Empty:
                records = read_failure_records(self.failure_dir)
                continue
            if kind == "exit":
                self._exited(value)
            else:
                postponed.append((kind, value))
            records = read_failure_records(self.failure_dir)
        for item in postponed:
            self.events.put(item)
        failed = [
            handle
            for handle in self.ranks.values()
            if handle.failed_by_itself() or (handle.rank in records and not handle.stopped)
        ]
        failed_ranks = {handle.rank for handle in failed}

        def order(handle: RankHandle) -> Tuple[bool, float, int]:
            record = records.get(handle.rank)
            blames_a_failed_peer = (
                record is not None
                and record.blamed_rank is not None
                and record.blamed_rank in failed_ranks - {handle.rank}
            )
            if record is not None:
                when = record.time
            else:
                when = handle.exited_at if handle.exited_at is not None else float("inf")
            return blames_a_failed_peer, when, handle.rank

        failed = sorted(failed, key=order) or [exited]
        culprit = failed[0]
        return Failure(culprit, records.get(culprit.rank), failed[1:], records, self._dump_stacks())

    def _dump_stacks(self) -> Dict[int, str]:
        """Ask each running rank that armed its stack dump for its stacks; the dumps that came
        within ``STACK_DUMP_SECONDS``, trimmed, by rank."""
        pending: Dict[int, Tuple[str, int]] = {}
        for handle in self.ranks.values():
            path = stack_dump_path(self.failure_dir, handle.rank)
            if handle.returncode is not None or not os.path.exists(path):
                continue
            try:
                os.kill(handle.pid, STACK_DUMP_SIGNAL)
            except (ProcessLookupError, PermissionError):
                continue
            pending[handle.rank] = (path, -1)
        stacks: Dict[int, str] = {}
        deadline = time.monotonic() + STACK_DUMP_SECONDS
        while pending and time.monotonic() < deadline:
            time.sleep(0.05)  # the dump is written by the rank's signal handler: nothing to wait on
            for rank, (path, size) in list(pending.items()):
                text = _read_text(path)
                if text.endswith("\n") and len(text) == size:
                    stacks[rank] = trim_stack_dump(text)
                    del pending[rank]
                else:
                    pending[rank] = (path, len(text))
        for rank, (path, _size) in pending.items():
            text = _read_text(path)
            if text:
                stacks[rank] = trim_stack_dump(text)
        return stacks

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Send ``signum`` to every live rank, SIGKILL those alive after the grace period."""
        alive = [handle for handle in self.ranks.values() if handle.returncode is None]
        for handle in alive:
            handle.send_signal(signum)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for handle in alive:
            if handle.wait(max(0.0, deadline - time.monotonic())):
                continue
            if signum != signal.SIGKILL:
                logger.warning("rank %d ignored signal %s; killing it", handle.rank, signal_name(signum))
                handle.send_signal(signal.SIGKILL)
            if not handle.wait(STOP_GRACE_SECONDS):
                logger.error("rank %d (pid %d) survived SIGKILL (stuck in the kernel?)", handle.rank, handle.pid)
        self.running.clear()
