"""A stand-in for CUDA and NCCL, so that the nccl backend runs on the CPU in one process.

Ranks are threads. :class:`StandinRuntime` offers the methods of the backend's runtime:

- "device memory" is NumPy memory: :class:`DeviceArray` (a NumPy subclass) marks what counts as
  a device array; NCCL calls receive raw addresses and read and write through them;
- a :class:`Stream` is a thread running its queued work in order; an :class:`Event` fires when
  its stream reaches it; ``wait_event`` makes a stream block until the event has fired;
- a :class:`Communicator` has the method signatures of ``cupy.cuda.nccl.NcclCommunicator``;
  each call is queued on the stream whose ``ptr`` it is given and, when the stream reaches it,
  meets the other ranks' matching calls in a shared :class:`Clique`.

Where it matters, the stand-in behaves as NCCL and CUDA do, so that CI proves what it claims:
a call that fails leaves its stream stuck until the communicator is aborted; ``send`` blocks
until the peer posts ``recv`` (two ranks that both send first deadlock, and the backend's
timeout must catch it); ``abort`` is local (the peers learn of it only through their own
timeouts); the first ``send``/``recv`` between two ranks blocks the *host* until the peer posts
its side (NCCL connects peers inside that call), and only ``abort`` from another thread unblocks
it (NCCL's abort flag); a call into an aborted communicator raises; bfloat16 is a datatype and
``ncclAvg`` an op; issuing calls into one communicator from two threads at once are recorded as
``overlaps`` (``check_async_error`` and ``abort`` are the calls NCCL lets another thread make
meanwhile); and ``inject_cuda_error`` makes event queries fail as a sticky CUDA error (an
illegal address in a kernel) does.

Every call the backend makes on these objects is appended to the runtime's ``calls`` list, in
order, so tests can check how operations were ordered.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import itertools
import os
import queue
import threading
import time
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Tuple

import numpy

import ml_dtypes

from minidp.core.backend import is_floating
from minidp.core.distributed.backends.base import divide_by_size
from minidp.distributed.backends.nccl import NCCL_AVG, NCCL_DATATYPES, NCCL_MAX, NCCL_MIN, NCCL_PROD, NCCL_SUM

_DTYPE_OF = {
    code: numpy.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)
    for name, code in NCCL_DATATYPES.items()
    if name != "bool"
}
_REDUCE = {NCCL_SUM: numpy.add, NCCL_PROD: numpy.multiply, NCCL_MAX: numpy.maximum, NCCL_MIN: numpy.minimum}
_pointers = itertools.count(0x7000)
_streams: Dict[int, "Stream"] = {}


class StandinNcclError(RuntimeError):
    """What the stand-in communicator raises, as CuPy raises ``NcclError``."""


class StandinCudaError(RuntimeError):
    """What the stand-in runtime raises for a CUDA error, as CuPy raises ``CUDARuntimeError``."""


class DeviceArray(numpy.ndarray):
    """A NumPy array that the stand-in runtime treats as living in device memory."""


def device_array(values: Any, dtype: Any = None) -> DeviceArray:
    """A new "device" array holding ``values``."""
    return numpy.array(values, dtype=dtype).view(DeviceArray)


def memory(pointer: int, count: int, datatype: int) -> numpy.ndarray:
    """The ``count`` elements of NCCL type ``datatype`` at address ``pointer``, as an array."""
    dtype = _DTYPE_OF[datatype]
    raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(pointer)
    return numpy.frombuffer(raw, dtype=dtype)


class Event:
    """A CUDA event stand-in: ``record(stream)`` queues its firing on ``stream``."""

    _names = itertools.count()

    def __init__(self, calls: List[tuple], device: int) -> None:
        self.name = f"event{next(self._names)}"
        self.device = device
        self._calls = calls
        self.fired = threading.Event()

    def record(self, stream: "Stream") -> None:
        self._calls.append(("record", self.name, stream.name))
        stream.enqueue(self.fired.set)


class Stream:
    """A CUDA stream stand-in: one thread running queued work in order."""

    def __init__(self, name: str, calls: List[tuple]) -> None:
        self.name = name
        self.ptr = next(_pointers)
        self._calls = calls
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._stopped = threading.Event()
        _streams[self.ptr] = self
        threading.Thread(target=self._serve, daemon=True, name=f"standin-{name}").start()

    def enqueue(self, work: Callable[[], None]) -> None:
        self._queue.put(work)

    def wait_event(self, event: Event) -> None:
        self._calls.append(("wait_event", self.name, event.name))

        def wait() -> None:
            while not event.fired.wait(0.01):
                if self._stopped.is_set():
                    return

        self.enqueue(wait)

    def synchronize(self, timeout: float = 10.0) -> None:
        """Block the caller until everything queued so far has run (test helper)."""
        reached = threading.Event()
        self.enqueue(reached.set)
        if not reached.wait(timeout):
            raise TimeoutError(f"stream {self.name} did not drain within {timeout} s")

    def _serve(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            work()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        self._stopped.set()
        self._queue.put(None)
        _streams.pop(self.ptr, None)


class _PostedSend:
    """A send waiting for its receive (compared by identity)."""

    __slots__ = ("data", "taken")

    def __init__(self, data: numpy.ndarray) -> None:
        self.data = data
        self.taken = False


class Clique:
    """The ranks sharing one unique id: where their calls meet.

    Collective calls meet in rounds: a rank's k-th collective joins round k and waits until every
    rank has joined it. A send waits until the peer posts the matching receive, as NCCL's does,
    so two ranks that both send before receiving deadlock here as they would on GPUs. A rank
    waits only while its own communicator is not aborted: aborting is local, and the peers learn
    of it only through their own timeouts.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._changed = threading.Condition()
        self._rounds: Dict[int, Dict[int, Tuple[tuple, Any]]] = {}
        self._reads: Dict[int, int] = {}
        self._next_round = [0] * size
        self._sends: Dict[Tuple[int, int], Deque[_PostedSend]] = collections.defaultdict(collections.deque)
        self._connecting: set = set()  # (src, dst, side) of the p2p connections a rank has started

    def _wait_until(self, ready: Callable[[], bool], aborted: Callable[[], bool]) -> None:
        """Wait (holding ``_changed``) until ``ready()``; raise once ``aborted()``."""
        while not ready():
            if aborted():
                raise StandinNcclError("the communicator was aborted")
            self._changed.wait(0.01)

    def exchange(self, rank: int, signature: tuple, payload: Any, aborted: Callable[[], bool]) -> List[Any]:
        """Every rank's ``payload``, once all have called with the same ``signature``."""
        with self._changed:
            number = self._next_round[rank]
            self._next_round[rank] += 1
            entries = self._rounds.setdefault(number, {})
            entries[rank] = (signature, payload)
            self._changed.notify_all()
            try:
                self._wait_until(lambda: len(entries) == self.size, aborted)
            except StandinNcclError:
                entries.pop(rank, None)  # an aborted rank takes no part in the round
                raise
            everyone = [entries[r] for r in range(self.size)]
            self._reads[number] = self._reads.get(number, 0) + 1
            if self._reads[number] == self.size:
                del self._rounds[number], self._reads[number]
        if any(other != signature for other, _ in everyone):
            raise StandinNcclError(f"ranks issued different collectives: {[other for other, _ in everyone]}")
        return [data for _, data in everyone]

    def leave(self, rank: int) -> None:
        """``rank`` aborted: withdraw what it posted and never completed. Its peers are not told;
        their pending and later calls just never complete."""
        with self._changed:
            for entries in self._rounds.values():
                if len(entries) < self.size:
                    entries.pop(rank, None)
            for (src, _), pending in self._sends.items():
                if src == rank:
                    pending.clear()
            self._changed.notify_all()

    def connect(self, src: int, dst: int, side: str, aborted: Callable[[], bool]) -> None:
        """Block the calling host thread until both ends of the ``src`` -> ``dst`` connection have
        arrived (``side`` is this rank's: "send" or "recv"), as NCCL's first send or receive to a
        peer does; raise once ``aborted()``. Later calls on that connection return at once."""
        other = "recv" if side == "send" else "send"
        with self._changed:
            self._connecting.add((src, dst, side))
            self._changed.notify_all()
            self._wait_until(lambda: (src, dst, other) in self._connecting, aborted)

    def send(self, src: int, dst: int, data: numpy.ndarray, aborted: Callable[[], bool]) -> None:
        """Hand ``data`` to ``dst``; return once ``dst`` has received it."""
        slot = _PostedSend(data)
        with self._changed:
            pending = self._sends[(src, dst)]
            pending.append(slot)
            self._changed.notify_all()
            try:
                self._wait_until(lambda: slot.taken, aborted)
            except StandinNcclError:
                if slot in pending:
                    pending.remove(slot)
                raise

    def recv(self, src: int, dst: int, aborted: Callable[[], bool]) -> numpy.ndarray:
        """What ``src`` sends to ``dst`` next, once it has posted the send."""
        with self._changed:
            pending = self._sends[(src, dst)]
            self._wait_until(lambda: bool(pending), aborted)
            slot = pending.popleft()
            slot.taken = True
            self._changed.notify_all()
            return slot.data


