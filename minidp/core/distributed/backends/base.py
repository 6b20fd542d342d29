"""The process-group interface every communication backend implements, in two layers.

A process group is a fixed set of ``size`` processes that call the same collectives in the same
order. Each process knows its group-local ``rank``. The interface, used by the gradient reducer
and by every backend (gloo, mpi, nccl):

``ReduceOp``
    ``SUM``, ``AVG``, ``MAX``, ``MIN``, ``PROD``.
``Work``
    The handle of one operation: ``wait(timeout=None) -> bool`` (True once the operation is
    done; raises ``RuntimeError`` if it failed or does not finish within ``timeout`` seconds)
    and ``is_completed() -> bool``.
``ProcessGroup``
    Attributes ``rank``, ``size``, ``timeout`` (seconds), ``name`` and ``backend_name``; methods

    - ``all_reduce(array, op=ReduceOp.SUM, sync_op=True) -> Work``: in place on ``array``;
    - ``broadcast(array, src, sync_op=True) -> Work``: in place, ``src`` a group-local rank;
    - ``all_gather(out_array, array, sync_op=True) -> Work``: ``out_array`` has the shape
      ``[size, *array.shape]`` and receives every rank's ``array`` in rank order;
    - ``reduce_scatter(out_array, in_array, op=ReduceOp.SUM, sync_op=True) -> Work``:
      ``in_array`` holds ``size * out_array.size`` elements; rank ``r`` receives the reduction
      of block ``r``;
    - ``barrier(timeout=None)``; ``send(array, dst)``; ``recv(array, src)`` (synchronous);
    - ``allocate(shape, dtype) -> array``: a zeroed host array for an operand the group moves
      again and again (DataParallel's buckets, each allocated once, when it is built); gloo places
      it in the shared memory of the host's ranks so ``all_reduce`` reads it in place, which makes
      it a collective there;
    - ``shutdown()``.

Operands are C-contiguous, writable arrays (NumPy arrays for the CPU backends) or minidp Tensors,
whose ``_data`` is used in place, as Paddle's process groups take tensors; zero-size arrays are
allowed. ``AVG`` of floating types (bfloat16 included) divides the sum by the group size on the
CPU backends; NCCL's ``ncclAvg`` instead multiplies each rank's values by 1/n rounded to the
element type and sums them, which is not an exact division (the last bits may differ, more for
float16 and bfloat16, where 1/3 itself rounds). For integers every backend truncates the
quotient toward zero; bool arrays are refused.

The two layers
--------------
:class:`ProcessGroup` holds what every backend shares: the public methods, which validate their
arguments once and describe each operation as a :class:`Collective` (op name, dtype, element
count, root, reduce op, timeout) before handing it to :meth:`ProcessGroup._issue` -- the one place
where every collective is issued --; the failure state (a failed operation leaves the group broken:
every later operation raises at once instead of exchanging mismatched bytes); the closed state;
and the descriptions that prefix every error message.

:class:`ThreadedProcessGroup` adds the execution gloo and mpi use: with ``sync_op=False`` an
operation is queued on the group's single background thread, so asynchronous operations run in
the order they were issued -- the same order on every rank -- and a synchronous operation issued
after them runs after them. Before it reads a peer's data, each operation exchanges a small
:class:`Fingerprint` (sequence number, op, reduce op, dtype, element count, root) with its
peers, so ranks that issued different operations raise, naming both, instead of exchanging
mismatched bytes: "rank 0 called barrier (#12) while rank 1 called all_reduce SUM
float32[1000] (#12)". The nccl backend inherits :class:`ProcessGroup` only: it queues
operations on a CUDA stream instead.

A rank left waiting for a peer says so: after ``MINIDP_STALL_WARNING_SECONDS`` (default 60 s)
of blocking on one operation, :meth:`ProcessGroup._note_waiting` (which the backends' wait loops
call) logs a warning naming the peer, once per operation; the operation still fails only at the
group timeout.

Backends implement the underscore methods (``_all_reduce``, ``_broadcast``, ``_all_gather``,
``_reduce_scatter``, ``_barrier``, ``_send``, ``_recv`` and ``_close``); what they return is
handed back to the backend's ``_issue`` (nccl: the arrays it staged through device memory). A
backend whose arrays are not NumPy arrays (nccl: CuPy) overrides ``_check_array`` too. Each
backend module offers ``create_process_group(spec: GroupSpec)``, which the table in
``backends/__init__.py`` maps a backend name to.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import logging
import math
import os
import queue
import struct
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy

from ... import timeline
from ...tensor import Tensor
from ...backend import get_array_module, is_floating

logger = logging.getLogger("minidp.distributed")


class ReduceOp(enum.IntEnum):
    """How a reducing collective combines the ranks' values (Paddle's ``ReduceOp``)."""

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


def stall_warning_seconds() -> float:
    """How long a collective waits for a peer before saying so in the log:
    ``MINIDP_STALL_WARNING_SECONDS`` (default 60 s)."""
    value = os.environ.get("MINIDP_STALL_WARNING_SECONDS", "").strip() or "60"
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise ValueError(f"MINIDP_STALL_WARNING_SECONDS={value!r} must be a positive number of seconds")
    return seconds


def divide_by_size(array: Any, size: int) -> None:
    """Finish an ``AVG`` reduction in place: true division for floating types; for integers the
    quotient truncated toward zero, as Paddle's AVG (NCCL's ``ncclAvg``) gives it (-7 / 2 == -3)."""
    if is_floating(array.dtype) or array.dtype.kind == "c":
        array /= size
    else:
        array -= get_array_module(array).fmod(array, size)
        array //= size


_FINISHING = threading.Lock()  # makes Work._finish's check and update one step


class Work:
    """Handle of one collective; completed by the thread that ran it."""

    __slots__ = ("_description", "_done", "_error")

    def __init__(self, description: str) -> None:
        self._description = description
        self._done = threading.Event()
        self._error: Optional[BaseException] = None

    @classmethod
    def completed(cls, description: str) -> "Work":
        """A handle for an operation that already finished successfully."""
        work = cls(description)
        work._done.set()
        return work

    def _finish(self, error: Optional[BaseException] = None) -> None:
        """Mark the operation done, failed with ``error`` if given. Only the first call counts:
        two threads may finish one work (a waiter and the nccl watchdog), and a work seen done
        keeps its outcome."""
        with _FINISHING:
            if self._done.is_set():
                return
            self._error = error
            self._done.set()

    def is_completed(self) -> bool:
        """True once the operation has finished, successfully or not."""
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the operation is done; return True, or raise ``RuntimeError``.

        ``timeout`` (seconds) bounds this wait; ``None`` waits for the operation, which is
        itself bounded by its process group's timeout.
        """
        if not self._done.wait(timeout):
            raise RuntimeError(
                f"{self._description} did not complete within {timeout} s; wait longer or "
                "check that every rank issued the same collectives"
            )
        if self._error is not None:
            raise RuntimeError(str(self._error)) from self._error
        return True

    def __repr__(self) -> str:
        state = "failed" if self._error else ("done" if self.is_completed() else "pending")
        return f"<Work {self._description}: {state}>"


