"""Element-wise work on large NumPy arrays, shared out over a small pool of threads.

NumPy's BLAS runs matrix products on ``OMP_NUM_THREADS`` threads, but every element-wise ufunc
runs on the calling thread alone: with two threads, a training step whose time goes to GELU,
softmax or the optimizer's update hardly speeds up. Ufuncs release the GIL on large arrays, so
the hottest of those places hand :func:`for_each_chunk` a function of an index range, and it
calls it on consecutive ranges at once, one per thread.

Only NumPy arrays of at least :data:`MIN_ELEMENTS` elements are split (below that, handing work
to a thread costs more than it saves), and only after :func:`set_num_threads` asked for more
than one thread: off by default, whatever ``OMP_NUM_THREADS`` says. Measured on a shared
2-core machine with OMP_NUM_THREADS=2, splitting made a ViT step 11 times slower (the GIL is
handed back and forth between ~50 short ufunc calls per piece while the BLAS's threads spin), so
it stays opt-in until a quiet machine shows it pays. A CuPy array is never split.

Element-wise results do not depend on where the ranges start, so the split changes no value.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Tuple

import numpy

MIN_ELEMENTS = 65536
CACHE_BLOCK = 32768  # items per piece for a chain of passes: their float64 temporaries fit a 2 MiB cache

_configured: Optional[int] = None
_pool: Optional[ThreadPoolExecutor] = None
_pool_key: Tuple[int, int] = (0, 0)  # (process id, worker count) the pool was made for
_pool_lock = threading.Lock()
_inside = threading.local()  # set while a thread runs a range: nested calls run inline


def set_num_threads(count: int) -> None:
    """Use ``count`` threads (>= 1) for large element-wise work (1 by default)."""
    global _configured
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"set_num_threads: count must be an int >= 1, got {count!r}")
    _configured = count


def get_num_threads() -> int:
    """The threads large element-wise work is split over: 1 unless :func:`set_num_threads` said."""
    return 1 if _configured is None else _configured


def chunks(count: int, parts: int) -> List[Tuple[int, int]]:
    """``[0, count)`` cut into at most ``parts`` consecutive non-empty ranges of near-equal length."""
    parts = max(1, min(parts, count))
    bounds = [count * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(parts)]


def for_each_chunk(array: Any, count: int, work: Callable[[int, int], Any], block: Optional[int] = None) -> None:
    """Call ``work(start, stop)`` over ranges that cover ``[0, count)``: concurrently, one range
    per thread, when ``array`` (whose items the ranges index) is a NumPy array of at least
    :data:`MIN_ELEMENTS` elements and more than one thread is configured; else on the calling
    thread, as ``work(0, count)``. ``work`` must write disjoint parts of its outputs for disjoint ranges.
    The calling thread runs the first range itself; an exception in any range is raised here.

    With ``block``, each thread calls ``work`` on consecutive pieces of its range of at most
    ``block`` items (on a NumPy array only; :data:`CACHE_BLOCK` suits most): a chain of passes
    over a piece that stays in the CPU cache runs much faster than over an array that does not.
    """
    if block is not None and isinstance(array, numpy.ndarray):
        whole = work

        def work(start: int, stop: int) -> None:
            for first in range(start, stop, block):
                whole(first, min(first + block, stop))

    parts = 1
    if isinstance(array, numpy.ndarray) and array.size >= MIN_ELEMENTS and not getattr(_inside, "active", False):
        parts = get_num_threads()
    if parts < 2 or count < 2:
        work(0, count)
        return
    ranges = chunks(count, parts)
    pool = _shared_pool(parts - 1)
    futures = [pool.submit(_run_inside, work, start, stop) for start, stop in ranges[1:]]
    try:
        _run_inside(work, *ranges[0])
    finally:
        # Waits on in-process computations that always end (they cannot block on anything),
        # so no timeout; every range has finished before the outputs are read or raised from.
        errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error


def _run_inside(work: Callable[[int, int], Any], start: int, stop: int) -> None:
    _inside.active = True
    try:
        work(start, stop)
    finally:
        _inside.active = False


def _shared_pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool with ``workers`` threads; a new one after a fork or a change of count
    (a forked child inherits the pool object but none of its threads)."""
    global _pool, _pool_key
    key = (os.getpid(), workers)
    with _pool_lock:
        if _pool is None or _pool_key != key:
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="minidp-elementwise")
            _pool_key = key
        return _pool
