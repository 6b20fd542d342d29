"""``spawn``: start N ranks of a training function on this machine and watch over them.

The parent decides everything a rank needs before any child starts: the backend, the GPU of
each rank, a free port for every rank's endpoint and one for the rendezvous store (which rank 0
hosts). Each child receives its environment (the variables ``ParallelEnv`` reads) and runs the
function; its return value or its traceback comes back through a pipe.

Where this improves on the Paddle original:

* the parent reads results while it waits, so a rank returning a large object cannot block
  forever on a full pipe -- also when ``join=False`` and the caller never joins: the
  interpreter's exit then joins while draining;
* the ports written into the ranks' environments stay reserved until the job ends, so that
  nothing else on the machine takes the store's port before rank 0 listens there;
* every child asks the kernel to kill it when its parent dies (Linux), so a parent killed by
  SIGTERM, SIGINT or SIGKILL never leaves ranks behind;
* when a rank fails, the others get SIGTERM, then SIGKILL after a short grace period, and the
  raised :class:`RankFailedError` names the failing rank and carries its traceback or the name of
  the signal that killed it.

The helpers :class:`PortReservation`, :func:`select_gpus`, :func:`job_secret_for_launch`,
:func:`rank_environment`, :func:`signal_name` and :func:`die_with_parent` are shared with
``python -m minidp.distributed.launch``.

Each job gets a fresh secret (``MINIDP_JOB_SECRET``, unless already set) that its ranks' store
and ring connections prove they know; see :mod:`minidp.distributed.auth`.
"""
from __future__ import annotations

import atexit
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import socket
import sys
import time
import traceback
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from minidp import backend as _backend
from minidp.distributed.auth import SECRET_ENV, new_job_secret

logger = logging.getLogger("minidp.distributed")

SUPPORTED_OPTIONS = ("start_method", "gpus", "ips", "backend", "print_config")
DEPRECATED_ALIASES = {"selected_devices": "gpus", "cluster_node_ips": "ips"}
DEPRECATED_IGNORED = ("started_port", "node_ip", "use_paddlecloud")
SPAWN_BACKENDS = ("auto", "gloo", "nccl")
STOP_GRACE_SECONDS = 3.0

_PR_SET_PDEATHSIG = 1
# Loaded at import, in the parent: a child between fork and exec must not call dlopen.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


class RankFailedError(RuntimeError):
    """A spawned rank raised, exited with a non-zero code or was killed by a signal.

    Attributes: ``rank``, ``pid``, ``exitcode`` (negative for a signal, as in
    ``multiprocessing``) and ``child_traceback`` (the rank's formatted traceback, or None).
    """

    def __init__(self, message: str, rank: int, pid: Optional[int], exitcode: Optional[int],
                 child_traceback: Optional[str]) -> None:
        super().__init__(message)
        self.rank = rank
        self.pid = pid
        self.exitcode = exitcode
        self.child_traceback = child_traceback


# ----------------------------------------------------------------------------------------------
# Helpers shared with the launcher
# ----------------------------------------------------------------------------------------------

class PortReservation:
    """``count`` distinct free TCP ports on ``host``, held until :meth:`release`.

    Each port stays bound (not listening) by a socket with ``SO_REUSEADDR``, so that no other
    process -- another job's launcher, a rank's ephemeral connection, a listener on port 0 --
    can take it between the moment it is chosen and the moment the rank that owns it listens
    there: the rank binds it with ``SO_REUSEADDR`` too (as ``socket.create_server`` and the
    ``TCPStore`` do), which Linux allows while the reserving socket does not listen. Release
    the reservation when the job ends.
    """

    def __init__(self, host: str, count: int) -> None:
        self.host = host
        self._sockets: List[socket.socket] = []
        try:
            for _ in range(count):
                sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
                self._sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((host, 0))
                except OSError as error:
                    raise ValueError(
                        f"cannot bind a port on {host!r} ({error}); give an address of this "
                        "machine"
                    ) from error
        except BaseException:
            self.release()
            raise
        self.ports: List[int] = [sock.getsockname()[1] for sock in self._sockets]

    def release(self) -> None:
        """Let the ports go (safe to call more than once)."""
        for sock in self._sockets:
            sock.close()
        self._sockets = []

    def __enter__(self) -> "PortReservation":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


