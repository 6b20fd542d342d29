"""A stand-in for CUDA and NCCL, so that the nccl backend runs on the CPU in one process.

Ranks are threads. :class:`StandinRuntime` offers the methods of the backend's runtime:

- "device memory" is NumPy memory: :class:`DeviceArray` (a NumPy subclass) marks what counts as
  a device array; NCCL calls receive raw addresses and read and write through them;
- a :class:`Stream` is a thread running its queued work in order; an :class:`Event` fires when
  its stream reaches it; ``wait_event`` makes a stream block until the event has fired;
- a :class:`Communicator` has the method signatures of ``cupy.cuda.nccl.NcclCommunicator``;
  each call is queued on the stream whose ``ptr`` it is given and, when the stream reaches it,
  meets the other ranks' matching calls in a shared :class:`Clique`.

Every call the backend makes on these objects is appended to the runtime's ``calls`` list, in
order, so tests can check how operations were ordered.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import queue
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy

import ml_dtypes

from minidp.distributed.backends.base import divide_by_size, is_floating
from minidp.distributed.backends.nccl import (NCCL_AVG, NCCL_DATATYPES, NCCL_MAX, NCCL_MIN,
                                              NCCL_PROD, NCCL_SUM)

_DTYPE_OF = {code: numpy.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)
             for name, code in NCCL_DATATYPES.items() if name != "bool"}
_REDUCE = {NCCL_SUM: numpy.add, NCCL_PROD: numpy.multiply, NCCL_MAX: numpy.maximum,
           NCCL_MIN: numpy.minimum}
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

    def stop(self) -> None:
        self._stopped.set()
        self._queue.put(None)
        _streams.pop(self.ptr, None)


class Clique:
    """The ranks sharing one unique id: where their collective calls meet."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots: List[Any] = [None] * size
        self.mailboxes: Dict[Tuple[int, int], "queue.Queue"] = {
            (src, dst): queue.Queue() for src in range(size) for dst in range(size)}

    def exchange(self, rank: int, signature: tuple, payload: Any) -> List[Any]:
        """Every rank's ``payload``, once all have called with the same ``signature``."""
        self.slots[rank] = (signature, payload)
        self.barrier.wait()
        everyone = list(self.slots)
        self.barrier.wait()
        if any(other != signature for other, _ in everyone):
            raise StandinNcclError(f"ranks issued different collectives: "
                                   f"{[other for other, _ in everyone]}")
        return [data for _, data in everyone]


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


def _exclusive(method: Callable) -> Callable:
    """Record, in ``overlaps``, a call made while another thread is inside the communicator."""

    @functools.wraps(method)
    def call(self: "Communicator", *args: Any) -> Any:
        if not self._inside.acquire(blocking=False):
            self.overlaps.append(method.__name__)
            self._inside.acquire()
        try:
            time.sleep(CALL_SECONDS)
            return method(self, *args)
        finally:
            self._inside.release()

    return call


class Communicator:
    """Stand-in for ``cupy.cuda.nccl.NcclCommunicator`` (same method signatures).

    Calls from several threads must never overlap (NCCL communicators are not thread-safe);
    ``overlaps`` names the calls that did.
    """

    def __init__(self, world: World, size: int, unique_id: bytes, rank: int,
                 calls: List[tuple]) -> None:
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

    def _queue(self, name: str, stream: int, work: Callable[[], None], *details: Any) -> None:
        self._calls.append((name, _streams[stream].name, *details))

        def run() -> None:
            if self.aborted:
                return
            try:
                work()
            except Exception as error:  # a broken barrier after abort, or a mismatch
                self.async_error = self.async_error or error

        _streams[stream].enqueue(run)

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
    def allReduce(self, sendbuf: int, recvbuf: int, count: int, datatype: int, op: int,
                  stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("allReduce", count, datatype, op), mine)
            memory(recvbuf, count, datatype)[:] = self._reduce(everyone, op)

        self._queue("allReduce", stream, work, op)

    @_exclusive
    def bcast(self, buff: int, count: int, datatype: int, root: int, stream: int) -> None:
        def work() -> None:
            mine = memory(buff, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("bcast", count, datatype, root), mine)
            memory(buff, count, datatype)[:] = everyone[root]

        self._queue("bcast", stream, work)

    @_exclusive
    def allGather(self, sendbuf: int, recvbuf: int, count: int, datatype: int,
                  stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, count, datatype).copy()
            everyone = self.clique.exchange(self.rank, ("allGather", count, datatype), mine)
            memory(recvbuf, count * self.clique.size, datatype)[:] = numpy.concatenate(everyone)

        self._queue("allGather", stream, work)

    @_exclusive
    def reduceScatter(self, sendbuf: int, recvbuf: int, recvcount: int, datatype: int, op: int,
                      stream: int) -> None:
        def work() -> None:
            mine = memory(sendbuf, recvcount * self.clique.size, datatype).copy()
            everyone = self.clique.exchange(self.rank,
                                            ("reduceScatter", recvcount, datatype, op), mine)
            block = slice(self.rank * recvcount, (self.rank + 1) * recvcount)
            memory(recvbuf, recvcount, datatype)[:] = self._reduce([a[block] for a in everyone],
                                                                   op)

        self._queue("reduceScatter", stream, work, op)

    @_exclusive
    def send(self, sendbuf: int, count: int, datatype: int, peer: int, stream: int) -> None:
        def work() -> None:
            self.clique.mailboxes[(self.rank, peer)].put(memory(sendbuf, count, datatype).copy())

        self._queue("send", stream, work)

    @_exclusive
    def recv(self, recvbuf: int, count: int, datatype: int, peer: int, stream: int) -> None:
        def work() -> None:
            while not self.aborted:
                try:
                    data = self.clique.mailboxes[(peer, self.rank)].get(timeout=0.01)
                except queue.Empty:
                    continue
                memory(recvbuf, count, datatype)[:] = data
                return

        self._queue("recv", stream, work)

    @_exclusive
    def check_async_error(self) -> None:
        if self.async_error is not None:
            raise StandinNcclError(f"stand-in NCCL error: {self.async_error}")

    @_exclusive
    def abort(self) -> None:
        self._calls.append(("abort",))
        self.aborted = True
        self.clique.barrier.abort()

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
        """End the stream threads (test clean-up)."""
        for stream in self.streams:
            stream.stop()