class World:
    """Shared by the rank threads of one test: the cliques, by unique id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cliques: Dict[bytes, Clique] = {}

    def clique(self, unique_id: bytes, size: int) -> Clique:
        with self._lock:
            if unique_id not in self._cliques:
                self._cliques[unique_id] = Clique(size)
            clique = self._cliques[unique_id]
        assert clique.size == size, "ranks disagree about the group size"
        return clique


# How long each communicator call holds the communicator: CuPy releases the GIL inside them, so
# NCCL would see two threads' calls overlap; the pause gives overlaps the room to show.
CALL_SECONDS = 0.0005


def _exclusive(method: Callable, control: bool = False) -> Callable:
    """Record, in ``overlaps``, a call made while another thread is inside the communicator.

    Issuing calls (and ``destroy``) exclude each other; the ``control`` calls, ``abort`` and
    ``check_async_error``, exclude only each other: NCCL lets them run beside a blocked call (its
    abort flag is what unblocks one). Any call but ``check_async_error`` and ``abort`` raises
    once the communicator is aborted, as NCCL's calls on an aborted communicator do."""

    @functools.wraps(method)
    def call(self: "Communicator", *args: Any) -> Any:
        lock = self._control if control else self._inside
        if not lock.acquire(blocking=False):
            self.overlaps.append(method.__name__)
            lock.acquire()
        try:
            if self.aborted and not control:
                raise StandinNcclError(f"{method.__name__} on an aborted communicator")
            time.sleep(CALL_SECONDS)
            return method(self, *args)
        finally:
            lock.release()

    return call


