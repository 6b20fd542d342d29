"""The timeline recorder: when forward, backward, each bucket's communication and the optimizer
ran, on every rank, as Chrome-trace JSON that Perfetto and ``chrome://tracing`` open.

Switched on for a whole process by ``MINIDP_TIMELINE=DIR`` (read when minidp is imported; the
file is written at exit) or for a block by :func:`timeline` (written when the block ends). Each
rank writes ``DIR/rank-N.json``: ``{"traceEvents": [...]}`` with complete events (``ph`` "X")
for intervals and instant events (``ph`` "i") for moments, ``pid`` the rank and ``tid`` the
thread that ran them, so the process group's communication thread gets a track of its own.
:func:`merge` joins the rank files into one, one process row per rank; the launcher and
``spawn`` call it when the job ends.

An event site is one line: ``with span(name, category):`` around a block, :func:`instant` for a
moment, :func:`batches` around a loader's iterator. They record into the module attribute
:data:`recorder`; while it is None they return at once (``span`` a shared empty context), so a
run without a timeline pays one call per site.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Union

from .log_config import process_rank

TIMELINE_ENV = "MINIDP_TIMELINE"
MERGED_NAME = "timeline.json"


class Recorder:
    """Collects one process's events in memory; :meth:`write` saves them as a trace file."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.events: List[Dict[str, Any]] = []
        self._thread_names: Dict[int, str] = {}

    def _track(self) -> int:
        thread = threading.current_thread()
        tid = threading.get_native_id()
        if tid not in self._thread_names:
            self._thread_names[tid] = "main" if thread is threading.main_thread() else thread.name
        return tid

    def _interval(self, name: str, category: str, started: int, args: Optional[dict]) -> None:
        """Record the interval from ``started`` (nanoseconds) to now on this thread."""
        ended = time.time_ns()
        self.events.append(
            {
                "name": name,
                "cat": category,
                "ph": "X",
                "ts": started / 1e3,
                "dur": (ended - started) / 1e3,
                "tid": self._track(),
                "args": args or {},
            }
        )

    def instant(self, name: str, category: str, args: Optional[dict] = None) -> None:
        """Record the present moment on this thread."""
        self.events.append(
            {
                "name": name,
                "cat": category,
                "ph": "i",
                "s": "t",
                "ts": time.time_ns() / 1e3,
                "tid": self._track(),
                "args": args or {},
            }
        )

    def batches(self, iterator: Iterator[Any]) -> Iterator[Any]:
        """``iterator``'s items, with the time spent waiting for each recorded as "next batch"."""
        while True:
            try:
                with _Span(self, "next batch", "data", None):
                    item = next(iterator)
            except StopIteration:
                return
            yield item

    def trace(self, rank: int) -> Dict[str, Any]:
        """The Chrome-trace document of the events so far, as process ``rank``."""
        names = [{"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}}]
        names += [
            {"name": "thread_name", "ph": "M", "pid": rank, "tid": tid, "args": {"name": name}}
            for tid, name in self._thread_names.items()
        ]
        return {"traceEvents": names + [dict(event, pid=rank) for event in self.events]}

    def write(self) -> Optional[str]:
        """Save the events as ``DIR/rank-N.json`` (N this process's rank) and return the path;
        a process that recorded nothing (a launcher's parent) writes nothing."""
        if not self.events:
            return None
        rank = int(process_rank() or 0)
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"rank-{rank}.json")
        with open(path, "w") as file:
            json.dump(self.trace(rank), file)
        return path


class _Span:
    """The block of a ``with span(...)`` while a timeline records. Times are wall-clock
    nanoseconds, so that ranks on several hosts line up as well as their clocks do. A block
    left by an exception records nothing: its error, not its length, is what the run reports."""

    __slots__ = ("_recorder", "_name", "_category", "_args", "_started")

    def __init__(self, recorder: Recorder, name: str, category: str, args: Optional[dict]) -> None:
        self._recorder = recorder
        self._name = name
        self._category = category
        self._args = args

    def __enter__(self) -> None:
        self._started = time.time_ns()

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if kind is None:
            self._recorder._interval(self._name, self._category, self._started, self._args)


class _NoSpan:
    """What :func:`span` gives while nothing records: a block with nothing around it (cheaper
    than ``contextlib.nullcontext``, whose exit takes any arguments)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        return None


_NO_SPAN = _NoSpan()

recorder: Optional[Recorder] = None


def span(name: str, category: str, args: Optional[dict] = None) -> Union[_Span, _NoSpan]:
    """``with span(name, category):`` records the block as an interval on this thread (if it
    ends without an exception) while a timeline records; ``args`` are shown with it."""
    return _NO_SPAN if recorder is None else _Span(recorder, name, category, args)


def instant(name: str, category: str, args: Optional[dict] = None) -> None:
    """Record the present moment on this thread, while a timeline records."""
    if recorder is not None:
        recorder.instant(name, category, args)


def batches(iterator: Iterator[Any]) -> Iterator[Any]:
    """``iterator``, with the wait for each item recorded while a timeline records."""
    return iterator if recorder is None else recorder.batches(iterator)


@contextlib.contextmanager
def timeline(directory: str) -> Iterator[Recorder]:
    """Record the timeline of the block and write it to ``directory/rank-N.json`` at its end."""
    global recorder
    previous, recorder = recorder, Recorder(os.fspath(directory))
    try:
        yield recorder
    finally:
        finished, recorder = recorder, previous
        finished.write()


def merge(directory: str, out: Optional[str] = None) -> Optional[str]:
    """Join the rank files of ``directory`` into ``out`` (default ``directory/timeline.json``),
    one process row per rank, and return its path; None when there are no rank files."""
    paths = sorted(glob.glob(os.path.join(directory, "rank-*.json")))
    if not paths:
        return None
    events: List[Dict[str, Any]] = []
    for path in paths:
        with open(path) as file:
            events.extend(json.load(file)["traceEvents"])
    out = out or os.path.join(directory, MERGED_NAME)
    with open(out, "w") as file:
        json.dump({"traceEvents": events}, file)
    return out


def merge_from_environment() -> Optional[str]:
    """At the end of a job: merge the rank files when ``MINIDP_TIMELINE`` names a directory, and
    say on stderr where the merged file is (the one line a user needs to find it)."""
    directory = os.environ.get(TIMELINE_ENV, "")
    path = merge(directory) if directory else None
    if path is not None:
        print(f"minidp: timeline written to {path} (open it in Perfetto or chrome://tracing)", file=sys.stderr)
    return path


def save() -> None:
    """Write the current timeline, if one is recording, to its rank file now: at exit, and
    where a rank ends without running exit handlers (``multiprocessing`` children)."""
    if recorder is not None:
        recorder.write()


def _start_from_environment() -> None:
    """Record the whole process when ``MINIDP_TIMELINE`` is set; write the file at exit."""
    global recorder
    directory = os.environ.get(TIMELINE_ENV, "")
    if directory:
        recorder = Recorder(directory)
        atexit.register(save)
        os.register_at_fork(after_in_child=_forget_parent_events)


def _forget_parent_events() -> None:
    """A forked rank starts its own timeline instead of carrying its parent's events."""
    if recorder is not None:
        recorder.events = []
        recorder._thread_names = {}


_start_from_environment()
