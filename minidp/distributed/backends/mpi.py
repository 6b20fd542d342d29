"""mpi: process groups over mpi4py, for jobs started by ``mpirun``/``mpiexec``.

Each collective is the matching non-blocking MPI call on the NumPy buffer (``Iallreduce``,
``Ibcast``, ``Iallgather``, ``Ireduce_scatter_block``, ``Ibarrier``, ``Isend``/``Irecv``),
completed by polling ``Test`` until the group's deadline: MPI has no timed wait, and polling keeps
the progress engine turning exactly as a blocking call would. A rank left waiting warns after
``MINIDP_STALL_WARNING_SECONDS`` and fails at the group timeout, naming the ranks it waits on (see
``base.ProcessGroup._note_waiting``). Data never goes through pickle.

The default group works on a duplicate of ``COMM_WORLD`` (so a user's own MPI traffic cannot mix
with minidp's); ``new_group`` splits ``COMM_WORLD``, which every process must take part in.
Asynchronous operations run on the group's background thread like every backend's; mpi4py
initialises MPI with ``MPI_THREAD_MULTIPLE``. Before each collective every pair of ranks swaps
fingerprints (see ``base.ThreadedProcessGroup``), one small message each way, so every rank sees a
mismatch and knows which peers have not issued the operation yet: those whose fingerprint has not
arrived.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
from mpi4py import MPI

from ...core.backend import is_floating
from ...core.distributed.failure_record import PeerFailedError
from ...core.distributed.backends.base import (
    Collective,
    Fingerprint,
    GroupSpec,
    ReduceOp,
    ThreadedProcessGroup,
    divide_by_size,
)

logger = logging.getLogger("minidp.distributed")

POLLS_BETWEEN_CLOCK_CHECKS = 256
_P2P_TAG = 7351
_FINGERPRINT_TAG = 7352

_MPI_OPS = {
    ReduceOp.SUM: MPI.SUM,
    ReduceOp.AVG: MPI.SUM,
    ReduceOp.MAX: MPI.MAX,
    ReduceOp.MIN: MPI.MIN,
    ReduceOp.PROD: MPI.PROD,
}

# ReduceOp -> the NumPy ufunc that reduces what MPI cannot (AVG divides afterwards).
_UFUNCS = {
    ReduceOp.SUM: numpy.add,
    ReduceOp.AVG: numpy.add,
    ReduceOp.MAX: numpy.maximum,
    ReduceOp.MIN: numpy.minimum,
    ReduceOp.PROD: numpy.multiply,
}
_numpy_ops: Dict[Tuple[str, ReduceOp], Any] = {}


def _is_16bit_float(dtype: numpy.dtype) -> bool:
    """float16 and bfloat16: floating types MPI has no datatype for."""
    return dtype.itemsize == 2 and is_floating(dtype)


def _numpy_op(dtype: numpy.dtype, op: ReduceOp) -> Any:
    """A user-defined MPI op reducing buffers of ``dtype`` with NumPy, made once per pair."""
    key = (dtype.name, op)
    if key not in _numpy_ops:
        ufunc = _UFUNCS[op]

        def combine(incoming, inout, datatype) -> None:
            a = numpy.frombuffer(incoming, dtype)
            b = numpy.frombuffer(inout, dtype)
            ufunc(a, b, out=b)

        _numpy_ops[key] = MPI.Op.Create(combine, commute=True)
    return _numpy_ops[key]


def _buffer(array: numpy.ndarray):
    """The MPI buffer spec for ``array``; float16 and bfloat16 travel as raw 16-bit words."""
    if _is_16bit_float(array.dtype):
        return [array.reshape(-1).view(numpy.uint16), MPI.SHORT]
    return array.reshape(-1)


class MpiProcessGroup(ThreadedProcessGroup):
    """Process group on an mpi4py communicator."""

    backend_name = "mpi"

    def __init__(self, comm: Any, *, name: str, timeout: float, global_ranks: Optional[list] = None) -> None:
        super().__init__(comm.Get_rank(), comm.Get_size(), name=name, timeout=timeout, global_ranks=global_ranks)
        self._comm = comm
        self._fingerprints_in = numpy.empty((self.size, Fingerprint.SIZE), numpy.uint8)
        self._peers = [peer for peer in range(self.size) if peer != self.rank]
        logger.info("mpi group '%s' ready (rank %d of %d)", name, self.rank, self.size)

    def _complete(self, op: str, requests: List[Any], awaited: List[Sequence[int]], deadline: float) -> None:
        """Poll ``requests`` until they all complete; ``awaited[i]`` holds the group ranks that
        ``requests[i]`` waits on. After :attr:`stall_warning` seconds the first rank still awaited
        is named in a warning; at ``deadline`` raise a ``RuntimeError`` naming every rank still
        awaited (a ``PeerFailedError`` when there is one)."""
        polls = 0
        while not MPI.Request.Testall(requests):
            polls += 1
            if polls % POLLS_BETWEEN_CLOCK_CHECKS:
                continue
            # Testall leaves every request as it was unless all completed: ask each one.
            missing = sorted(
                {peer for request, peers in zip(requests, awaited) if not request.Test() for peer in peers}
            )
            if not missing:
                continue
            if time.monotonic() <= deadline:
                self._note_waiting(op, missing[0], deadline)
                continue
            named = ", ".join(self.describe_rank(peer) for peer in missing)
            message = (
                f"{self.describe(op)}: timed out waiting for {named} (group timeout {self.timeout:g} s); "
                "check that every rank issues the same collectives in the same order, or raise the "
                "timeout (PADDLE_PG_TIMEOUT in ms)"
            )
            if len(missing) > 1:
                raise RuntimeError(message)
            raise PeerFailedError(message, self.global_ranks[missing[0]])

    def _wait_for_all(self, op: str, request: Any, deadline: float) -> None:
        """Complete a collective's ``request``, which waits on every other rank of the group."""
        self._complete(op, [request], [self._peers], deadline)

    def _exchange_fingerprints(self, call: Collective, mine: bytes) -> List[Tuple[int, bytes]]:
        """Swap the fingerprints of an operation with each peer it involves (every other rank for
        a collective, the other end of a send or receive), one message each way per peer: so
        every rank sees every rank's, and a rank left waiting knows which peers have not issued
        the operation, to name them."""
        deadline = time.monotonic() + call.timeout
        peers = [call.root] if call.op in ("send", "recv") else self._peers
        outgoing = numpy.frombuffer(mine, numpy.uint8)
        gathered = self._fingerprints_in
        receives = [self._comm.Irecv(gathered[peer], source=peer, tag=_FINGERPRINT_TAG) for peer in peers]
        sends = [self._comm.Isend(outgoing, dest=peer, tag=_FINGERPRINT_TAG) for peer in peers]
        self._complete(call.op, receives + sends, [[peer] for peer in peers] * 2, deadline)
        return [(peer, gathered[peer].tobytes()) for peer in peers]

    def _reduce_op(self, array: numpy.ndarray, op: ReduceOp) -> Any:
        return _numpy_op(array.dtype, op) if _is_16bit_float(array.dtype) else _MPI_OPS[op]

    def _all_reduce(self, array: numpy.ndarray, op: ReduceOp) -> None:
        deadline = time.monotonic() + self.timeout
        if self.size > 1 and array.size:
            request = self._comm.Iallreduce(MPI.IN_PLACE, _buffer(array), self._reduce_op(array, op))
            self._wait_for_all("all_reduce", request, deadline)
        if op == ReduceOp.AVG:
            divide_by_size(array, self.size)

    def _broadcast(self, array: numpy.ndarray, src: int) -> None:
        if self.size > 1 and array.size:
            request = self._comm.Ibcast(_buffer(array), root=src)
            self._complete("broadcast", [request], [[src]], time.monotonic() + self.timeout)

    def _all_gather(self, out_array: numpy.ndarray, array: numpy.ndarray) -> None:
        request = self._comm.Iallgather(_buffer(array), _buffer(out_array))
        self._wait_for_all("all_gather", request, time.monotonic() + self.timeout)

    def _reduce_scatter(self, out_array: numpy.ndarray, in_array: numpy.ndarray, op: ReduceOp) -> None:
        if out_array.size:
            request = self._comm.Ireduce_scatter_block(
                _buffer(in_array), _buffer(out_array), self._reduce_op(out_array, op)
            )
            self._wait_for_all("reduce_scatter", request, time.monotonic() + self.timeout)
        if op == ReduceOp.AVG:
            divide_by_size(out_array, self.size)

    def _barrier(self, timeout: float) -> None:
        self._wait_for_all("barrier", self._comm.Ibarrier(), time.monotonic() + timeout)

    def _send(self, array: numpy.ndarray, dst: int) -> None:
        request = self._comm.Isend(_buffer(array), dest=dst, tag=_P2P_TAG)
        self._complete("send", [request], [[dst]], time.monotonic() + self.timeout)

    def _recv(self, array: numpy.ndarray, src: int) -> None:
        request = self._comm.Irecv(_buffer(array), source=src, tag=_P2P_TAG)
        self._complete("recv", [request], [[src]], time.monotonic() + self.timeout)

    def _close(self) -> None:
        """Communicators are left to MPI_Finalize: freeing one is collective and could block."""
        self._comm = None


def create_process_group(spec: GroupSpec) -> Optional[MpiProcessGroup]:
    """Backend factory: collectively duplicate or split ``COMM_WORLD`` for ``spec``."""
    world = MPI.COMM_WORLD
    if world.Get_size() == 1 and spec.size > 1:
        raise RuntimeError(
            f"rank {spec.global_rank}: the mpi backend needs processes started by mpirun/mpiexec "
            f"(MPI sees 1 process, the job has {spec.size}); start with mpirun or use gloo"
        )
    if spec.size == world.Get_size():
        comm = world.Dup()
    else:
        color = 0 if spec.rank >= 0 else MPI.UNDEFINED
        comm = world.Split(color, key=max(spec.rank, 0))
    if spec.rank < 0:
        return None
    return MpiProcessGroup(comm, name=spec.name, timeout=spec.timeout, global_ranks=list(spec.global_ranks))