_control = functools.partial(_exclusive, control=True)


class Communicator:
    """Stand-in for ``cupy.cuda.nccl.NcclCommunicator`` (same method signatures).

    Calls from several threads must never overlap (NCCL communicators are not thread-safe);
    ``overlaps`` names the calls that did.
    """

    def __init__(self, world: World, size: int, unique_id: bytes, rank: int, calls: List[tuple]) -> None:
        assert isinstance(unique_id, bytes) and len(unique_id) == 128
        self.unique_id = unique_id
        self.clique = world.clique(unique_id, size)
        self.rank = rank
        self._calls = calls
        self.aborted = False
        self.destroyed = False
        self.async_error: Optional[BaseException] = None
        self.overlaps: List[str] = []
        self._inside = threading.Lock()
        self._control = threading.Lock()

    def _aborted(self) -> bool:
        return self.aborted

    def _queue(self, name: str, stream: int, work: Callable[[], None], *details: Any) -> None:
        self._calls.append((name, _streams[stream].name, *details))

        queue_on = _streams[stream]

        def run() -> None:
            if self.aborted:
                return
            try:
                work()
            except Exception as error:  # aborted while waiting for peers, or a mismatch
                self.async_error = self.async_error or error
                # A failed NCCL kernel does not finish: the stream stays stuck (its later events
                # never fire) until the communicator is aborted.
                while not self.aborted and not queue_on.stopped:
                    time.sleep(0.01)

        queue_on.enqueue(run)

    def _reduce(self, arrays: List[numpy.ndarray], op: int) -> numpy.ndarray:
        """Combine the ranks' arrays as NCCL does: ``ncclAvg`` premultiplies floating values by
        1/n and sums them; for integers it sums and divides, truncating toward zero."""
        stacked = numpy.stack(arrays)
        if op != NCCL_AVG:
            return _REDUCE[op].reduce(stacked, axis=0, dtype=stacked.dtype)
        if is_floating(stacked.dtype):
            scaled = stacked * stacked.dtype.type(1 / len(arrays))
            return numpy.add.reduce(scaled, axis=0, dtype=stacked.dtype)
        total = numpy.add.reduce(stacked, axis=0, dtype=stacked.dtype)
        divide_by_size(total, len(arrays))
        return total

    @_exclusive
    def allReduce(self, sendbuf: int, recvbuf: int, count: int, datatype: int, op: int, stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("allReduce", count, datatype, op), mine, self._aborted)
            memory(recvbuf, count, datatype)[:] = self._reduce(everyone, op)

        self._queue("allReduce", stream, work, op)

    @_exclusive
    def bcast(self, buff: int, count: int, datatype: int, root: int, stream: int) -> None:
        def work() -> None:
            mine = memory(buff, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("bcast", count, datatype, root), mine, self._aborted)
            memory(buff, count, datatype)[:] = everyone[root]

        self._queue("bcast", stream, work)

    @_exclusive
    def allGather(self, sendbuf: int, recvbuf: int, count: int, datatype: int, stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("allGather", count, datatype), mine, self._aborted)
            memory(recvbuf, count * self.clique.size, datatype)[:] = numpy.concatenate(everyone)

        self._queue("allGather", stream, work)

    @_exclusive
    def reduceScatter(self, sendbuf: int, recvbuf: int, recvcount: int, datatype: int, op: int, stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, recvcount * self.clique.size, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("reduceScatter", recvcount, datatype, op), mine, self._aborted)
            block = slice(self.rank * recvcount, (self.rank + 1) * recvcount)
            memory(recvbuf, recvcount, datatype)[:] = self._reduce([a[block] for a in everyone], op)

        self._queue("reduceScatter", stream, work, op)

    @_exclusive
    def send(self, sendbuf: int, count: int, datatype: int, peer: int, stream: int) -> None:
        self.clique.connect(self.rank, peer, "send", self._aborted)

        def work() -> None:
            self.clique.send(self.rank, peer, memory(sendbuf, count, datatype).copy(), self._aborted)

        self._queue("send", stream, work)

    @_exclusive
    def recv(self, recvbuf: int, count: int, datatype: int, peer: int, stream: int) -> None:
        self.clique.connect(peer, self.rank, "recv", self._aborted)

        def work() -> None:
            memory(recvbuf, count, datatype)[:] = self.clique.recv(peer, self.rank, self._aborted)

        self._queue("recv", stream, work)

    @_control
    def check_async_error(self) -> None:
        if self.async_error is not None:
            raise StandinNcclError(f"stand-in NCCL error: {self.async_error}")

    @_control
    def abort(self) -> None:
        self._calls.append(("abort",))
        self.aborted = True
        self.clique.leave(self.rank)

    @_exclusive
    def destroy(self) -> None:
        self._calls.append(("destroy",))
        self.destroyed = True

    def rank_id(self) -> int:
        return self.rank

    def size(self) -> int:
        return self.clique.size