@dataclasses.dataclass(frozen=True)
class GroupSpec:
    """What a backend factory needs to build one process group.

    Every process of the job calls the factory for every new group, members or not (MPI must
    split its communicator collectively); the factory returns None where ``rank`` is -1.
    ``store`` is the job's rendezvous store (None for backends that need none).
    """

    name: str
    global_ranks: tuple
    global_rank: int
    timeout: float
    store: Any = None

    @property
    def rank(self) -> int:
        """This process's rank in the group, or -1 when it is not a member."""
        if self.global_rank not in self.global_ranks:
            return -1
        return self.global_ranks.index(self.global_rank)

    @property
    def size(self) -> int:
        return len(self.global_ranks)


class Collective(NamedTuple):
    """One operation as issued: what every rank of the group must agree on.

    ``count`` is the number of elements this rank contributes (0 for a barrier, whose ``dtype``
    is None); ``root`` is the source of a broadcast or a receive and the destination of a send;
    ``timeout`` (seconds) bounds the operation.
    """

    op: str
    dtype: Optional[numpy.dtype]
    count: int
    timeout: float
    root: Optional[int] = None
    reduce_op: Optional[ReduceOp] = None


_FINGERPRINT = struct.Struct("!Q16s8s16sqi")
_SEQUENCE = struct.Struct("!Q")  # the head of an encoded Fingerprint
_POINT_TO_POINT = ("send", "recv")