def visible_gpus() -> List[str]:
    """The GPU card ids this process may use: ``CUDA_VISIBLE_DEVICES``, else every device."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if listed:
        return [card.strip() for card in listed.split(",")]
    return [str(index) for index in range(_backend.cuda_device_count())]


def select_gpus(nprocs: int, gpus: Union[None, str, Sequence[Union[int, str]]]) -> List[int]:
    """The device index each of ``nprocs`` local ranks uses, validated against visible cards.

    ``gpus`` names cards as ``CUDA_VISIBLE_DEVICES`` does ("4,5"); the returned indices count
    from the first visible card, which is how CUDA (and ``FLAGS_selected_gpus``) numbers them.
    Without ``gpus``, rank i takes the i-th visible card.
    """
    visible = visible_gpus()
    if gpus is None:
        if len(visible) < nprocs:
            raise RuntimeError(
                f"{nprocs} processes were asked for but only {len(visible)} GPU(s) are visible; "
                "pass a smaller nprocs or make more cards visible through CUDA_VISIBLE_DEVICES"
            )
        return list(range(nprocs))
    if isinstance(gpus, str):
        cards = [card.strip() for card in gpus.split(",") if card.strip()]
    elif isinstance(gpus, (list, tuple)):
        cards = [str(card).strip() for card in gpus]
    else:
        raise TypeError(f"gpus must be a string such as '0,1' or a list of ids, got {gpus!r}")
    if len(cards) != nprocs:
        raise ValueError(
            f"gpus selects {len(cards)} card(s) but {nprocs} processes were asked for; "
            "pass one card per process (make nprocs and gpus agree)"
        )
    for card in cards:
        if card not in visible:
            if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
                seen = f"CUDA_VISIBLE_DEVICES={','.join(visible)}"
            else:
                seen = f"all cards: {','.join(visible)}" if visible else "no GPU is visible"
            raise ValueError(
                f"GPU card {card} is not among the visible cards ({seen}); choose cards from "
                "those, or change CUDA_VISIBLE_DEVICES"
            )
    return [visible.index(card) for card in cards]


def job_secret_for_launch(nodes: int = 1) -> str:
    """The secret of a job about to start: ``MINIDP_JOB_SECRET`` if set, else a fresh one.

    Several nodes must share one, which no launcher can hand the others safely, so a job over
    several nodes needs it set (to the same value) on every node.
    """
    secret = os.environ.get(SECRET_ENV, "")
    if secret:
        return secret
    if nodes > 1:
        raise ValueError(
            f"a job over {nodes} nodes needs the same {SECRET_ENV} on every node: set it to a "
            "random value (e.g. python -c 'import secrets; print(secrets.token_hex(32))') "
            "before starting each node's launcher")
    return new_job_secret()


def rank_environment(rank: int, endpoints: Sequence[str], master: str, backend: str,
                     device: Optional[int], secret: str) -> Dict[str, str]:
    """The environment variables that tell one rank who it is (read by ``ParallelEnv``).

    ``endpoints`` lists every rank's ``host:port`` in rank order; ``master`` is the
    ``host:port`` of the rendezvous store that rank 0 hosts; ``device`` is the GPU index for the
    nccl backend (None on CPU); ``secret`` is the job secret every connection proves.
    """
    master_host, _, master_port = master.rpartition(":")
    env = {
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_TRAINERS_NUM": str(len(endpoints)),
        "PADDLE_CURRENT_ENDPOINT": endpoints[rank],
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
        "PADDLE_MASTER": master,
        "MASTER_ADDR": master_host,
        "MASTER_PORT": master_port,
        "PADDLE_DISTRI_BACKEND": backend,
        SECRET_ENV: secret,
    }
    if device is not None:
        env["FLAGS_selected_gpus"] = str(device)
    return env


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15; ``40`` for a number with no name (real-time signals)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def die_with_parent(parent_pid: Optional[int]) -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux only).

    ``parent_pid`` is the pid the caller expects as parent: if the parent already died before
    the request was made, this process exits at once. Pass None when the real parent is an
    intermediary (the ``forkserver``), which itself exits with the parent. Elsewhere than Linux
    this does nothing.
    """
    if _LIBC is None or _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


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
                f"spawn option {key!r} is deprecated; use {replacement!r} instead",
                DeprecationWarning, stacklevel=3)
            effective.setdefault(replacement, value)
        elif key in DEPRECATED_IGNORED:
            warnings.warn(
                f"spawn option {key!r} is deprecated and has no effect in minidp; the options "
                f"in use are {', '.join(SUPPORTED_OPTIONS)}", DeprecationWarning, stacklevel=3)
        else:
            raise ValueError(
                f"spawn does not support the option {key!r}; supported options are "
                f"{', '.join(SUPPORTED_OPTIONS)}"
            )
    return effective


