"""Worker processes for ``DataLoader(num_workers > 0)``: load batches in parallel, hand them back in order.

Each worker owns a task queue; all share one result queue. The main process sends ``(task id,
indices)`` round-robin, keeping ``prefetch_factor * num_workers`` tasks in flight, and yields the
results in the order of the sampler whatever order they arrive in. A worker runs on the CPU
(tensors cross as NumPy arrays and become tensors at the current place in the main process),
seeds Python's, NumPy's and minidp's generators with ``base_seed + worker_id``, and reports an
exception as a record that the main process re-raises with the worker's number and traceback.
Batches travel through a pipe between this process and its own children, pickled by the
worker: nothing from outside the job is unpickled.

The pool ends its workers when the epoch ends, when the loop over the loader is abandoned, or,
with ``persistent_workers``, when the loader is garbage-collected; a worker also exits when its
parent dies. A worker that dies, or no batch within ``timeout`` seconds, raises RuntimeError.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import queue
import random
import traceback
import weakref
from typing import Any, Callable, Iterator, Optional

import numpy

from ..core import backend
from ..core import random as minidp_random
from ..core.tensor import Tensor
from ..core.op_util import wrap
from ..ops.creation import to_tensor

_POLL_SECONDS = 0.2
_JOIN_SECONDS = 2.0


class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: ``id``, ``num_workers``, ``dataset``
    (the worker's copy) and ``seed`` (the epoch's base seed; the worker's generators are seeded
    with ``seed + id``). Read-only."""

    __slots__ = ("id", "num_workers", "dataset", "seed")

    def __init__(self, id: int, num_workers: int, dataset: Any, seed: int) -> None:  # noqa: A002 (Paddle's name)
        for name, value in (("id", id), ("num_workers", num_workers), ("dataset", dataset), ("seed", seed)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"WorkerInfo is read-only; cannot set {name}")

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info: Optional[WorkerInfo] = None


def get_worker_info() -> Optional[WorkerInfo]:
    """This worker's :class:`WorkerInfo` inside a DataLoader worker process, None elsewhere."""
    return _worker_info


class _HostTensor:
    """A tensor's values on their way from a worker to the main process."""

    __slots__ = ("array",)

    def __init__(self, array: numpy.ndarray) -> None:
        self.array = array


