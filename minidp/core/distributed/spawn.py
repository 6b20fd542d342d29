"""``spawn``: start N ranks of a training function on this machine and watch over them.

The parent decides everything a rank needs before any child starts (the job plan of
:mod:`minidp.core.distributed.job`: backend, GPUs, reserved ports, environments, secret). Each child
receives its environment (the variables ``ParallelEnv`` reads) and runs the function; its return
value or its traceback comes back through a pipe. The ranks are watched, stopped and blamed by
the supervisor the launcher uses too (:mod:`minidp.core.distributed.supervisor`).

Where this improves on the Paddle original:

* the parent reads results while it waits, so a rank returning a large object cannot block
  forever on a full pipe -- also when ``join=False`` and the caller never joins: the
  interpreter's exit then joins while draining;
* the ports written into the ranks' environments stay reserved until the job ends, so that
  nothing else on the machine takes the store's port before rank 0 listens there;
* every child asks the kernel to kill it when its parent dies (Linux), so a parent killed by
  SIGTERM, SIGINT or SIGKILL never leaves ranks behind;
* when a rank fails, the others are stopped and the raised :class:`RankFailedError` names the
  rank that failed first (from the failure records the ranks write, not from error text) and
  carries its traceback or the name of the signal that killed it;
* called inside a job that a launcher or ``mpirun`` already started (the process's environment
  names its rank), ``spawn`` does not start a second job: it runs ``func`` in this process, as
  this rank, and says so in the log.

Each job gets a fresh secret (``MINIDP_JOB_SECRET``, unless already set) that its ranks' store
and ring connections prove they know; see :mod:`minidp.core.distributed.auth`.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import sys
import threading
import traceback
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import timeline
from .env import mpi_launch
from .failure_record import arm_stack_dump, exit_interrupted, interrupt_once, one_interrupt, write_failure_record
from .job import JobPlan, plan_local_job, resolve_backend, select_gpus, visible_gpus
from .supervisor import Failure, RankHandle, Supervisor, die_with_parent, signal_name

logger = logging.getLogger("minidp.distributed")

SUPPORTED_OPTIONS = ("start_method", "gpus", "ips", "backend", "print_config")
DEPRECATED_ALIASES = {"selected_devices": "gpus", "cluster_node_ips": "ips"}
DEPRECATED_IGNORED = ("started_port", "node_ip", "use_paddlecloud")


class RankFailedError(RuntimeError):
    """A spawned rank raised, exited with a non-zero code or was killed by a signal.

    Attributes: ``rank``, ``pid``, ``exitcode`` (negative for a signal, as in
    ``multiprocessing``) and ``child_traceback`` (the rank's formatted traceback, or None).
    """

    def __init__(
        self, message: str, rank: int, pid: Optional[int], exitcode: Optional[int], child_traceback: Optional[str]
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.pid = pid
        self.exitcode = exitcode
        self.child_traceback = child_traceback


# ----------------------------------------------------------------------------------------------
# Option handling
# ----------------------------------------------------------------------------------------------


def _check_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """Reject unknown options, warn about deprecated ones; return the effective options."""
    effective = {}
    for key, value in options.items():
        if key in SUPPORTED_OPTIONS:
            effective[key] = value
        elif key in DEPRECATED_ALIASES:
            replacement = DEPRECATED_ALIASES[key]
            warnings.warn(
                f"spawn option {key!r} is deprecated; use {replacement!r} instead", DeprecationWarning, stacklevel=3
            )
            effective.setdefault(replacement, value)
        elif key in DEPRECATED_IGNORED:
            warnings.warn(
                f"spawn option {key!r} is deprecated and has no effect in minidp; the options "
                f"in use are {', '.join(SUPPORTED_OPTIONS)}",
                DeprecationWarning,
                stacklevel=3,
            )
        else:
            raise ValueError(
                f"spawn does not support the option {key!r}; supported options are {', '.join(SUPPORTED_OPTIONS)}"
            )
    return effective


def _resolve_backend(options: Dict[str, Any]) -> str:
    """The backend the ranks will use, from the ``backend`` and ``gpus`` options."""
    return resolve_backend(options.get("backend", "auto"), options.get("gpus") is not None)


def _resolve_nprocs(nprocs: int, backend: str) -> int:
    """``nprocs`` itself, or for -1 the visible GPU count (nccl) or the CPU count (gloo)."""
    if isinstance(nprocs, bool) or not isinstance(nprocs, int):
        raise TypeError(f"nprocs must be an int, got {nprocs!r}")
    if nprocs == -1:
        nprocs = len(visible_gpus()) if backend == "nccl" else (os.cpu_count() or 1)
        if nprocs == 0:
            raise RuntimeError(
                "spawn with the nccl backend found no visible GPU; pass nprocs, make GPUs "
                "visible, or use backend='gloo'"
            )
    if nprocs < 1:
        raise ValueError(f"nprocs must be -1 or a positive int, got {nprocs}")
    return nprocs


def _node_ip(options: Dict[str, Any]) -> str:
    """The address every rank's endpoint uses: the single ``ips`` entry (127.0.0.1 default)."""
    ips = options.get("ips") or "127.0.0.1"
    if not isinstance(ips, str):
        raise TypeError(f"ips must be a string such as '127.0.0.1', got {ips!r}")
    addresses = [ip.strip() for ip in ips.split(",") if ip.strip()]
    if len(addresses) != 1:
        raise ValueError(
            f"spawn starts ranks on this machine only, but ips lists {len(addresses)} addresses; "
            "for several machines run `python -m minidp.distributed.launch --nnodes N "
            "--node_rank I --master HOST:PORT` on each"
        )
    return addresses[0]


def _start_method(options: Dict[str, Any]) -> str:
    """The checked start method. 'fork' is refused for nccl ranks, as PyTorch does: planning the
    job asks CUDA for the devices, and a child forked after CUDA is initialised cannot use it."""
    method = options.get("start_method") or "spawn"
    allowed = multiprocessing.get_all_start_methods()
    if method not in allowed:
        raise ValueError(f"start_method must be one of {allowed}, got {method!r}")
    if method == "fork" and _resolve_backend(options) == "nccl":
        raise ValueError(
            "spawn: start_method 'fork' cannot start nccl ranks: this process initialises CUDA to "
            "find the GPUs, and CUDA does not work in a child forked after that; use "
            "start_method='spawn' (the default) or 'forkserver'"
        )
    return method


def build_environments(nprocs: int, options: Dict[str, Any]) -> JobPlan:
    """Validate the options; return the job's plan (release it when the job ends)."""
    backend = _resolve_backend(options)
    nprocs = _resolve_nprocs(nprocs, backend)
    host = _node_ip(options)
    devices = select_gpus(nprocs, options.get("gpus")) if backend == "nccl" else None
    return plan_local_job(nprocs, backend, devices, host)


def _print_config(start_method: str, envs: List[Dict[str, str]]) -> None:
    first = envs[0]
    print("minidp spawn configuration")
    print(f"  processes        {len(envs)} (start method {start_method})")
    print(f"  backend          {first['PADDLE_DISTRI_BACKEND']}")
    print(f"  store (rank 0)   {first['PADDLE_MASTER']}")
    print(f"  endpoints        {first['PADDLE_TRAINER_ENDPOINTS']}")
    if "FLAGS_selected_gpus" in first:
        print(f"  gpus             {','.join(env['FLAGS_selected_gpus'] for env in envs)}")
    sys.stdout.flush()


# ----------------------------------------------------------------------------------------------
# The child side
# ----------------------------------------------------------------------------------------------


def _rank_main(
    func: Callable,
    args: Sequence[Any],
    env: Dict[str, str],
    channel: multiprocessing.connection.Connection,
    parent_pid: Optional[int],
) -> None:
    """Body of each spawned process: set the rank's environment, run ``func``, report back.

    Exactly one message goes back through ``channel``: ``("ok", result)`` or
    ``("error", formatted_traceback)``; a failure is also written as the rank's failure record.
    SIGUSR1 dumps the rank's stacks for the parent's failure summary.
    """
    die_with_parent(parent_pid)
    os.environ.update(env)
    arm_stack_dump()
    interrupt_once()
    try:
        result = func(*args)
    except KeyboardInterrupt as interrupt:
        exit_interrupted(interrupt)
    except Exception as error:
        write_failure_record(error)
        channel.send(("error", traceback.format_exc()))
        sys.exit(1)
    finally:
        timeline.save()
    try:
        channel.send(("ok", result))
    except Exception as error:
        write_failure_record(error)
        channel.send(
            (
                "error",
                "the return value of the spawned function could not be sent to the parent:\n" + traceback.format_exc(),
            )
        )
        sys.exit(1)


# ----------------------------------------------------------------------------------------------
# The parent side
# ----------------------------------------------------------------------------------------------


class SpawnedRank(RankHandle):
    """A rank started by ``multiprocessing``, whose single message arrives on ``channel``.

    A watcher thread receives the message (so a large result never blocks the rank), puts it in
    ``results`` or ``errors``, then waits for the process to end -- without reaping it: only
    the supervising thread reaps, so ``exitcode`` is never lost to a race.
    """

    def __init__(
        self,
        rank: int,
        process: multiprocessing.process.BaseProcess,
        channel: multiprocessing.connection.Connection,
        results: queue.SimpleQueue,
        errors: queue.SimpleQueue,
    ) -> None:
        super().__init__(rank, process.pid)
        self.process = process
        self.child_traceback: Optional[str] = None
        self._channel = channel
        self._results = results
        self._errors = errors

    @property
    def returncode(self) -> Optional[int]:
        return self.process.exitcode

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        threading.Thread(
            target=self._receive, args=(events,), daemon=True, name=f"minidp-spawn-watch-{self.rank}"
        ).start()

    def _receive(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        try:
            message = self._channel.recv()
        except (EOFError, OSError):
            message = None
        finally:
            self._channel.close()
        if message is not None and message[0] == "ok":
            self._results.put(message[1])
        elif message is not None:
            self.child_traceback = message[1]
            self._errors.put(message[1])
        multiprocessing.connection.wait([self.process.sentinel])
        events.put(("exit", self.rank))

    def _deliver(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float) -> bool:
        self.process.join(timeout)
        return self.process.exitcode is not None


class MultiprocessContext:
    """The spawned ranks: ``processes``, ``return_queues``, ``error_queues`` and ``join``.

    ``return_queues[i]`` receives rank i's return value and ``error_queues[i]`` its formatted
    traceback; both are filled as the results arrive (read them after ``join`` returns True,
    with ``get()``).
    """

    def __init__(self, plan: JobPlan) -> None:
        self.processes: List[multiprocessing.process.BaseProcess] = []
        self.return_queues: List[queue.SimpleQueue] = []
        self.error_queues: List[queue.SimpleQueue] = []
        self._plan: Optional[JobPlan] = plan
        self._supervisor = Supervisor(plan.failure_dir)

    def _add(
        self, process: multiprocessing.process.BaseProcess, channel: multiprocessing.connection.Connection
    ) -> None:
        """Supervise one more started rank, whose single message will arrive on ``channel``."""
        rank = len(self.processes)
        self.processes.append(process)
        self.return_queues.append(queue.SimpleQueue())
        self.error_queues.append(queue.SimpleQueue())
        self._supervisor.add(SpawnedRank(rank, process, channel, self.return_queues[rank], self.error_queues[rank]))

    @property
    def running(self) -> bool:
        """Whether some rank has not been seen to end yet."""
        return bool(self._supervisor.running)

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait for the ranks; True once all exited cleanly, False if ``timeout`` ran out first.

        Results are collected while waiting. When a rank fails, the others are stopped and
        :class:`RankFailedError` is raised. An interrupt of the wait (Ctrl-C) also stops every
        rank, each of which prints one line saying where it was, and logs one closing line.
        """
        with one_interrupt():  # a second Ctrl-C must not cut the stopping short
            try:
                event = self._supervisor.wait(timeout)
            except KeyboardInterrupt:
                self._stop(signal.SIGINT)
                logger.warning(
                    "spawn: interrupted; stopped the ranks: %s",
                    "; ".join(handle.describe(None) for handle in self._supervisor.ranks.values()),
                )
                raise
            except BaseException:
                self._stop()
                raise
        if event.kind == "timeout":
            return False
        if event.kind == "failed":
            self._stop()
            raise _rank_failed(event.value)
        self._release()
        return True

    def _stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop every live rank with ``signum`` (SIGKILL after the grace period); release."""
        self._supervisor.stop(signum)
        self._release()

    def _release(self) -> None:
        """The job is over: its ports may go to others, its failure records away."""
        if self._plan is not None:
            self._plan.release()
            self._plan = None


def _rank_failed(failure: Failure) -> RankFailedError:
    """The error that names the rank that failed first."""
    culprit = failure.culprit
    exitcode = culprit.returncode
    child_traceback = culprit.child_traceback
    who = f"spawn: rank {culprit.rank} (pid {culprit.pid})"
    if child_traceback is not None:
        message = f"{who} raised:\n\n{child_traceback}"
    elif exitcode is not None and exitcode < 0:
        message = (
            f"{who} was killed by signal {signal_name(-exitcode)} (out of memory and "
            "crashes in native code end this way)"
        )
    else:
        message = f"{who} exited with code {exitcode} without reporting an exception; look at its output above"
    message += "".join(f"\n{line}" for line in failure.others_described())
    message += "".join(f"\n{paragraph}" for paragraph in failure.stacks_described())
    message += "\nThe other ranks were stopped."
    return RankFailedError(message, culprit.rank, culprit.pid, exitcode, child_traceback)


class RankContext:
    """What ``spawn`` returns when this process already is a rank of a launched job.

    ``return_queues[0]`` holds the function's return value; ``join`` returns True at once.
    """

    def __init__(self, result: Any) -> None:
        self.processes: List[multiprocessing.process.BaseProcess] = []
        self.return_queues: List[queue.SimpleQueue] = [queue.SimpleQueue()]
        self.error_queues: List[queue.SimpleQueue] = [queue.SimpleQueue()]
        self.return_queues[0].put(result)

    def join(self, timeout: Optional[float] = None) -> bool:
        """The function already ran: nothing to wait for."""
        return True


def _launched_rank() -> Optional[Tuple[int, int]]:
    """(rank, world size) when a launcher or ``mpirun`` started this process as a rank."""
    if os.environ.get("PADDLE_TRAINER_ID") and os.environ.get("PADDLE_TRAINERS_NUM"):
        return int(os.environ["PADDLE_TRAINER_ID"]), int(os.environ["PADDLE_TRAINERS_NUM"])
    launch = mpi_launch()
    return None if launch is None else (launch.rank, launch.size)


def spawn(
    func: Callable, args: Sequence[Any] = (), nprocs: int = -1, join: bool = True, daemon: bool = False, **options: Any
) -> "MultiprocessContext | RankContext":
    """Start ``nprocs`` processes that each run ``func(*args)`` as one rank of a parallel job.

    Args:
        func: the function every rank runs; with the default ``spawn`` start method it must be
            importable, i.e. defined at the top level of a module.
        args: positional arguments for ``func``.
        nprocs: number of ranks; -1 means the number of visible GPUs under the nccl backend and
            the number of CPUs under gloo.
        join: wait for all ranks before returning (otherwise call ``join`` on the result).
        daemon: the processes' daemon flag (daemon processes cannot start processes of their
            own, e.g. DataLoader workers).
        **options: ``start_method`` ('spawn' (default), 'fork' or 'forkserver'); ``gpus``
            (cards such as "4,5", validated against CUDA_VISIBLE_DEVICES; nccl only); ``ips``
            (this machine's address used in the endpoints, default "127.0.0.1"); ``backend``
            ('auto' (default: nccl when gpus is given or a GPU is present, else gloo), 'gloo'
            or 'nccl'); ``print_config`` (print the job's configuration).

    Returns:
        A :class:`MultiprocessContext`; rank i's return value is in ``return_queues[i]``.
        Inside a job already started by ``python -m minidp.distributed.launch`` or ``mpirun``
        (``PADDLE_TRAINER_ID``/``PADDLE_TRAINERS_NUM`` or an MPI launcher's rank variables
        are set), ``func(*args)`` runs in this process as that rank, ``nprocs`` and the options
        other than the checks are ignored (the launcher decided), and a :class:`RankContext`
        holding its return value comes back: one script works both ways.

    Raises:
        ValueError/TypeError: for unknown or invalid options (deprecated Paddle options only
            warn with ``DeprecationWarning``).
        RankFailedError: (a ``RuntimeError``) when a rank fails; the others are stopped first.

    Each rank's environment carries the variables of :mod:`minidp.core.distributed.job`; the ports
    are free ports that this process keeps reserved until the job ends (a rank that listens on
    one must set ``SO_REUSEADDR``, as ``TCPStore`` does). On Linux the ranks die with the
    thread that called ``spawn``, so call it from the main thread (or one that outlives the
    job).

    Example::

        import minidp.distributed as dist

        def train(print_result=False):
            dist.init_parallel_env()
            ...

        if __name__ == "__main__":
            dist.spawn(train, args=(True,), nprocs=2)
    """
    if not callable(func):
        raise TypeError(f"spawn needs a callable func, got {func!r}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"spawn args must be a tuple or list, got {type(args).__name__}")
    options = _check_options(options)
    launched = _launched_rank()
    if launched is not None:
        rank, world_size = launched
        logger.warning(
            "spawn: this process already is rank %d of a job of %d started by a "
            "launcher; running %s here as that rank instead of starting %s more",
            rank,
            world_size,
            getattr(func, "__name__", "func"),
            "processes" if nprocs == -1 else nprocs,
        )
        return RankContext(func(*args))
    start_method = _start_method(options)
    plan = build_environments(nprocs, options)
    if options.get("print_config"):
        _print_config(start_method, plan.envs)

    context = multiprocessing.get_context(start_method)
    parent_pid = None if start_method == "forkserver" else os.getpid()
    result = MultiprocessContext(plan)
    try:
        for rank, env in enumerate(plan.envs):
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(
                target=_rank_main,
                name=f"minidp-rank-{rank}",
                args=(func, tuple(args), env, writer, parent_pid),
                daemon=daemon,
            )
            try:
                process.start()
            except BaseException:
                reader.close()
                raise
            finally:
                writer.close()
            result._add(process, reader)
            logger.debug("spawn: started rank %d as pid %d", rank, process.pid)
    except BaseException:
        result._stop()
        raise
    result._supervisor.watch()
    if join:
        result.join()
    else:
        atexit.register(_join_at_exit, weakref.ref(result))
    return result


def _join_at_exit(reference: "weakref.ref[MultiprocessContext]") -> None:
    """At interpreter exit, join a context the caller never joined.

    ``multiprocessing`` itself joins unfinished children at exit, but without reading their
    results: a rank blocked sending a large return value would then never end, nor would its
    parent. This runs first (``atexit`` is last-in, first-out) and joins while draining. An
    interrupt (Ctrl-C) during this wait stops the ranks.
    """
    context = reference()
    if context is None or not context.running:
        return
    try:
        context.join()
    except RankFailedError as error:
        print(f"at exit, while joining the ranks spawned with join=False: {error}", file=sys.stderr)