def default_backend(gpus_requested: bool) -> str:
    """What backend 'auto' means: nccl when GPUs are asked for, the current place is a GPU or
    CuPy sees one (as ``init_parallel_env`` decides), else gloo."""
    on_gpu = _backend.get_device().startswith("gpu") or _backend.is_compiled_with_cuda()
    return "nccl" if gpus_requested or on_gpu else "gloo"


def _resolve_backend(options: Dict[str, Any]) -> str:
    """The backend the ranks will use, from the ``backend`` and ``gpus`` options."""
    name = options.get("backend", "auto")
    if name == "mpi":
        raise ValueError(
            "spawn cannot start the 'mpi' backend: MPI ranks must be started by an MPI launcher; "
            "run `mpirun -n N python your_script.py` instead"
        )
    if name not in SPAWN_BACKENDS:
        raise ValueError(f"spawn backend must be one of {SPAWN_BACKENDS}, got {name!r}")
    if name == "auto":
        name = default_backend(options.get("gpus") is not None)
    if name == "gloo" and options.get("gpus") is not None:
        raise ValueError("the gpus option selects cards for the 'nccl' backend; drop it for gloo")
    return name


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
    method = options.get("start_method") or "spawn"
    allowed = multiprocessing.get_all_start_methods()
    if method not in allowed:
        raise ValueError(f"start_method must be one of {allowed}, got {method!r}")
    return method


def build_environments(nprocs: int, options: Dict[str, Any]
                       ) -> Tuple[str, List[Dict[str, str]], PortReservation]:
    """Validate the options; return the backend, one environment per rank and the reservation
    of the ports those environments name (release it when the job ends)."""
    backend = _resolve_backend(options)
    nprocs = _resolve_nprocs(nprocs, backend)
    host = _node_ip(options)
    devices: List[Optional[int]] = [None] * nprocs
    if backend == "nccl":
        devices = list(select_gpus(nprocs, options.get("gpus")))
    reservation = PortReservation(host, nprocs + 1)
    ports = reservation.ports
    endpoints = [f"{host}:{port}" for port in ports[:nprocs]]
    master = f"{host}:{ports[nprocs]}"
    secret = job_secret_for_launch()
    envs = [rank_environment(rank, endpoints, master, backend, devices[rank], secret)
            for rank in range(nprocs)]
    return backend, envs, reservation


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