def _to_host(obj: Any) -> Any:
    if isinstance(obj, Tensor):
        return _HostTensor(backend.to_host(obj._data))
    if isinstance(obj, dict):
        return {key: _to_host(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_host(value) for value in obj)
    return obj


def _from_host(obj: Any) -> Any:
    if isinstance(obj, _HostTensor):
        return wrap(obj.array) if backend.get_device() == "cpu" else to_tensor(obj.array)
    if isinstance(obj, dict):
        return {key: _from_host(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_host(value) for value in obj)
    return obj


class _Exhausted:
    """A worker's iterable dataset has no more samples (until the next epoch)."""


class _Failure:
    """An exception in a worker, in a form that survives the trip to the main process."""

    def __init__(self, worker_id: int, error: BaseException) -> None:
        self.worker_id = worker_id
        self.type_name = type(error).__name__
        self.text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        try:
            pickle.dumps(type(error))
            self.exc_type: Any = type(error)
        except Exception:
            self.exc_type = None

    def reraise(self) -> None:
        message = f"DataLoader worker {self.worker_id} raised {self.type_name}:\n{self.text}"
        if self.exc_type is not None:
            try:
                error = self.exc_type(message)
            except Exception:
                error = None
            if isinstance(error, BaseException):
                raise error
        raise RuntimeError(message)


def _worker_loop(
    fetcher: Any,
    dataset: Any,
    worker_id: int,
    num_workers: int,
    base_seed: int,
    init_fn: Optional[Callable[[int], None]],
    tasks: Any,
    results: Any,
    parent_pid: int,
) -> None:
    """What a worker process runs until it is told to stop or its parent disappears."""
    global _worker_info
    backend.set_device("cpu")
    seed = base_seed + worker_id
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    minidp_random.seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, dataset, base_seed)
    init_failure = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as error:
        init_failure = _Failure(worker_id, error)
    try:
        while True:
            try:
                task = tasks.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent_pid:
                    return
                continue
            if task is None:
                return
            task_id, indices = task
            if task_id is None:
                fetcher.reset()
                continue
            payload: Any = init_failure
            if payload is None:
                try:
                    payload = _to_host(fetcher.fetch(indices))
                except StopIteration:
                    payload = _Exhausted()
                except Exception as error:
                    payload = _Failure(worker_id, error)
            try:
                data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as error:
                data = pickle.dumps(
                    _Failure(
                        worker_id,
                        TypeError(f"the batch cannot be sent to the main process (it cannot be pickled: {error})"),
                    )
                )
            results.put((task_id, data))
    except KeyboardInterrupt:
        return


def _shutdown(processes: list, task_queues: list, results: Any) -> None:
    """Stop every worker (politely, then by force) and release the queues."""
    for process, tasks in zip(processes, task_queues):
        if process.is_alive():
            try:
                tasks.put(None)
            except (OSError, ValueError):
                pass
    for process in processes:
        process.join(_JOIN_SECONDS)
        if process.is_alive():
            process.terminate()
            process.join(_JOIN_SECONDS)
    for q in task_queues + [results]:
        q.cancel_join_thread()
        q.close()


class WorkerPool:
    """``num_workers`` worker processes serving one DataLoader (see the module docstring)."""

    def __init__(
        self, fetcher: Any, dataset: Any, num_workers: int, init_fn: Optional[Callable[[int], None]], timeout: float
    ) -> None:
        context = multiprocessing.get_context()
        self.num_workers, self.timeout = num_workers, timeout
        # A child of the host generator: seeded runs repeat, and the main stream (the sampler's
        # shuffle) does not move, so batches are the same with and without workers.
        self.base_seed = int(minidp_random.host_generator().spawn(1)[0].integers(0, 2**62))
        self.results = context.Queue()
        self.task_queues = [context.Queue() for _ in range(num_workers)]
        self.processes = [
            context.Process(
                target=_worker_loop,
                name=f"minidp-dataloader-worker-{i}",
                daemon=True,
                args=(
                    fetcher,
                    dataset,
                    i,
                    num_workers,
                    self.base_seed,
                    init_fn,
                    self.task_queues[i],
                    self.results,
                    os.getpid(),
                ),
            )
            for i in range(num_workers)
        ]
        self._task_ids = itertools.count()
        self._finalizer = weakref.finalize(self, _shutdown, self.processes, self.task_queues, self.results)
        for process in self.processes:
            process.start()

    def submit(self, worker: int, indices: Any) -> int:
        """Ask ``worker`` for the batch at ``indices`` (None: its stream's next batch); returns the task id."""
        task_id = next(self._task_ids)
        self.task_queues[worker].put((task_id, indices))
        return task_id

    def restart_streams(self) -> None:
        """Every worker starts its iterable dataset over (a new epoch with persistent workers)."""
        for tasks in self.task_queues:
            tasks.put((None, None))

    def receive(self) -> tuple:
        """The next ``(task id, payload)`` from any worker; RuntimeError if a worker died or the
        timeout passed first."""
        waited = 0.0
        while True:
            try:
                task_id, data = self.results.get(timeout=_POLL_SECONDS)
                return task_id, pickle.loads(data)
            except queue.Empty:
                waited += _POLL_SECONDS
            for worker, process in enumerate(self.processes):
                if process.exitcode is not None:
                    raise RuntimeError(
                        f"DataLoader worker {worker} (pid {process.pid}) exited unexpectedly with exit "
                        f"code {process.exitcode}; if it was killed for memory, use fewer workers"
                    )
            if self.timeout and waited >= self.timeout:
                raise RuntimeError(
                    f"DataLoader timed out: no batch from its {self.num_workers} workers within "
                    f"timeout={self.timeout} s"
                )

    def close(self) -> None:
        """Stop the workers now (idempotent)."""
        self._finalizer()

    def run_epoch(self, batches: Optional[Iterator], depth: int) -> Iterator[Any]:
        """Yield the epoch's batches in order: for ``batches`` of indices (map-style), or until
        every worker's stream is exhausted (``batches`` None)."""
        order_of: dict = {}
        arrived: dict = {}
        issued = delivered = turn = 0
        active = list(range(self.num_workers))
        source_done = False
        while True:
            while not source_done and active and issued - delivered < depth:
                indices = None
                if batches is not None:
                    indices = next(batches, None)
                    if indices is None:
                        source_done = True
                        break
                worker = active[turn % len(active)]
                turn += 1
                order_of[self.submit(worker, indices)] = (issued, worker)
                issued += 1
            if delivered == issued:
                return
            while delivered not in arrived:
                task_id, payload = self.receive()
                if task_id not in order_of:
                    continue  # a result for an epoch that was abandoned
                order, worker = order_of.pop(task_id)
                if isinstance(payload, _Exhausted) and worker in active:
                    active.remove(worker)
                arrived[order] = payload
            payload = arrived.pop(delivered)
            delivered += 1
            if isinstance(payload, _Failure):
                payload.reraise()
            if not isinstance(payload, _Exhausted):
                yield _from_host(payload)
