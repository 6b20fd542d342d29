"""nccl: process groups on NVIDIA's NCCL (``cupy.cuda.nccl``), moving CuPy arrays on the GPU.

Set-up
------
Rank 0 of the group makes the NCCL unique id (128 bytes) and shares it: through the job's
store (``GroupSpec.store``, which ``init_parallel_env`` always provides), or, for a group built
without a store in a job started by ``mpirun``, through a buffer ``Bcast`` over
``MPI.COMM_WORLD``. Either way the id travels as raw bytes, never pickled. CuPy 14 hands the id
out as ``bytes``, older CuPy as a tuple of 128 signed chars; :func:`normalize_unique_id` turns
both into bytes and :func:`unique_id_argument` back into what the installed CuPy takes.

The communicator itself is created at the group's first collective, on the device current at
that moment (so ``set_device`` may still be called after ``init_parallel_env``). That device is
the group's: every later operation enters it while it is issued and while its event is queried,
so its events, stream work and staging buffers stay there, and no query creates a context on
another device, even when the caller has since switched devices or polls from another thread
(the watchdog's current device is 0). NCCL's ``ncclCommInitRank`` blocks until every rank has joined, so ranks first
meet in the store (bounded by the group's timeout): a rank that never arrives becomes an error
naming it, not a hang. (Without a store, under mpirun, creation waits as NCCL does; an MPI job ends as a whole
when one rank fails.)

Structure
---------
:class:`NcclProcessGroup` inherits the shared :class:`~.base.ProcessGroup` (validation, failure
and closed state, messages) but not the threaded execution of the CPU backends: its ``_issue``
queues each operation on a CUDA stream. Each operation's method returns the :class:`Staging` it
made (the NumPy arrays it copied to the device), and the operation's :class:`NcclWork` keeps it
until the copies back are done.

Streams and ordering
--------------------
Every operation runs on one dedicated, non-blocking CUDA stream per group. Before the NCCL call
the backend records an event on the caller's current stream (the one that produced the data)
and makes the NCCL stream wait for it; after the call it records a completion event on the NCCL
stream. Issuing does not wait for the operation, so the reducer's bucket all-reduces run on the
GPU while backward keeps computing on the current stream. ``AVG`` is NCCL's own ``ncclAvg``
(NCCL >= 2.10). For floating types, bfloat16 included, it is not an exact division: NCCL
multiplies each rank's values by 1/n, rounded to the element type, and sums the products, so
results may differ from the CPU backends' sum divided by n in the last bits (more for float16
and bfloat16, where 1/3 itself rounds); for integers it gives the quotient truncated toward zero,
as Paddle's AVG does.

Completion, errors and timeouts
-------------------------------
A :class:`NcclWork` is done when its completion event is. ``wait`` polls the event through
``cudaEventQuery`` (the runtime's ``event_done``, which tells a pending event from a CUDA error
such as an illegal address in a kernel) and, between polls, ``check_async_error`` of the
communicator. A CUDA error, an asynchronous NCCL error, or an operation still unfinished when the
group's timeout (counted from its issue) has passed, aborts the communicator (``abort``) and
raises ``RuntimeError`` naming the rank and the operation -- a CUDA error at once, not after the
timeout; the group then refuses further operations, as every backend does after a failure.
CuPy releases the GIL inside ``abort``, ``check_async_error`` and the collectives. Issuing calls
(and destroy) are serialised by the group's issue lock; error checks and abort by the control
lock alone, because an issuing call can block the host (NCCL connects peers inside the first
collective and the first send or receive to a peer, which wait for that peer): NCCL lets
``ncclCommGetAsyncError`` and ``ncclCommAbort`` run beside such a call, and the abort flag is
what unblocks it, as PyTorch's watchdog relies on. While a call is being issued, the watchdog
watches its deadline too: a call still blocked there at the group's timeout is aborted and
raises the timeout error in the issuing thread.
Synchronous operations (``sync_op=True``, ``barrier``, ``send``, ``recv``) wait in this way
before returning. NumPy arrays are accepted too (DataParallel checks its replicas with small host
arrays): they are staged through device memory, and their operation completes before the call
returns.

Fingerprints
------------
NCCL cannot tell the host what the peers issued, and exchanging a fingerprint before every
collective (as the CPU backends do) would cost a host round trip each time. Instead each rank
keeps its last collectives in a :class:`~.flight_recorder.FlightRecorder`; every
``MINIDP_NCCL_CHECK_EVERY`` collectives (default 1000, 0 = never) the ranks compare one through
the store before issuing it, and a timeout or an asynchronous NCCL error adds to its message
what the ranks' published records show: the first collective on which two ranks differ, or the
rank that is behind. A rank publishes its record at shutdown too, so a peer that timed out
waiting for it can say where it stopped.

Watchdog
--------
A connected group runs a :class:`Watchdog`: a daemon thread (as in PyTorch's NCCL process
group) with two jobs that the main thread may be too busy to do -- it may be computing,
blocked on I/O, sleeping, or never waiting on its work:

- it answers the peers' requests for this rank's flight record: a failing rank sets this rank's
  request key in the store, and the watchdog, blocked on a bounded store wait for that key,
  publishes the record at once, so the failing rank can name a peer stuck outside every
  collective ("rank 0 is behind (its last: ...)");
- it fails operations that nobody waits on once they pass their deadline, as a waiting thread
  would: abort, the error with the flight records, an ERROR in the log naming rank and
  operation; and, each round, it polls their events and ``check_async_error``, so an
  asynchronous NCCL error fails them at once, not at their deadline. It times out a call blocked
  in the host while being issued in the same way. An asynchronous collective that is never
  waited on cannot hang silently.

Between these it sleeps until the next deadline (at most ``WATCHDOG_PAUSE``), so it costs one
store round trip per pause and nothing per collective. It talks to the store through its own
connection, because a store client serves one request at a time and the group's may be held by
a long wait of the main thread. It stops at shutdown (woken through its request key) and at
interpreter exit.

Testing without a GPU
---------------------
Every CUDA and NCCL call goes through a runtime object: :class:`CupyRuntime` is the real one;
tests pass a stand-in with the same methods (communicators with ``NcclCommunicator``'s method
signatures, stream and event objects with CuPy's ``ptr``/``wait_event``/``record``)
over NumPy buffers, so everything in this module but :class:`CupyRuntime` runs in CI.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable, ContextManager, List, Optional, Protocol, Sequence, Tuple, Union

import numpy

from ...core import backend as array_backend
from ...core.distributed.env import mpi_launch
from ...core.distributed.store import TCPStore
from ...core.distributed.backends.base import Collective, GroupSpec, ProcessGroup, ReduceOp, Work
from .flight_recorder import FlightRecorder, absent_ranks, check_every

logger = logging.getLogger("minidp.distributed")

UNIQUE_ID_BYTES = 128

# ncclDataType_t and ncclRedOp_t values from nccl.h: part of NCCL's ABI, so no import is needed
# to build the tables. bool travels as uint8.
NCCL_DATATYPES = {
    "int8": 0,
    "uint8": 1,
    "bool": 1,
    "int32": 2,
    "uint32": 3,
    "int64": 4,
    "uint64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
NCCL_AVG_SINCE = 21000  # ncclGetVersion() of NCCL 2.10.0, the first with ncclAvg
_NCCL_OPS = {
    ReduceOp.SUM: NCCL_SUM,
    ReduceOp.AVG: NCCL_AVG,
    ReduceOp.PROD: NCCL_PROD,
    ReduceOp.MAX: NCCL_MAX,
    ReduceOp.MIN: NCCL_MIN,
}
# On bool arrays NumPy's add is a logical or and multiply a logical and; on 0/1 bytes those are
# MAX and MIN (a byte SUM could leave 2 in a bool). AVG of bools is refused before issuing.
_BOOL_OPS = {ReduceOp.SUM: NCCL_MAX, ReduceOp.PROD: NCCL_MIN, ReduceOp.MAX: NCCL_MAX, ReduceOp.MIN: NCCL_MIN}

# cudaErrorNotReady: what cudaEventQuery returns for a pending event (CUDA runtime ABI).
CUDA_ERROR_NOT_READY = 600

# Polling of a pending operation: first pause, longest pause (seconds).
FIRST_POLL_PAUSE = 20e-6
LONGEST_POLL_PAUSE = 1e-3
# The watchdog's longest sleep, and how long shutdown waits for it to end (seconds).
WATCHDOG_PAUSE = 1.0
WATCHDOG_STOP_WAIT = 5.0

UniqueId = Union[bytes, bytearray, memoryview, Sequence[int]]


def normalize_unique_id(unique_id: UniqueId) -> bytes:
    """The 128 bytes of an NCCL unique id given as bytes (CuPy >= 14) or a tuple of ints.

    Older CuPy returns the id's chars as Python ints, signed (-128..127) where ``char`` is
    signed; both signed and unsigned values are accepted.
    """
    if isinstance(unique_id, (bytes, bytearray, memoryview)):
        data = bytes(unique_id)
    else:
        values = [int(v) for v in unique_id]
        if any(not -128 <= v <= 255 for v in values):
            raise ValueError("an NCCL unique id given as integers must hold byte values (-128..255)")
        data = bytes(v & 0xFF for v in values)
    if len(data) != UNIQUE_ID_BYTES:
        raise ValueError(f"an NCCL unique id has {UNIQUE_ID_BYTES} bytes, got {len(data)}")
    return data


def unique_id_argument(unique_id: bytes, as_tuple: bool) -> Union[bytes, Tuple[int, ...]]:
    """The id as ``NcclCommunicator`` takes it: bytes, or (CuPy < 14) a tuple of signed chars."""
    if not as_tuple:
        return unique_id
    return tuple(b - 256 if b > 127 else b for b in unique_id)


def share_unique_id_via_store(
    store: Any, key: str, make_id: Optional[Callable[[], UniqueId]], timeout: float, who: str
) -> bytes:
    """Rank 0 (the one given ``make_id``) publishes a new id under ``key``; the others read it."""
    if make_id is not None:
        unique_id = normalize_unique_id(make_id())
        store.set(key, unique_id)
        return unique_id
    try:
        return normalize_unique_id(store.get(key, timeout=timeout))
    except RuntimeError as error:
        raise RuntimeError(
            f"{who}: the NCCL id from rank 0 did not arrive within {timeout:g} s ({error}); "
            "check that rank 0 is running and creates the same groups"
        ) from error


def share_unique_id_via_mpi(comm: Any, root: int, make_id: Optional[Callable[[], UniqueId]]) -> bytes:
    """Broadcast a new id from MPI rank ``root`` (the one given ``make_id``) with ``Bcast``.

    Every process of ``comm`` must call this; the id travels in a uint8 buffer, unpickled.
    """
    buffer = numpy.zeros(UNIQUE_ID_BYTES, numpy.uint8)
    if make_id is not None:
        buffer[:] = numpy.frombuffer(normalize_unique_id(make_id()), numpy.uint8)
    comm.Bcast(buffer, root=root)
    return buffer.tobytes()


class CudaRuntime(Protocol):
    """The CUDA and NCCL operations the backend uses (CuPy's in :class:`CupyRuntime`).

    Streams have ``ptr`` and ``wait_event(event)``; events ``record(stream)``; communicators
    the methods of ``cupy.cuda.nccl.NcclCommunicator``.
    """

    def unique_id(self) -> UniqueId:
        """A new NCCL unique id."""

    def communicator(self, size: int, unique_id: bytes, rank: int) -> Any:
        """This rank's communicator on the current device (blocks until every rank joins)."""

    def current_device(self) -> int:
        """The current device's index."""

    def device(self, index: int) -> ContextManager[Any]:
        """A context in which device ``index`` is the current device (restored on exit)."""

    def current_stream(self) -> Any:
        """The current stream of the current device: where the caller's kernels run."""

    def new_stream(self) -> Any:
        """A new non-blocking stream on the current device."""

    def new_event(self) -> Any:
        """A new event (no timing)."""

    def event_done(self, event: Any) -> bool:
        """True once ``event`` has fired, False while it is pending; raises on a CUDA error."""

    def is_device_array(self, array: Any) -> bool:
        """True for arrays in device memory."""

    def device_of(self, array: Any) -> int:
        """The device a device array lives on."""

    def pointer(self, array: Any) -> int:
        """The device address of a device array's first element."""

    def empty(self, shape: Tuple[int, ...], dtype: numpy.dtype) -> Any:
        """A new device array."""

    def to_device(self, host: numpy.ndarray, stream: Any) -> Any:
        """A device copy of ``host``, made in order on ``stream``."""

    def to_host(self, device: Any, host: numpy.ndarray) -> None:
        """Copy a device array whose producers have all finished into ``host``."""


class CupyRuntime:
    """The real CUDA and NCCL calls, through CuPy: needs a GPU, its driver and libnccl.

    Raises ``RuntimeError`` naming ``who`` (``rank 1``) when there is no device or CuPy cannot
    load NCCL. Sets ``NCCL_RUNTIME_CONNECT=0`` unless the user set it: NCCL then connects the
    collectives' peers while the communicator is created, not inside the first collective.
    """

    def __init__(self, who: str) -> None:
        if array_backend.cuda_device_count() == 0:
            raise RuntimeError(
                f"{who}: the nccl backend needs a CUDA device, but CuPy sees none (no GPU, driver "
                "or CuPy); use the gloo backend (PADDLE_DISTRI_BACKEND=gloo) to train on the CPU"
            )
        import cupy

        # NCCL 2.22+ connects peers inside the first collective, blocking the host there; at
        # init (ncclCommInitRank) the wait is bounded by the ranks' meeting in the store
        os.environ.setdefault("NCCL_RUNTIME_CONNECT", "0")
        with warnings.catch_warnings():  # CuPy warns when libnccl is missing; we raise instead
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
        if not nccl.available:
            raise RuntimeError(
                f"{who}: CuPy cannot load the NCCL library; install it with "
                "pip install 'nvidia-nccl-cu12>=2.18.1,<3' (part of minidp[gpu]) or use gloo"
            )
        if nccl.get_version() < NCCL_AVG_SINCE:
            raise RuntimeError(
                f"{who}: NCCL {nccl.get_version()} is too old: minidp's AVG is ncclAvg, which "
                "needs NCCL 2.10 or newer; pip install 'nvidia-nccl-cu12>=2.18.1,<3'"
            )
        self._cupy = cupy
        self._nccl = nccl
        self._tuple_ids = int(cupy.__version__.split(".")[0]) < 14

    def unique_id(self) -> UniqueId:
        return self._nccl.get_unique_id()

    def communicator(self, size: int, unique_id: bytes, rank: int) -> Any:
        return self._nccl.NcclCommunicator(size, unique_id_argument(unique_id, self._tuple_ids), rank)

    def current_device(self) -> int:
        return self._cupy.cuda.runtime.getDevice()

    def device(self, index: int) -> ContextManager[Any]:
        return self._cupy.cuda.Device(index)

    def current_stream(self) -> Any:
        return self._cupy.cuda.get_current_stream()

    def new_stream(self) -> Any:
        return self._cupy.cuda.Stream(non_blocking=True)

    def new_event(self) -> Any:
        return self._cupy.cuda.Event(disable_timing=True)

    def event_done(self, event: Any) -> bool:
        """``cudaEventQuery``: CuPy's ``Event.done`` is False for errors too, so ask directly."""
        runtime = self._cupy.cuda.runtime
        status = runtime.eventQuery(event.ptr)
        if status == CUDA_ERROR_NOT_READY:
            return False
        runtime.check_status(status)  # CUDARuntimeError naming any other status
        return True

    def is_device_array(self, array: Any) -> bool:
        return isinstance(array, self._cupy.ndarray)

    def device_of(self, array: Any) -> int:
        return array.device.id

    def pointer(self, array: Any) -> int:
        return array.data.ptr

    def empty(self, shape: Tuple[int, ...], dtype: numpy.dtype) -> Any:
        return self._cupy.empty(shape, dtype)

    def to_device(self, host: numpy.ndarray, stream: Any) -> Any:
        with stream:
            return self._cupy.asarray(host)

    def to_host(self, device: Any, host: numpy.ndarray) -> None:
        device.get(out=host)


def _dtype_name(array: Any) -> str:
    return numpy.dtype(array.dtype).name


def _datatype(array: Any) -> int:
    """The ``ncclDataType_t`` of ``array``'s elements."""
    return NCCL_DATATYPES[_dtype_name(array)]


class Staging:
    """The device buffers of one operation's arrays, and the copies back that it owes.

    Device arrays are used as they are. A NumPy array is copied to the device in order on the
    NCCL stream and, when the operation writes a result into it, copied back by
    :meth:`copy_back` once the operation has completed.
    """

    __slots__ = ("_runtime", "_stream", "_copies")

    def __init__(self, runtime: CudaRuntime, stream: Any) -> None:
        self._runtime = runtime
        self._stream = stream
        self._copies: List[Tuple[Any, Optional[numpy.ndarray]]] = []

    def device(self, array: Any, result: bool = True) -> Any:
        """``array`` on the device: itself, or a copy that is kept until the operation ends."""
        if self._runtime.is_device_array(array):
            return array
        staged = self._runtime.to_device(array, self._stream)
        self._copies.append((staged, array if result else None))
        return staged

    @property
    def holds_host_arrays(self) -> bool:
        """True when NumPy arrays were staged: the operation must complete before returning."""
        return bool(self._copies)

    def copy_back(self) -> None:
        """Copy the results of the completed operation into the NumPy arrays that receive them."""
        for staged, host in self._copies:
            if host is not None:
                self._runtime.to_host(staged, host)
        self._copies = []


class NcclWork(Work):
    """Handle of one NCCL operation: complete once ``event``, recorded after it, has fired.

    Holds the operation's closure (``keepalive``) and ``staging`` until then, so that their
    memory cannot be reused under NCCL. ``_waited`` is True while a thread waits on it: the
    watchdog then leaves its timeout to that thread.
    """

    __slots__ = ("_group", "_deadline", "_event", "_keepalive", "_staging", "_waited")

    def __init__(
        self, group: "NcclProcessGroup", call: Collective, event: Any, keepalive: Callable[[], Any], staging: Staging
    ) -> None:
        super().__init__(group.describe(call.op))
        self._group = group
        self._deadline = time.monotonic() + call.timeout
        self._event = event
        self._keepalive: Any = keepalive
        self._staging: Optional[Staging] = staging
        self._waited = False

    def is_completed(self) -> bool:
        """True once the operation has finished, successfully or not."""
        return self._group._poll(self)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the operation is done; return True, or raise ``RuntimeError``.

        ``timeout`` (seconds) bounds this wait only (the operation stays pending); ``None``
        waits up to the group's timeout, after which the communicator is aborted.
        """
        if not self._done.is_set():
            self._group._wait_for(self, timeout)
        if self._error is not None:
            raise RuntimeError(str(self._error)) from self._error
        return True

    def _complete(self) -> None:
        """The event has fired: deliver staged results and release what was kept alive (once,
        though a waiter and the watchdog may both see the event fire)."""
        staging, self._staging = self._staging, None
        if staging is not None:
            staging.copy_back()
        self._keepalive = None
        self._finish()


class Issuing:
    """The operation being issued, while its NCCL calls run: what the watchdog needs to time out
    a call that blocks the host (``error`` is set when it does)."""

    __slots__ = ("description", "deadline", "error")

    def __init__(self, description: str, timeout: float) -> None:
        self.description = description
        self.deadline = time.monotonic() + timeout
        self.error: Optional[RuntimeError] = None


class NcclProcessGroup(ProcessGroup):
    """Process group on a ``cupy.cuda.nccl.NcclCommunicator``; see the module docstring.

    ``unique_id`` is the id rank 0 made; ``runtime`` performs the CUDA and NCCL calls; with
    ``store`` and ``prefix``, the ranks meet in the store before creating the communicator.
    """

    backend_name = "nccl"

    def __init__(
        self,
        unique_id: UniqueId,
        rank: int,
        size: int,
        *,
        runtime: CudaRuntime,
        name: str,
        timeout: float,
        global_ranks: Optional[Sequence[int]] = None,
        store: Any = None,
        prefix: str = "",
    ) -> None:
        super().__init__(rank, size, name=name, timeout=timeout, global_ranks=global_ranks)
        self._unique_id = normalize_unique_id(unique_id)
        self._runtime = runtime
        self._store = store
        self._prefix = prefix
        self._comm: Any = None
        self._ended = False  # the communicator was aborted or destroyed: no more calls into it
        self._control_lock = threading.Lock()  # check_async_error, abort and destroy
        self._issuing: Optional[Issuing] = None
        self._device: Optional[int] = None
        self._stream: Any = None
        self._barrier_buffer: Any = None
        self._outstanding: List[NcclWork] = []
        self._recorder = FlightRecorder(rank, size, store, prefix, check_every(), self.describe_rank)
        self._watchdog: Optional[Watchdog] = None
        self._expiry_lock = threading.Lock()  # one thread times an operation out
        logger.info("nccl group '%s' ready (rank %d of %d; communicator at the first collective)", name, rank, size)

    # --- arrays ------------------------------------------------------------------------------
    def _check_array(self, array: Any, what: str) -> None:
        """Accept contiguous device arrays on this rank's device, and NumPy arrays (staged)."""
        runtime = self._runtime
        if runtime.is_device_array(array):
            if not array.flags.c_contiguous:
                raise ValueError(f"{what} must be a C-contiguous array")
            device = self._device if self._device is not None else runtime.current_device()
            if runtime.device_of(array) != device:
                raise ValueError(
                    f"{what} lives on gpu:{runtime.device_of(array)} but "
                    f"{self.describe_rank(self.rank)} communicates on gpu:{device}; create "
                    "tensors after set_device (FLAGS_selected_gpus selects it at start-up)"
                )
        elif isinstance(array, numpy.ndarray):
            super()._check_array(array, what)
        else:
            raise TypeError(
                f"nccl backend moves CuPy arrays and minidp Tensors (and stages "
                f"NumPy arrays); {what} is {type(array).__name__}"
            )
        if _dtype_name(array) not in NCCL_DATATYPES:
            raise TypeError(
                f"NCCL cannot move {what} of dtype {_dtype_name(array)}; supported: {sorted(NCCL_DATATYPES)}"
            )

    @staticmethod
    def _nccl_op(array: Any, op: ReduceOp) -> int:
        return _BOOL_OPS[op] if _dtype_name(array) == "bool" else _NCCL_OPS[op]

    # --- issuing -----------------------------------------------------------------------------
    def _issue(self, call: Collective, run: Callable[[], Staging], sync_op: bool) -> Work:
        """Queue ``run``'s NCCL calls on the group's stream; wait when synchronous or staged."""
        with self._issue_lock:
            self._check_open(call.op)
            fingerprint = self._recorder.add(call)
            if fingerprint is not None:
                self._guarded(call, lambda: self._recorder.check(fingerprint, call.timeout, self.describe(call.op)))
            issuing = self._issuing = Issuing(self.describe(call.op), call.timeout)
            try:
                work = self._guarded(call, lambda: self._enqueue(call, run))
            except RuntimeError as error:
                if issuing.error is not None:  # the watchdog aborted the blocked call
                    raise RuntimeError(str(issuing.error)) from error
                raise
            finally:
                self._issuing = None
            self._outstanding = [w for w in self._outstanding if not self._poll(w, check_communicator=False)]
            self._outstanding.append(work)
            # read under the lock: another thread may complete the work, dropping its staging
            wait_now = sync_op or work._staging.holds_host_arrays
        if wait_now:
            work.wait()
        return work

    def _enqueue(self, call: Collective, run: Callable[[], Staging]) -> NcclWork:
        """Order ``run`` after the work of the caller's stream on the group's device (current
        for the whole enqueue, whatever device the calling thread had); the work handle armed
        with its completion event."""
        runtime = self._runtime
        device = self._device if self._device is not None else runtime.current_device()
        with runtime.device(device):
            if self._comm is None:
                self._connect()
            produced = runtime.new_event()
            produced.record(runtime.current_stream())
            self._stream.wait_event(produced)
            staging = run()
            done = runtime.new_event()
            done.record(self._stream)
        return NcclWork(self, call, done, run, staging)

    def _staging(self) -> Staging:
        """A new :class:`Staging` on the group's stream, for one operation."""
        return Staging(self._runtime, self._stream)

    def _connect(self) -> None:
        """Meet the other ranks in the store (bounded), then create the communicator."""
        if self._store is not None:
            self._meet_in_store()
        runtime = self._runtime
        started = time.monotonic()
        self._device = runtime.current_device()
        self._comm = runtime.communicator(self.size, self._unique_id, self.rank)
        self._stream = runtime.new_stream()
        self._barrier_buffer = runtime.empty((1,), numpy.dtype(numpy.uint8))
        self._watchdog = Watchdog(self)
        logger.info(
            "nccl group '%s' connected on gpu:%d in %.3f s", self.name, self._device, time.monotonic() - started
        )

    def _meet_in_store(self) -> None:
        """Wait (bounded) until every rank has reached the first collective; name the absent."""
        keys = [f"{self._prefix}/joined/{rank}" for rank in range(self.size)]
        self._store.set(keys[self.rank], b"1")
        try:
            self._store.wait(keys, timeout=self.timeout)
        except RuntimeError as error:
            absent = absent_ranks(self._store, keys, self.describe_rank)
            raise RuntimeError(
                f"{self.describe('connect')}: {absent} did not reach the "
                f"group's first collective within {self.timeout:g} s; every rank must issue the "
                "same collectives (or raise PADDLE_PG_TIMEOUT)"
            ) from error

    # --- completion --------------------------------------------------------------------------
    def _wait_for(self, work: NcclWork, timeout: Optional[float]) -> None:
        """Poll ``work`` until it is done or failed; the group's timeout fails it, ``timeout``
        only ends this wait."""
        limit = None if timeout is None else time.monotonic() + float(timeout)
        pause = FIRST_POLL_PAUSE
        work._waited = True
        try:
            while not self._poll(work):
                now = time.monotonic()
                if now >= work._deadline:
                    self._time_out(work)
                    return
                if limit is not None and now >= limit:
                    raise RuntimeError(
                        f"{work._description} did not complete within {timeout} "
                        "s; wait longer or check that every rank issued the same "
                        "collectives"
                    )
                time.sleep(pause)
                pause = min(2 * pause, LONGEST_POLL_PAUSE)
        finally:
            work._waited = False

    def _timed_out(self, description: str, where: str) -> RuntimeError:
        """The error of an operation past its deadline, ``where`` saying what it was doing."""
        return self._with_records(
            f"{description}: timed out (group timeout {self.timeout:g} s) {where}; the communicator "
            "was aborted. Check that every rank issues the same collectives in the same order, or "
            "raise the timeout (PADDLE_PG_TIMEOUT in ms)"
        )

    def _time_out(self, work: NcclWork) -> None:
        """Fail ``work``, past its deadline, and the group with it, unless it finished meanwhile.
        Its waiter calls this, or the watchdog when nobody waits; the lock makes it happen once."""
        with self._expiry_lock:
            if not self._poll(work):
                self._fail(work, self._timed_out(work._description, "waiting for the other ranks"))

    def _time_out_issuing(self, issuing: Issuing) -> None:
        """Fail the group when ``issuing`` is still blocked in NCCL past its deadline: the abort
        unblocks the call, and its thread raises ``issuing.error``."""
        with self._expiry_lock:
            if self._issuing is not issuing:  # it returned meanwhile
                return
            issuing.error = self._timed_out(
                issuing.description, "blocked in NCCL while issuing it, waiting for the other ranks to connect"
            )
            if self._record_failure(issuing.error):
                self._abort()

    def _watch(self, asked: bool, store: Any) -> float:
        """The watchdog's round: publish the flight record when a peer ``asked`` for it, time out
        a call blocked in NCCL past its deadline while being issued, and poll the operations that
        nobody waits on (an asynchronous NCCL error fails them), timing out those past their
        deadline. Returns the seconds until the next deadline (at most ``WATCHDOG_PAUSE``)."""
        if asked:
            self._publish_record(store)
        issuing = self._issuing
        if issuing is not None and time.monotonic() >= issuing.deadline:
            self._time_out_issuing(issuing)
        for work in list(self._outstanding):
            if work._done.is_set() or work._waited or self._poll(work):
                continue
            if time.monotonic() >= work._deadline:
                self._time_out(work)
        now = time.monotonic()
        deadlines = [work._deadline for work in list(self._outstanding) if not work._done.is_set()]
        if issuing is not None and issuing.error is None:
            deadlines.append(issuing.deadline)
        return min([WATCHDOG_PAUSE, *(deadline - now for deadline in deadlines if deadline > now)])

    def _poll(self, work: NcclWork, check_communicator: bool = True) -> bool:
        """True once ``work`` has finished, successfully or not: its event has fired (results
        delivered), or a CUDA error, an earlier failure of the group or (with
        ``check_communicator``) an asynchronous NCCL error has failed it.

        The group's failure is looked at before the event: the abort that follows a failure
        ends the operations still in NCCL, and their events then fire as if they had completed.
        """
        if work._done.is_set():
            return True
        if self._failure is not None:
            work._finish(self._unusable(work._description))
            return True
        try:
            with self._runtime.device(self._device):  # no query may make a context on another device
                fired = self._runtime.event_done(work._event)
        except Exception as error:
            self._fail(
                work,
                RuntimeError(
                    f"{work._description}: CUDA reported an error while the operation ran ({error}); "
                    "the communicator was aborted and the group cannot be used again"
                ),
            )
            return True
        if fired:
            with self._runtime.device(self._device):
                work._complete()
            return True
        if not check_communicator:
            return False
        try:
            with self._control_lock:  # CuPy releases the GIL here: never beside an abort
                if self._comm is not None and not self._ended:
                    self._comm.check_async_error()
        except Exception as error:
            self._fail(
                work,
                self._with_records(
                    f"{work._description}: NCCL reported an asynchronous error ({error}); the "
                    "communicator was aborted and the group cannot be used again"
                ),
            )
            return True
        return False

    def _with_records(self, message: str) -> RuntimeError:
        """The error ``message``, followed, at the group's first failure, by what the ranks'
        flight records show (read from the store with a bounded wait)."""
        if self._failure is None and self._recorder.can_report:
            watchdog = self._watchdog  # each thread talks to the store on its own connection
            store = watchdog.store if watchdog is not None and watchdog.is_current() else None
            try:
                message += f". Flight records: {self._recorder.report(store)}"
            except (OSError, RuntimeError) as error:  # the store is gone: keep the first error
                message += f". Flight records unavailable: {error}"
        return RuntimeError(message)

    def _fail(self, work: NcclWork, error: RuntimeError) -> None:
        """Record the group's first failure, abort the communicator and fail ``work``."""
        if self._record_failure(error):
            self._abort()
        work._finish(error)

    def _on_failure(self) -> None:
        """An operation failed while being issued: abort, as after a failed wait."""
        self._abort()

    def _abort(self) -> None:
        """Abort the communicator (NCCL's way out of a hung or failed operation), once. Never
        waits for the issue lock: an issuing call blocked in the host holds it, and the abort is
        what unblocks that call (which then raises, as every later call into it does)."""
        with self._control_lock:
            if self._comm is not None and not self._ended:
                self._ended = True
                self._comm.abort()

    def _finish_outstanding(self) -> None:
        """Wait for the issued operations (each bounded by its timeout), stopping at a failure."""
        outstanding, self._outstanding = self._outstanding, []
        for work in outstanding:
            try:
                work.wait()
            except RuntimeError as error:
                logger.warning("shutting down after a failed operation: %s", error)
                break

    def _publish_record(self, store: Any = None) -> None:
        """Publish the flight record through ``store`` (default: the group's client)."""
        try:
            self._recorder.publish(store)
        except (OSError, RuntimeError) as error:  # the store closed first: only less to read
            logger.warning("nccl group '%s' could not publish its flight record: %s", self.name, error)

    def _close(self) -> None:
        """Stop the watchdog, publish the flight record (a failing peer may look for it),
        destroy the communicator."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._recorder.can_report:
            self._publish_record()
        with self._issue_lock, self._control_lock:
            if self._comm is not None and not self._ended:
                self._ended = True
                self._comm.destroy()

    # --- the operations (called with the group's stream ordered after the current one) -------
    def _all_reduce(self, array: Any, op: ReduceOp) -> Staging:
        staging = self._staging()
        buffer = staging.device(array)
        if buffer.size:
            pointer = self._runtime.pointer(buffer)
            self._comm.allReduce(
                pointer, pointer, buffer.size, _datatype(buffer), self._nccl_op(buffer, op), self._stream.ptr
            )
        return staging

    def _broadcast(self, array: Any, src: int) -> Staging:
        staging = self._staging()
        buffer = staging.device(array)
        if buffer.size:
            self._comm.bcast(self._runtime.pointer(buffer), buffer.size, _datatype(buffer), src, self._stream.ptr)
        return staging

    def _all_gather(self, out_array: Any, array: Any) -> Staging:
        staging = self._staging()
        source = staging.device(array, result=False)
        out = staging.device(out_array)
        if source.size:
            self._comm.allGather(
                self._runtime.pointer(source),
                self._runtime.pointer(out),
                source.size,
                _datatype(source),
                self._stream.ptr,
            )
        return staging

    def _reduce_scatter(self, out_array: Any, in_array: Any, op: ReduceOp) -> Staging:
        staging = self._staging()
        source = staging.device(in_array, result=False)
        out = staging.device(out_array)
        if out.size:
            self._comm.reduceScatter(
                self._runtime.pointer(source),
                self._runtime.pointer(out),
                out.size,
                _datatype(out),
                self._nccl_op(out, op),
                self._stream.ptr,
            )
        return staging

    def _barrier(self, timeout: float) -> Staging:
        """Queue the barrier's one-byte all-reduce (NCCL has no barrier); ``timeout`` bounds the
        wait, through the operation's :class:`Collective`."""
        pointer = self._runtime.pointer(self._barrier_buffer)
        self._comm.allReduce(pointer, pointer, 1, NCCL_DATATYPES["uint8"], NCCL_MAX, self._stream.ptr)
        return self._staging()

    def _send(self, array: Any, dst: int) -> Staging:
        staging = self._staging()
        buffer = staging.device(array, result=False)
        if buffer.size:
            self._comm.send(self._runtime.pointer(buffer), buffer.size, _datatype(buffer), dst, self._stream.ptr)
        return staging

    def _recv(self, array: Any, src: int) -> Staging:
        staging = self._staging()
        buffer = staging.device(array)
        if buffer.size:
            self._comm.recv(self._runtime.pointer(buffer), buffer.size, _datatype(buffer), src, self._stream.ptr)
        return staging


class Watchdog:
    """The background thread of one connected nccl group: see "Watchdog" in the module docstring.

    It runs until the group shuts down or the interpreter exits. ``store`` is its own connection
    to the group's store (None for a group without a store): a store client holds its lock
    through a blocking wait, so the watchdog's waits on the group's client would stall the main
    thread's requests. The connection proves the job secret, as every connection to the store
    does.
    """

    def __init__(self, group: NcclProcessGroup) -> None:
        self._group = group
        self._stopping = threading.Event()
        self._group_store = group._store  # wakes the thread at stop
        self._request_key = ""
        self.store: Optional[TCPStore] = None
        if group._store is not None:
            self._request_key = group._recorder.request_key(group.rank)
            self.store = TCPStore(group._store.host, group._store.port, timeout=group._store.timeout)
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"minidp-nccl-watchdog-{group.name}-{group.rank}"
        )
        self._thread.start()
        atexit.register(_stop_at_exit, weakref.ref(self))

    def is_current(self) -> bool:
        """True on the watchdog's own thread."""
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        """End the thread: raise the stop flag, wake it through its request key, and wait for
        it (bounded)."""
        if not self._thread.is_alive():
            return
        self._stopping.set()
        if self._group_store is not None:
            try:
                self._group_store.set(self._request_key, b"")
            except RuntimeError:  # that client is closed: the thread sees the flag after its pause
                pass
        self._thread.join(WATCHDOG_STOP_WAIT)
        if self._thread.is_alive():
            logger.warning(
                "%s did not stop within %g s; it ends with the process", self._thread.name, WATCHDOG_STOP_WAIT
            )

    def _run(self) -> None:
        asked = False
        try:
            while not self._stopping.is_set():
                asked = self._sleep(self._group._watch(asked, self.store))
        finally:
            if self.store is not None:
                self.store.close()

    def _sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when woken (early) by this rank's request key, which is
        then removed. Without a store, or once it is gone, the thread sleeps on its stop flag."""
        started = time.monotonic()
        if self.store is not None:
            try:
                self.store.wait([self._request_key], timeout=seconds)
                self.store.delete_key(self._request_key)
                return True
            except RuntimeError:  # timed out, or the store is gone: sleep out the rest
                pass
        self._stopping.wait(max(0.0, started + seconds - time.monotonic()))
        return False


def _stop_at_exit(reference: "weakref.ref[Watchdog]") -> None:
    """At interpreter exit, stop a watchdog whose group was never shut down: its connection
    closes before the process hosting the store waits for its clients to leave. (Held weakly:
    the registry of exit functions keeps no stopped watchdog alive.)"""
    watchdog = reference()
    if watchdog is not None:
        watchdog.stop()


def _mpi_world(spec: GroupSpec) -> Any:
    """``MPI.COMM_WORLD``, for sharing the id of a group that has no store."""
    if mpi_launch() is None:
        raise RuntimeError(
            f"rank {spec.global_rank}: the nccl backend shares its NCCL id through the job's "
            f"store, and group '{spec.name}' has none; create groups after init_parallel_env, or "
            "start the job with mpirun so that the id can travel over MPI"
        )
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError(
            f"rank {spec.global_rank}: sharing the NCCL id under mpirun needs mpi4py ({error}); "
            "pip install 'minidp[mpi]'"
        ) from error
    return MPI.COMM_WORLD


def create_process_group(
    spec: GroupSpec, runtime: Optional[CudaRuntime] = None, mpi_comm: Any = None
) -> Optional[NcclProcessGroup]:
    """Backend factory: share rank 0's NCCL id, then build this rank's group.

    The id goes through ``spec.store``; without a store, through ``mpi_comm`` (default
    ``MPI.COMM_WORLD``), with which every process of the job, member or not, must then call
    this. ``runtime`` defaults to :class:`CupyRuntime`; tests pass stand-ins for both.
    """
    member = spec.rank >= 0
    if spec.store is not None and not member:
        return None
    if spec.store is None and mpi_comm is None:
        mpi_comm = _mpi_world(spec)
    if member and runtime is None:
        runtime = CupyRuntime(f"rank {spec.global_rank}")
    make_id = runtime.unique_id if spec.rank == 0 else None
    if spec.store is None:
        unique_id = share_unique_id_via_mpi(mpi_comm, spec.global_ranks[0], make_id)
        if not member:
            return None
        prefix = ""
    else:
        instance = spec.store.add(f"nccl/{spec.name}/instances/{spec.rank}", 1)
        prefix = f"nccl/{spec.name}/{instance}"
        unique_id = share_unique_id_via_store(
            spec.store, f"{prefix}/unique_id", make_id, spec.timeout, f"rank {spec.global_rank}"
        )
    return NcclProcessGroup(
        unique_id,
        spec.rank,
        spec.size,
        runtime=runtime,
        name=spec.name,
        timeout=spec.timeout,
        global_ranks=list(spec.global_ranks),
        store=spec.store,
        prefix=prefix,
    )