class Fingerprint(NamedTuple):
    """What a rank is about to run, as exchanged with its peers before any data moves.

    ``seq`` numbers the group's collectives (and, separately, each pair's sends and receives)
    in issue order; ``reduce_op`` and ``dtype`` are names ("" when there is none); ``root`` is
    -1 when there is none. :meth:`encode` packs it into :data:`Fingerprint.SIZE` bytes.
    """

    seq: int
    op: str
    reduce_op: str
    dtype: str
    count: int
    root: int

    SIZE = _FINGERPRINT.size

    @classmethod
    def of(cls, call: Collective, seq: int) -> "Fingerprint":
        return cls(
            seq,
            call.op,
            call.reduce_op.name if call.reduce_op is not None else "",
            call.dtype.name if call.dtype is not None else "",
            call.count,
            -1 if call.root is None else call.root,
        )

    def encode(self) -> bytes:
        return _FINGERPRINT.pack(
            self.seq, self.op.encode(), self.reduce_op.encode(), self.dtype.encode(), self.count, self.root
        )

    @classmethod
    def decode(cls, data: bytes) -> "Fingerprint":
        """The fingerprint in ``data`` (bytes from a peer: text fields are decoded leniently)."""
        seq, op, reduce_op, dtype, count, root = _FINGERPRINT.unpack(data)

        def text(raw: bytes) -> str:
            return raw.rstrip(b"\0").decode("ascii", "replace")

        return cls(seq, text(op), text(reduce_op), text(dtype), count, root)

    def counterpart(self, rank: int) -> "Fingerprint":
        """What a peer must be running for this rank's operation to go ahead: the same
        collective, or for a send from ``rank`` the matching receive (and vice versa)."""
        if self.op in _POINT_TO_POINT:
            return self._replace(op="recv" if self.op == "send" else "send", root=rank)
        return self

    def __str__(self) -> str:
        """``all_reduce SUM float32[1000] (#12)``, ``send int64[5] to rank 1 (#3)``."""
        text = f"{self.op} {self.reduce_op}".rstrip()
        if self.dtype:
            text += f" {self.dtype}[{self.count}]"
        if self.root >= 0:
            text += f" {'to' if self.op == 'send' else 'from'} rank {self.root}"
        return f"{text} (#{self.seq})"


@functools.lru_cache(maxsize=1024)
def _encoded_operation(call: Collective, rank: int) -> Tuple[bytes, bytes]:
    """What follows the sequence number in ``call``'s encoded :class:`Fingerprint` at ``rank``
    and in its counterpart's (the same bytes twice unless ``call`` is a send or receive).

    Cached: a training step issues the same few operations again and again, and naming a dtype
    alone costs more than the rest of a small all-reduce's bookkeeping."""
    mine = Fingerprint.of(call, 0)
    operation = mine.encode()[_SEQUENCE.size :]
    counterpart = mine.counterpart(rank)
    return operation, (operation if counterpart is mine else counterpart.encode()[_SEQUENCE.size :])


def different_operations(fingerprints: Dict[int, Fingerprint], describe_rank: Callable[[int], str]) -> str:
    """``the ranks issued different operations: rank 0 called barrier (#12) while rank 1 called
    all_reduce SUM float32[1000] (#12); ...``, for two ranks' differing fingerprints."""
    (low, low_op), (high, high_op) = sorted(fingerprints.items())
    return (
        f"the ranks issued different operations: {describe_rank(low)} called {low_op} while "
        f"{describe_rank(high)} called {high_op}; every rank must issue the same collectives "
        "in the same order, with the same shapes and dtypes"
    )