def _rank_main(func: Callable, args: Sequence[Any], env: Dict[str, str],
               channel: multiprocessing.connection.Connection,
               parent_pid: Optional[int]) -> None:
    """Body of each spawned process: set the rank's environment, run ``func``, report back.

    Exactly one message goes back through ``channel``: ``("ok", result)`` or
    ``("error", formatted_traceback, unix_time)``.
    """
    die_with_parent(parent_pid)
    os.environ.update(env)
    try:
        result = func(*args)
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
    except Exception:
        channel.send(("error", traceback.format_exc(), time.time()))
        sys.exit(1)
    try:
        channel.send(("ok", result))
    except Exception:
        channel.send(("error", "the return value of the spawned function could not be sent "
                               "to the parent:\n" + traceback.format_exc(), time.time()))
        sys.exit(1)


# ----------------------------------------------------------------------------------------------
# The parent side
# ----------------------------------------------------------------------------------------------

class MultiprocessContext:
    """The spawned ranks: ``processes``, ``return_queues``, ``error_queues`` and ``join``.

    ``return_queues[i]`` receives rank i's return value and ``error_queues[i]`` its formatted
    traceback; both are filled by :meth:`join` as the results arrive (so read them after
    ``join`` returns True, with ``get()``).
    """

    def __init__(self, processes: List[multiprocessing.process.BaseProcess],
                 channels: List[multiprocessing.connection.Connection],
                 ports: Optional[PortReservation] = None) -> None:
        self.processes: List[multiprocessing.process.BaseProcess] = []
        self._ports = ports
        self.return_queues: List[queue.SimpleQueue] = []
        self.error_queues: List[queue.SimpleQueue] = []
        self._channels: Dict[int, multiprocessing.connection.Connection] = {}
        self._running: Dict[int, int] = {}
        self._errors: Dict[int, Tuple[str, float]] = {}
        for process, channel in zip(processes, channels):
            self._add(process, channel)

    def _add(self, process: multiprocessing.process.BaseProcess,
             channel: multiprocessing.connection.Connection) -> None:
        """Watch one more started rank, whose single message will arrive on ``channel``."""
        rank = len(self.processes)
        self.processes.append(process)
        self.return_queues.append(queue.SimpleQueue())
        self.error_queues.append(queue.SimpleQueue())
        self._channels[rank] = channel
        self._running[process.sentinel] = rank

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait for the ranks; True once all exited cleanly, False if ``timeout`` ran out first.

        Results are collected while waiting. When a rank fails, the others are stopped and
        :class:`RankFailedError` is raised. An interrupt of the wait also stops every rank.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            finished = self._wait(deadline)
        except BaseException:
            self._stop_all()
            raise
        if finished:
            self._release_ports()
        return finished

    def _release_ports(self) -> None:
        """The job is over: the ports its environments named may go to others."""
        if self._ports is not None:
            self._ports.release()
            self._ports = None

    def _wait(self, deadline: Optional[float]) -> bool:
        while self._running:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            waitables = list(self._running) + list(self._channels.values())
            ready = multiprocessing.connection.wait(waitables, remaining)
            if not ready:
                return False
            failed = []
            for item in ready:
                if item in self._running:
                    rank = self._running.pop(item)
                    self._collect(rank)
                    self.processes[rank].join()
                    if self.processes[rank].exitcode != 0:
                        failed.append(rank)
                else:
                    self._collect_from(item)
            if failed:
                self._collect_waiting_errors()
                self._stop_all()
                raise self._failure(failed)
        return True

    def _collect_from(self, channel: multiprocessing.connection.Connection) -> None:
        """Collect from a ready channel, unless an exit seen in the same wait closed it."""
        for rank, open_channel in list(self._channels.items()):
            if open_channel is channel:
                self._collect(rank)

    def _collect(self, rank: int) -> None:
        """Receive rank's single message if it is there, then close its channel."""
        channel = self._channels.get(rank)
        if channel is None:
            return
        try:
            if not channel.poll():
                if self.processes[rank].is_alive():
                    return
                message = None
            else:
                message = channel.recv()
        except (EOFError, OSError):
            message = None
        del self._channels[rank]
        channel.close()
        if message is None:
            return
        if message[0] == "ok":
            self.return_queues[rank].put(message[1])
        else:
            self.error_queues[rank].put(message[1])
            self._errors[rank] = (message[1], message[2])

    def _collect_waiting_errors(self) -> None:
        """Read every message already sent, so that all reported tracebacks are known."""
        for rank, channel in list(self._channels.items()):
            if channel.poll():
                self._collect(rank)

    def _failure(self, exited: List[int]) -> RankFailedError:
        """The error for the rank that failed first.

        Ranks that exited non-zero (``exited``) and ranks that reported a traceback are
        candidates; those with a traceback are ordered by when they raised, so a rank that
        merely lost its connection to the culprit is not blamed.
        """
        candidates = sorted(set(exited) | set(self._errors),
                            key=lambda rank: (self._errors.get(rank, ("", float("inf")))[1], rank))
        rank = candidates[0]
        process = self.processes[rank]
        exitcode = process.exitcode
        child_traceback = self._errors.get(rank, (None, 0.0))[0]
        if child_traceback is not None:
            message = f"spawn: rank {rank} (pid {process.pid}) raised:\n\n{child_traceback}"
        elif exitcode is not None and exitcode < 0:
            message = (f"spawn: rank {rank} (pid {process.pid}) was killed by signal "
                       f"{signal_name(-exitcode)} (out of memory and crashes in native code "
                       "end this way)")
        else:
            message = (f"spawn: rank {rank} (pid {process.pid}) exited with code {exitcode} "
                       "without reporting an exception; look at its output above")
        if len(candidates) > 1:
            message += f"\nRanks {', '.join(map(str, candidates[1:]))} failed too."
        message += "\nThe other ranks were stopped."
        return RankFailedError(message, rank, process.pid, exitcode, child_traceback)

    def _stop_all(self) -> None:
        """SIGTERM every live rank, SIGKILL those still alive after the grace period.

        Ranks that already reported an exception are exiting by themselves: they get the
        grace period to do so, so that their exit code stays their own.
        """
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for rank in self._errors:
            self.processes[rank].join(max(0.0, deadline - time.monotonic()))
        alive = [proc for proc in self.processes if proc.is_alive()]
        for proc in alive:
            proc.terminate()
        for proc in alive:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in alive:
            if proc.is_alive():
                proc.kill()
                proc.join(STOP_GRACE_SECONDS)
        self._running.clear()
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self._release_ports()


