"""Failure records: how a rank tells its supervisor, in a structured way, that and why it failed.

A rank started by ``spawn`` or by ``python -m minidp.distributed.launch`` finds a directory in
``MINIDP_FAILURE_DIR``. When an exception ends the rank, it writes ``rank-N.json`` there before
anything else happens (before ``atexit`` handlers close its connections): its rank, pid, the
wall-clock time, the exception's one-line summary and the peer it blames, if any. The
supervisor reads these records to tell the rank that failed first from the ranks that failed
because of it -- whatever the backend and whatever the wording of its errors.

A rank also arms a stack dump (:func:`arm_stack_dump`): on SIGUSR1 it writes the Python stacks of
all its threads to ``stacks-rank-N.txt`` in the same directory, which the supervisor asks of the
ranks still running when another one failed, to show where they were stuck.

A rank blames a peer when the exception, or one in its ``__cause__``/``__context__`` chain, is a
:class:`PeerFailedError` (backends raise it when a peer's connection breaks or a peer stops
answering) or carries an integer ``blamed_rank`` attribute.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Dict, Iterator, NoReturn, Optional, TextIO

FAILURE_DIR_ENV = "MINIDP_FAILURE_DIR"
STACK_DUMP_SIGNAL = signal.SIGUSR1

# The file the armed stack dump writes to; faulthandler writes to its descriptor, which must stay open.
_stack_file: Optional[TextIO] = None


class PeerFailedError(RuntimeError):
    """A collective failed because another rank went away or stopped answering.

    ``blamed_rank`` is that rank's number in the job (its global rank), which the failure record
    carries so that the supervisor blames the peer instead of this rank.
    """

    def __init__(self, message: str, blamed_rank: int) -> None:
        super().__init__(message)
        self.blamed_rank = blamed_rank


@dataclass(frozen=True)
class FailureRecord:
    """What a rank reported about its own failure (``time`` is ``time.time()``)."""

    rank: int
    pid: int
    time: float
    error: str
    blamed_rank: Optional[int]


def blamed_rank(error: BaseException) -> Optional[int]:
    """The peer ``error`` (or an exception it was raised from or during) blames, or None."""
    seen = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        peer = getattr(current, "blamed_rank", None)
        if isinstance(peer, int) and not isinstance(peer, bool):
            return peer
        current = current.__cause__ or current.__context__
    return None


def _summary(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _interrupt_once(signum: int, frame: object) -> None:
    """SIGINT handler: ignore every later SIGINT, then raise this one as KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def interrupt_once() -> None:
    """Make the first SIGINT of this process raise KeyboardInterrupt and ignore the rest.

    Ctrl-C reaches a rank from the terminal and again from ``spawn`` or the launcher, often
    within milliseconds; a second KeyboardInterrupt raised while the first one is being handled
    escapes the handler and prints a traceback through whatever clean-up it hit. The handler
    ignores the later ones before Python can deliver them. Only the main thread may set it.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt_once)


@contextmanager
def one_interrupt() -> Iterator[None]:
    """Inside the block, as :func:`interrupt_once`; the previous SIGINT handler comes back after
    it, so a caller's Ctrl-C behaves as before once the block has cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _interrupt_once)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def exit_interrupted(interrupt: KeyboardInterrupt) -> NoReturn:
    """End this rank after Ctrl-C (SIGINT) with one line saying where it was -- not a traceback
    through the launcher's, the reducer's and the threads' frames -- and exit code 130.

    Further interrupts are ignored meanwhile: the launcher, ``spawn`` and the terminal may each
    deliver one.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    trace = interrupt.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    where = ""
    if trace is not None:
        code = trace.tb_frame.f_code
        where = f" at {code.co_filename}:{trace.tb_lineno} in {code.co_name}"
    rank = os.environ.get("PADDLE_TRAINER_ID", "?")
    print(f"rank {rank} interrupted (KeyboardInterrupt){where}", file=sys.stderr, flush=True)
    sys.exit(128 + signal.SIGINT)


def write_failure_record(error: BaseException) -> Optional[str]:
    """Record that ``error`` ends this rank; return the file written (None outside a job).

    Does nothing unless ``MINIDP_FAILURE_DIR`` and ``PADDLE_TRAINER_ID`` are set. The file is
    written whole (temporary name, then renamed), so a reader never sees half a record.
    """
    directory = os.environ.get(FAILURE_DIR_ENV, "")
    rank = os.environ.get("PADDLE_TRAINER_ID", "")
    if not directory or not rank.isdigit():
        return None
    record = FailureRecord(int(rank), os.getpid(), time.time(), _summary(error), blamed_rank(error))
    path = os.path.join(directory, f"rank-{rank}.json")
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(asdict(record), file)
        os.replace(partial, path)
    except OSError:
        return None
    return path


def read_failure_records(directory: str) -> Dict[int, FailureRecord]:
    """Every complete record in ``directory``, by rank (unreadable files are skipped)."""
    records: Dict[int, FailureRecord] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return records
    for name in names:
        if not (name.startswith("rank-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as file:
                record = FailureRecord(**json.load(file))
        except (OSError, ValueError, TypeError):
            continue
        records[record.rank] = record
    return records


def stack_dump_path(directory: str, rank: int) -> str:
    """Where rank ``rank`` of the job whose failure directory is ``directory`` dumps its stacks."""
    return os.path.join(directory, f"stacks-rank-{rank}.txt")


def arm_stack_dump() -> Optional[str]:
    """Make ``STACK_DUMP_SIGNAL`` (SIGUSR1) dump all of this rank's Python stacks to its stack
    file; return that file (None outside a job, where the signal keeps its default action).

    The file is created empty at once: its existence tells the supervisor that the signal is
    safe to send (an unarmed process would be killed by it).
    """
    global _stack_file
    directory = os.environ.get(FAILURE_DIR_ENV, "")
    rank = os.environ.get("PADDLE_TRAINER_ID", "")
    if not directory or not rank.isdigit():
        return None
    path = stack_dump_path(directory, int(rank))
    try:
        _stack_file = open(path, "w", encoding="utf-8")
    except OSError:
        return None
    faulthandler.register(STACK_DUMP_SIGNAL, file=_stack_file, all_threads=True)
    return path