class ProcessGroup(abc.ABC):
    """Base of every backend: argument checks, descriptions, failure and closed state.

    ``global_ranks`` maps group-local ranks to ranks of the whole job; it only improves error
    messages (``rank 1 (global 3)``). Subclasses implement :meth:`_issue` (how an operation is
    run or queued), :meth:`_finish_outstanding` and the operations' underscore methods.
    """

    backend_name = "base"
    # Whether _all_gather accepts ``array`` being ``out_array[rank]`` itself; where it does not,
    # all_gather copies such an ``array`` first.
    gathers_in_place = False

    def __init__(
        self, rank: int, size: int, *, name: str, timeout: float, global_ranks: Optional[Sequence[int]] = None
    ) -> None:
        if size < 1 or not 0 <= rank < size:
            raise ValueError(f"rank {rank} is not in a group of size {size}")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.rank = rank
        self.size = size
        self.name = name
        self.timeout = float(timeout)
        self.global_ranks = list(global_ranks) if global_ranks is not None else list(range(size))
        # Serialises issuing (and, in nccl, every call into the communicator). Reentrant: a
        # failure while issuing cleans up under the same lock.
        self._issue_lock = threading.RLock()
        self._failure_lock = threading.Lock()
        self._failure: Optional[BaseException] = None
        self._closed = False
        self.stall_warning = stall_warning_seconds()
        # The operation blocked on a peer (by its deadline), since when, and whether it warned.
        self._waiting: Tuple[float, float, bool] = (math.nan, 0.0, False)

    # --- naming, for messages -------------------------------------------------------------
    def describe_rank(self, rank: int) -> str:
        """``rank 1`` or, when group and job ranks differ, ``rank 1 (global 3)``."""
        global_rank = self.global_ranks[rank]
        return f"rank {rank}" if global_rank == rank else f"rank {rank} (global {global_rank})"

    def describe(self, op: str) -> str:
        """``gloo all_reduce on group 'default' at rank 0``: the prefix of every error."""
        return f"{self.backend_name} {op} on group '{self.name}' at {self.describe_rank(self.rank)}"

    # --- argument checks ------------------------------------------------------------------
    def _operand(self, value: Any, what: str) -> Any:
        """The array to communicate in place: ``value`` itself, or a minidp Tensor's data."""
        array = value._data if isinstance(value, Tensor) else value
        self._check_array(array, what)
        return array

    def _check_array(self, array: Any, what: str) -> None:
        """Reject arrays this backend cannot move in place; CPU backends take NumPy arrays."""
        if not isinstance(array, numpy.ndarray):
            raise TypeError(
                f"{self.backend_name} backend moves NumPy arrays and minidp Tensors; {what} is "
                f"{type(array).__name__} (use the nccl backend for GPU arrays)"
            )
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError(f"{what} must be a C-contiguous, writable array")

    def _check_rank(self, rank: int, what: str) -> None:
        if not isinstance(rank, (int, numpy.integer)) or not 0 <= rank < self.size:
            raise ValueError(f"{what}={rank!r} is not a rank of group '{self.name}' (size {self.size})")

    def _check_reduction(self, array: Any, op: Any, what: str) -> ReduceOp:
        """The ``ReduceOp`` for ``op``; refuses unknown ops and averages of bool arrays."""
        try:
            op = ReduceOp(op)
        except ValueError:
            raise ValueError(f"unknown reduce op {op!r}; use a minidp.distributed.ReduceOp") from None
        if op == ReduceOp.AVG and array.dtype == numpy.bool_:
            raise TypeError(f"{self.describe(what)}: cannot average bool arrays; cast them to a number type first")
        return op

    # --- the public collectives -----------------------------------------------------------
    def all_reduce(self, array: Any, op: ReduceOp = ReduceOp.SUM, sync_op: bool = True) -> Work:
        """Reduce ``array`` over all ranks, in place, leaving the result on every rank."""
        array = self._operand(array, "array")
        op = self._check_reduction(array, op, "all_reduce")
        call = Collective("all_reduce", array.dtype, array.size, self.timeout, reduce_op=op)
        return self._issue(call, lambda: self._all_reduce(array, op), sync_op)

    def broadcast(self, array: Any, src: int, sync_op: bool = True) -> Work:
        """Copy group-local rank ``src``'s ``array`` into ``array`` on every rank."""
        array = self._operand(array, "array")
        self._check_rank(src, "src")
        src = int(src)
        call = Collective("broadcast", array.dtype, array.size, self.timeout, root=src)
        return self._issue(call, lambda: self._broadcast(array, src), sync_op)

    def all_gather(self, out_array: Any, array: Any, sync_op: bool = True) -> Work:
        """Fill ``out_array[r]`` with rank ``r``'s ``array`` on every rank. ``array`` may be
        ``out_array[rank]`` itself (an all-gather in place)."""
        array = self._operand(array, "array")
        out_array = self._operand(out_array, "out_array")
        if tuple(out_array.shape) != (self.size, *array.shape) or out_array.dtype != array.dtype:
            raise ValueError(
                f"all_gather out_array must have shape {[self.size, *array.shape]} and dtype "
                f"{array.dtype}; got {list(out_array.shape)} {out_array.dtype}"
            )
        if not self.gathers_in_place and get_array_module(array).may_share_memory(array, out_array):
            array = array.copy()
        call = Collective("all_gather", array.dtype, array.size, self.timeout)
        return self._issue(call, lambda: self._all_gather(out_array, array), sync_op)

    def reduce_scatter(self, out_array: Any, in_array: Any, op: ReduceOp = ReduceOp.SUM, sync_op: bool = True) -> Work:
        """Reduce ``in_array`` over ranks; block ``rank`` of the result goes to ``out_array``."""
        in_array = self._operand(in_array, "in_array")
        out_array = self._operand(out_array, "out_array")
        op = self._check_reduction(in_array, op, "reduce_scatter")
        if in_array.size != self.size * out_array.size or in_array.dtype != out_array.dtype:
            raise ValueError(
                f"reduce_scatter in_array must hold {self.size} x {out_array.size} elements of "
                f"{out_array.dtype}; got {in_array.size} of {in_array.dtype}"
            )
        call = Collective("reduce_scatter", in_array.dtype, in_array.size, self.timeout, reduce_op=op)
        return self._issue(call, lambda: self._reduce_scatter(out_array, in_array, op), sync_op)

    def barrier(self, timeout: Optional[float] = None) -> None:
        """Return once every rank of the group has entered (raise after ``timeout`` seconds)."""
        limit = self.timeout if timeout is None else float(timeout)
        if not limit > 0:
            raise ValueError(f"barrier timeout must be positive, got {timeout!r}")
        self._issue(Collective("barrier", None, 0, limit), lambda: self._barrier(limit), True)

    def send(self, array: Any, dst: int) -> None:
        """Send ``array`` to group-local rank ``dst``, which calls ``recv`` with the same shape."""
        array = self._operand(array, "array")
        self._check_rank(dst, "dst")
        if dst == self.rank:
            raise ValueError(f"rank {self.rank} cannot send to itself")
        dst = int(dst)
        call = Collective("send", array.dtype, array.size, self.timeout, root=dst)
        self._issue(call, lambda: self._send(array, dst), True)

    def recv(self, array: Any, src: int) -> None:
        """Receive into ``array`` what group-local rank ``src`` sends."""
        array = self._operand(array, "array")
        self._check_rank(src, "src")
        if src == self.rank:
            raise ValueError(f"rank {self.rank} cannot receive from itself")
        src = int(src)
        call = Collective("recv", array.dtype, array.size, self.timeout, root=src)
        self._issue(call, lambda: self._recv(array, src), True)

    def allocate(self, shape: Sequence[int], dtype: Any = "float32") -> numpy.ndarray:
        """A zeroed, C-contiguous host array meant to be communicated repeatedly.

        Backends with shared memory between a host's ranks (gloo) place it there, so an
        ``all_reduce`` on it skips the copy into shared memory; elsewhere it is a plain NumPy
        array. A collective: every rank calls it with the same shape and dtype, in the same
        order relative to the group's other operations.
        """
        return numpy.zeros(tuple(shape), numpy.dtype(dtype))

    def shutdown(self) -> None:
        """Finish outstanding operations (each bounded by the timeout), then release connections."""
        with self._issue_lock:
            if self._closed:
                return
            self._closed = True
        self._finish_outstanding()
        self._close()

    # --- issuing, failures ----------------------------------------------------------------
    @abc.abstractmethod
    def _issue(self, call: Collective, run: Callable[[], Any], sync_op: bool) -> Work:
        """Run or queue ``run`` (which performs ``call``); wait for it when ``sync_op``."""

    @abc.abstractmethod
    def _finish_outstanding(self) -> None:
        """At shutdown: let every issued operation finish (each bounded by its timeout)."""

    def _note_waiting(self, op: str, peer: int, deadline: float) -> float:
        """Called by a backend each time an operation (known by its ``deadline``) blocks on
        group rank ``peer``: logs once, after :attr:`stall_warning` seconds of waiting, that the
        peer seems to have stopped calling collectives. Returns the seconds until that warning
        is due (infinite once given), so a backend can bound its sleep."""
        now = time.monotonic()
        if self._waiting[0] != deadline:
            self._waiting = (deadline, now, False)
        _, since, warned = self._waiting
        waited = now - since
        if waited < self.stall_warning:
            return self.stall_warning - waited
        if not warned:
            self._waiting = (deadline, since, True)
            logger.warning(
                "rank %d: %s has waited %.0f s for %s, which has not reached it: that rank may "
                "have stopped calling collectives (inputs of uneven length? see "
                "DataParallel.join) or be stuck; giving up at the group timeout (%g s)",
                self.global_ranks[self.rank],
                self.describe(op),
                waited,
                self.describe_rank(peer),
                self.timeout,
            )
        return math.inf

    def _check_open(self, op: str) -> None:
        """Raise ``RuntimeError`` for ``op`` issued after :meth:`shutdown`."""
        if self._closed:
            raise RuntimeError(
                f"{self.describe(op)}: the process group was shut down; create a new group to communicate again"
            )

    def _unusable(self, description: str) -> RuntimeError:
        """The error of an operation refused because an earlier one failed."""
        return RuntimeError(
            f"{description}: the group is unusable after an earlier failure "
            f"({self._failure}); destroy it and initialise again"
        )

    def _record_failure(self, error: BaseException) -> bool:
        """Remember the group's first failure (and log it); True when ``error`` is that one."""
        with self._failure_lock:
            if self._failure is not None:
                return False
            self._failure = error
        logger.error("%s", error)
        return True

    def _guarded(self, call: Collective, run: Callable[[], Any]) -> Any:
        """``run()``'s result; refuses to run after a failure, and a failure breaks the group."""
        if self._failure is not None:
            raise self._unusable(self.describe(call.op))
        try:
            return run()
        except Exception as error:
            if self._record_failure(error):
                self._on_failure()
            if isinstance(error, (RuntimeError, ValueError, TypeError)):
                raise
            raise RuntimeError(f"{self.describe(call.op)} failed: {error!r}") from error

    def _on_failure(self) -> None:
        """Called once when an operation fails; backends drop connections so peers fail fast."""
        self._close()

    # --- what backends implement ------------------------------------------------------------
    @abc.abstractmethod
    def _all_reduce(self, array: Any, op: ReduceOp) -> Any:
        """Reduce ``array`` in place over the group."""

    @abc.abstractmethod
    def _broadcast(self, array: Any, src: int) -> Any:
        """Overwrite ``array`` with rank ``src``'s."""

    @abc.abstractmethod
    def _all_gather(self, out_array: Any, array: Any) -> Any:
        """Write every rank's ``array`` into ``out_array[rank]``."""

    @abc.abstractmethod
    def _reduce_scatter(self, out_array: Any, in_array: Any, op: ReduceOp) -> Any:
        """Write block ``self.rank`` of the reduction of ``in_array`` into ``out_array``."""

    @abc.abstractmethod
    def _barrier(self, timeout: float) -> Any:
        """Return when every rank has entered; raise after ``timeout`` seconds."""

    @abc.abstractmethod
    def _send(self, array: Any, dst: int) -> Any:
        """Send ``array`` to rank ``dst``."""

    @abc.abstractmethod
    def _recv(self, array: Any, src: int) -> Any:
        """Receive into ``array`` from rank ``src``."""

    @abc.abstractmethod
    def _close(self) -> None:
        """Release connections; must be safe to call more than once."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}' rank {self.rank}/{self.size} timeout {self.timeout:g}s>"


_STOP = object()


class ThreadedProcessGroup(ProcessGroup):
    """A process group whose operations run on the host: gloo and mpi.

    A synchronous operation with nothing queued runs at once on the caller's thread; anything
    else is queued on the group's single background worker thread, which runs operations in
    issue order.

    Before an operation moves any data, its :class:`Fingerprint` is exchanged with the peers it
    talks to (``_exchange_fingerprints``, which backends implement) and checked: ranks that
    issued different operations -- another collective, shape, dtype, reduce op or root -- raise
    ``RuntimeError`` naming both ranks' operations instead of exchanging mismatched bytes.
    """

    def __init__(
        self, rank: int, size: int, *, name: str, timeout: float, global_ranks: Optional[Sequence[int]] = None
    ) -> None:
        super().__init__(rank, size, name=name, timeout=timeout, global_ranks=global_ranks)
        self._pending = 0
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._worker: Optional[threading.Thread] = None
        self._completed: Dict[str, Work] = {}
        self._collectives_issued = 0
        self._messages_issued: Dict[int, int] = {}

    def _issue(self, call: Collective, run: Callable[[], Any], sync_op: bool) -> Work:
        """Run ``run`` now (nothing queued, synchronous) or queue it behind earlier operations,
        in either case after checking its fingerprint against the peers'."""
        with self._issue_lock:
            self._check_open(call.op)
            seq = self._next_seq(call)

            def checked() -> Any:
                self._check_fingerprints(call, seq)
                return run()

            if sync_op and self._pending == 0:
                self._guarded(call, checked)
                return self._completed_work(call.op)
            work = Work(self.describe(call.op))
            self._pending += 1
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._serve_queue, daemon=True, name=f"minidp-{self.backend_name}-{self.name}"
                )
                self._worker.start()
            self._queue.put((call, checked, work))
        if sync_op:
            work.wait()
        return work

    def _next_seq(self, call: Collective) -> int:
        """Number ``call`` in issue order: collectives in one series, messages to or from each
        peer in a series of their own (ranks that are not involved do not count them)."""
        if call.op in _POINT_TO_POINT:
            self._messages_issued[call.root] = self._messages_issued.get(call.root, 0) + 1
            return self._messages_issued[call.root]
        self._collectives_issued += 1
        return self._collectives_issued

    def _check_fingerprints(self, call: Collective, seq: int) -> None:
        """Raise ``RuntimeError`` unless every peer that reported runs the counterpart of
        ``call`` (number ``seq``); names this rank's and the first differing peer's operations.
        Fingerprints are compared as bytes and decoded only for the message."""
        operation, counterpart = _encoded_operation(call, self.rank)
        sequence = _SEQUENCE.pack(seq)
        outgoing = sequence + operation
        expected = outgoing if counterpart is operation else sequence + counterpart
        self._compare_fingerprints(call, outgoing, expected, self._exchange_fingerprints(call, outgoing))

    def _compare_fingerprints(
        self, call: Collective, mine: bytes, expected: bytes, received: List[Tuple[int, bytes]]
    ) -> None:
        """Raise ``RuntimeError`` unless every ``(peer, encoded fingerprint)`` in ``received`` is
        ``expected``, naming this rank's operation (encoded ``mine``) and the peer's."""
        for peer, theirs in received:
            if theirs != expected:
                raise RuntimeError(
                    f"{self.describe(call.op)}: "
                    + different_operations(
                        {self.rank: Fingerprint.decode(mine), peer: Fingerprint.decode(theirs)}, self.describe_rank
                    )
                )

    @abc.abstractmethod
    def _exchange_fingerprints(self, call: Collective, mine: bytes) -> List[Tuple[int, bytes]]:
        """Send the encoded fingerprint ``mine`` to the peers ``call`` involves (or enough of them
        that a mismatch anywhere is seen by the ranks on both sides of it) and return
        ``(peer, encoded fingerprint)`` for each one received; bounded by ``call.timeout``.

        A backend may instead return no fingerprints and leave the exchange to the operation,
        which runs next on the same thread: it must then pass what it receives to
        :meth:`_compare_fingerprints` before it reads any peer's data."""

    def _completed_work(self, op: str) -> Work:
        """The handle synchronous calls return: one shared, already completed, per operation."""
        work = self._completed.get(op)
        if work is None:
            work = self._completed[op] = Work.completed(self.describe(op))
        return work

    def _serve_queue(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            call, run, work = item
            try:
                with timeline.span(call.op, "comm", {"elements": call.count}):
                    self._guarded(call, run)
            except Exception as error:  # handed to whoever waits on the work
                work._finish(error)
            else:
                work._finish()
            with self._issue_lock:
                self._pending -= 1

    def _finish_outstanding(self) -> None:
        """Stop the worker after the queued operations (each bounded by the timeout)."""
        worker = self._worker
        if worker is not None:
            self._queue.put(_STOP)
            if worker is not threading.current_thread():
                worker.join(self.timeout)