class StandinRuntime:
    """The runtime the nccl backend calls, for one rank; see the module docstring.

    ``tuple_ids`` makes ``unique_id`` answer as CuPy < 14 does (a tuple of signed chars).
    """

    def __init__(self, world: World, tuple_ids: bool = False) -> None:
        self.world = world
        self.calls: List[tuple] = []
        self.tuple_ids = tuple_ids
        self.unique_id_calls = 0
        self.communicators: List[Communicator] = []
        self.current = 0  # the current device
        self.compute = Stream("compute", self.calls)
        self.streams = [self.compute]
        self.cuda_error: Optional[str] = None
        self.query_devices: set = set()  # the devices current during event queries

    def unique_id(self) -> Any:
        self.unique_id_calls += 1
        data = os.urandom(128)
        if self.tuple_ids:
            return tuple(b - 256 if b > 127 else b for b in data)
        return data

    def communicator(self, size: int, unique_id: bytes, rank: int) -> Communicator:
        self.calls.append(("communicator", size, rank))
        comm = Communicator(self.world, size, unique_id, rank, self.calls)
        self.communicators.append(comm)
        return comm

    def current_device(self) -> int:
        return self.current

    @contextlib.contextmanager
    def device(self, index: int) -> Iterator[None]:
        previous, self.current = self.current, index
        try:
            yield
        finally:
            self.current = previous

    def current_stream(self) -> Stream:
        return self.compute

    def new_stream(self) -> Stream:
        stream = Stream(f"nccl{len(self.streams)}", self.calls)
        self.streams.append(stream)
        return stream

    def new_event(self) -> Event:
        return Event(self.calls, self.current)

    def event_done(self, event: Event) -> bool:
        self.query_devices.add(self.current)  # CUDA makes a context on the current device
        if self.cuda_error is not None:
            raise StandinCudaError(self.cuda_error)
        return event.fired.is_set()

    def inject_cuda_error(self, message: str) -> None:
        """Make every later event query fail with ``message``, as a sticky CUDA error (an illegal
        address in a kernel) makes ``cudaEventQuery`` fail."""
        self.cuda_error = message

    def is_device_array(self, array: Any) -> bool:
        return isinstance(array, DeviceArray)

    def device_of(self, array: Any) -> int:
        return 0

    def pointer(self, array: Any) -> int:
        return array.ctypes.data

    def empty(self, shape: Tuple[int, ...], dtype: numpy.dtype) -> DeviceArray:
        return numpy.zeros(shape, dtype).view(DeviceArray)

    def to_device(self, host: numpy.ndarray, stream: Stream) -> DeviceArray:
        self.calls.append(("to_device", stream.name))
        return device_array(host)

    def to_host(self, device: Any, host: numpy.ndarray) -> None:
        self.calls.append(("to_host",))
        numpy.copyto(host, device)

    def stop(self) -> None:
        """End the stream threads and any wait for peers (test clean-up)."""
        for comm in self.communicators:
            comm.aborted = True
        for stream in self.streams:
            stream.stop()