def spawn(func: Callable, args: Sequence[Any] = (), nprocs: int = -1, join: bool = True,
          daemon: bool = False, **options: Any) -> MultiprocessContext:
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

    Raises:
        ValueError/TypeError: for unknown or invalid options (deprecated Paddle options only
            warn with ``DeprecationWarning``).
        RankFailedError: (a ``RuntimeError``) when a rank fails; the others are stopped first.

    Each rank's environment carries PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
    PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ENDPOINTS, PADDLE_MASTER (plus MASTER_ADDR and
    MASTER_PORT), PADDLE_DISTRI_BACKEND and, under nccl, FLAGS_selected_gpus; the ports are
    free ports that this process keeps reserved until the job ends (a rank that listens on
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
    start_method = _start_method(options)
    _, envs, ports = build_environments(nprocs, options)
    if options.get("print_config"):
        _print_config(start_method, envs)

    context = multiprocessing.get_context(start_method)
    parent_pid = None if start_method == "forkserver" else os.getpid()
    result = MultiprocessContext([], [], ports)
    try:
        for rank, env in enumerate(envs):
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_rank_main, name=f"minidp-rank-{rank}",
                                      args=(func, tuple(args), env, writer, parent_pid),
                                      daemon=daemon)
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
        result._stop_all()
        raise
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
    if context is None or not context._running:
        return
    try:
        context.join()
    except RankFailedError as error:
        print(f"at exit, while joining the ranks spawned with join=False: {error}",
              file=sys.stderr)
