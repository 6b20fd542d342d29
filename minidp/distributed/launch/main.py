"""``python -m minidp.distributed.launch``: start this node's ranks of a job and watch over them.

Usage::

    python -m minidp.distributed.launch [options] train.py [train.py's arguments]
    python -m minidp.distributed.launch [options] -m package.module [its arguments]

Every rank runs ``python -u train.py ...`` (``-m``: ``python -u -m package.module ...``) with
the environment of the job plan (:mod:`minidp.distributed.job`): Paddle's variables that
``ParallelEnv`` reads, torchrun's ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``/``LOCAL_WORLD_SIZE``,
the job secret and the directory of failure records. Rank 0 hosts the rendezvous store on a free
port of node 0. With several ranks per node, ``OMP_NUM_THREADS`` is 1 unless it is set.

With several nodes, ``--master HOST:PORT`` names where node 0's launcher meets the others: it
hosts a small store there through which the launchers swap their ranks' endpoints and learn the
store address of rank 0 (``--master`` is therefore not the ranks' own store). The launchers stay
connected through it while the job runs: when a node's rank fails or its launcher is signalled,
every other node stops its ranks too and exits with code 1 (see :class:`NodeLink`). While a
launcher waits for the others it says so every ``WAIT_LOG_SECONDS``.

Output: without ``--log_dir`` every rank's lines reach this terminal prefixed with
``[rank N]``; with it, rank N writes ``LOG_DIR/JOB_ID.workerlog.N`` and only this node's first
rank is also echoed (prefixed) to the terminal. When the launcher's own output is a terminal, it
tells the ranks so (``MINIDP_LAUNCHER_TTY=1``) and shows rank 0's carriage-return updates
(progress bars) as they come, on a line of their own that other output never cuts. SIGINT and
SIGTERM are forwarded to every rank. The ranks are watched by the supervisor ``spawn`` uses too
(:mod:`minidp.distributed.supervisor`): when a rank fails, the others are stopped, the last
lines of the rank that failed first (told by the failure records the ranks write, not by their
output) are printed, and the launcher exits with that rank's exit code (128 + the signal number
for a rank killed by a signal).
"""
from __future__ import annotations

import argparse
import codecs
import collections
import functools
import logging
import os
import queue
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, Deque, List, Optional, Sequence, Tuple, TypeVar

from minidp.distributed.job import (
    PLANNED_BACKENDS,
    JobPlan,
    PortReservation,
    job_secret_for_launch,
    plan_local_job,
    plan_node,
    resolve_backend,
    select_gpus,
    visible_gpus,
)
from minidp.distributed.store import TCPStore
from minidp.distributed.supervisor import (
    Failure,
    RankHandle,
    Supervisor,
    die_with_parent,
    signal_name,
)

logger = logging.getLogger("minidp.distributed.launch")

TAIL_LINES = 30
RENDEZVOUS_TIMEOUT_SECONDS = 300.0
WAIT_LOG_SECONDS = 10.0
OUTPUT_DRAIN_SECONDS = 2.0
FILES_PER_RANK = 4
"""Open files the launcher and the busiest rank need per rank of the node (the output pipe, the
reserved port, the log file, a store or ring connection), beyond ``FILES_BASE``."""
FILES_BASE = 64
TTY_ENV = "MINIDP_LAUNCHER_TTY"
RANK_RUNNER = "minidp.distributed.launch.run_rank"
CLEAR_LINE = "\r\x1b[K"

ENVIRONMENT_HELP = """\
environment of every rank:
  RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE   torchrun's names of the rank's place
  PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM            Paddle's names of RANK and WORLD_SIZE
  PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ENDPOINTS this rank's and every rank's host:port
  PADDLE_MASTER, MASTER_ADDR, MASTER_PORT           the rendezvous store (hosted by rank 0)
  PADDLE_DISTRI_BACKEND                             gloo or nccl
  FLAGS_selected_gpus                               the rank's GPU (nccl only)
  MINIDP_JOB_SECRET                                 the job's secret (see below)
  MINIDP_FAILURE_DIR                                where a failing rank leaves its record
  MINIDP_LAUNCHER_TTY                               1 when the launcher writes to a terminal
  OMP_NUM_THREADS                                   1 with several ranks per node, unless set

read by the launcher:
  MINIDP_JOB_SECRET      the job's secret; a fresh one per job unless set (needed, the same on
                         every node, with --nnodes > 1)
  OMP_NUM_THREADS        passed on as set instead of the default 1
  CUDA_VISIBLE_DEVICES   the cards --devices chooses from
"""

_T = TypeVar("_T")


class LaunchError(ValueError):
    """The command line asks for something that cannot be launched."""


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The launcher's argument parser (Paddle's option names, torchrun's ``-m``)."""
    parser = argparse.ArgumentParser(
        prog="python -m minidp.distributed.launch", allow_abbrev=False,
        description="Start the ranks of a minidp data-parallel job on this node.",
        epilog=ENVIRONMENT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc_per_node", type=int, default=None,
                        help="ranks on this node (default: the number of --devices, else of "
                             "visible GPUs under nccl, else 1)")
    parser.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument("--node_rank", type=int, default=0, help="index of this node (default 0)")
    parser.add_argument("--master", default=None, metavar="HOST:PORT",
                        help="where the nodes' launchers meet; node 0 listens there (needed "
                             "when --nnodes > 1)")
    parser.add_argument("--host", default=None,
                        help="address of this node that the other ranks can reach (default: "
                             "the address used to reach --master, else 127.0.0.1)")
    parser.add_argument("--devices", "--gpus", dest="devices", default=None,
                        help="GPU cards for this node's ranks, e.g. '0,1' (nccl only)")
    parser.add_argument("--backend", default="auto", choices=PLANNED_BACKENDS,
                        help="communication backend (default auto: nccl when GPUs are visible "
                             "or --devices is given, else gloo)")
    parser.add_argument("--log_dir", default=None,
                        help="write each rank's output to LOG_DIR/JOB_ID.workerlog.RANK")
    parser.add_argument("--job_id", default="default",
                        help="name of the job: prefixes log files and rendezvous keys")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run training_script as a module, as python -m does")
    parser.add_argument("training_script",
                        help="the Python script every rank runs (with -m: the module)")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER,
                        help="arguments passed on to the script")
    return parser


def _parse_master(master: str) -> Tuple[str, int]:
    """``--master`` as (host, port), failing at once when the host name does not resolve."""
    host, _, port = master.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError(f"--master must look like HOST:PORT, got {master!r}")
    host = host.strip("[]")
    try:
        socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise LaunchError(f"--master host {host!r} does not resolve ({error.strerror}); check "
                          "the name or give node 0's IP address") from None
    return host, int(port)


def _check_open_files(nproc: int) -> None:
    """Refuse a node whose ranks would run out of file descriptors part-way through."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FILES_BASE + FILES_PER_RANK * nproc
    if soft != resource.RLIM_INFINITY and needed > soft:
        raise LaunchError(
            f"--nproc_per_node {nproc} needs about {needed} open files but the limit is {soft} "
            f"(ulimit -n); start fewer ranks per node or raise the limit (ulimit -n {needed})")


@dataclass
class LaunchPlan:
    """What this node starts: the job plan, the command each rank runs and, with several
    nodes, the link to the other launchers (both live as long as the job)."""

    job: JobPlan
    command: List[str]
    link: Optional["NodeLink"] = None
    node_rank: int = 0

    @property
    def backend(self) -> str:
        """The ranks' communication backend."""
        return self.job.backend

    @property
    def envs(self) -> List[dict]:
        """One environment per local rank."""
        return self.job.envs

    def release(self, succeeded: bool = False) -> None:
        """The job is over: leave the other launchers, free the ports, drop the records."""
        if self.link is not None:
            self.link.close(succeeded)
            self.link = None
        self.job.release()


def _resolve_nproc(args: argparse.Namespace, backend: str) -> int:
    if args.nproc_per_node is not None:
        nproc = args.nproc_per_node
    elif args.devices:
        nproc = len([card for card in args.devices.split(",") if card.strip()])
    elif backend == "nccl":
        nproc = len(visible_gpus()) or 1
    else:
        nproc = 1
    if nproc < 1:
        raise LaunchError(f"--nproc_per_node must be at least 1, got {nproc}")
    _check_open_files(nproc)
    return nproc


def while_logging(what: str, action: Callable[[], _T], timeout: float) -> _T:
    """Run ``action`` (a blocking wait of at most ``timeout`` s); say every ``WAIT_LOG_SECONDS``
    that this launcher is still waiting for ``what``."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True, name="minidp-launch-rendezvous")
    started = time.monotonic()
    thread.start()
    while True:
        thread.join(WAIT_LOG_SECONDS)
        if not thread.is_alive():
            break
        logger.info("still waiting for %s (%.0f s so far, giving up after %.0f s)", what,
                    time.monotonic() - started, timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class NodeLink:
    """The launchers of a several-node job, connected for the job's lifetime.

    Node 0's launcher hosts a small store at ``--master``; every launcher keeps a client. A
    launcher whose ranks fail (or which receives SIGINT/SIGTERM) writes ``failed`` there; a
    watcher thread in every other launcher polls for it and has that launcher stop its ranks, so
    a failure anywhere ends the job everywhere within about ``POLL_SECONDS`` -- ranks waiting to
    reach a peer that will never come would otherwise wait out their whole timeout. A launcher
    that loses its connection to node 0's launcher before that one reported ``finished`` stops
    its ranks too. Node 0 keeps the store up until every other launcher has left (at most
    ``LEAVE_SECONDS``).
    """

    POLL_SECONDS = 0.5
    LEAVE_SECONDS = 10.0
    REQUEST_SECONDS = 30.0

    def __init__(self, store: TCPStore, prefix: str, node_rank: int, nnodes: int) -> None:
        self.store = store
        store.timeout = self.REQUEST_SECONDS  # an unresponsive node 0 is noticed within this
        self.node_rank = node_rank
        self._prefix = prefix
        self._nnodes = nnodes
        self._failed_key = f"{prefix}/failed"
        self._finished_key = f"{prefix}/finished"
        self._stop = threading.Event()
        self._left = False
        self._thread: Optional[threading.Thread] = None

    def _left_key(self, node: int) -> str:
        return f"{self._prefix}/left/{node}"

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        """Start the watcher, which puts ("remote", message) or ("lost", message) in ``events``."""
        self._thread = threading.Thread(target=self._watch, args=(events,), daemon=True,
                                        name="minidp-launch-node-link")
        self._thread.start()

    def _watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        while not self._stop.wait(self.POLL_SECONDS):
            try:
                if self.store.check([self._failed_key]):
                    message = self.store.get(self._failed_key, timeout=self.POLL_SECONDS)
                    self._leave()
                    events.put(("remote", message.decode("utf-8", "replace")))
                    return
                if self.node_rank != 0 and self.store.check([self._finished_key]):
                    self._leave()  # node 0 is done; nothing more can come from there
                    return
            except RuntimeError as error:
                if not self._stop.is_set():
                    events.put(("lost", f"lost contact with node 0's launcher ({error})"))
                return

    def report_failure(self, message: str) -> None:
        """Tell the other launchers to stop their ranks (best effort)."""
        try:
            if not self.store.check([self._failed_key]):
                self.store.set(self._failed_key, message)
        except RuntimeError as error:
            logger.warning("could not tell the other nodes that this one failed: %s", error)

    def _leave(self) -> None:
        if self.node_rank != 0 and not self._left:
            self._left = True
            try:
                self.store.set(self._left_key(self.node_rank), b"1")
            except RuntimeError:
                pass  # node 0 already went away

    def close(self, succeeded: bool) -> None:
        """Stop watching; node 0 announces the end and waits (bounded) for the others to leave."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.POLL_SECONDS + 5.0)
        try:
            if self.node_rank == 0:
                if succeeded:
                    self.store.set(self._finished_key, b"1")
                others = [self._left_key(node) for node in range(1, self._nnodes)]
                self.store.wait(others, timeout=self.LEAVE_SECONDS)
            else:
                self._leave()
        except RuntimeError as error:
            logger.info("not every node left in time: %s", error)
        finally:
            self.store.close()


def _rendezvous(args: argparse.Namespace, master: Tuple[str, int], nproc: int,
                secret: str) -> Tuple[List[str], str, int, PortReservation, NodeLink]:
    """Meet the other nodes' launchers at ``--master``: every rank's endpoint, the ranks' store
    address, this node's first global rank, the reservation of this node's ports and the link
    between the launchers.

    Each node publishes its ranks' endpoints, node 0 also the store address that its rank 0
    will host, then all read all. The ports this node hands out stay reserved until the job
    ends, so that nothing takes them before the ranks listen there and two launchers on one
    host never hand out the same one.
    """
    master_host, master_port = master
    is_node0 = args.node_rank == 0
    where = f"{master_host}:{master_port}"
    logger.info("meeting the other nodes' launchers at %s", where)
    store = while_logging(
        f"node 0's launcher at {where}",
        lambda: TCPStore(master_host, master_port, is_master=is_node0,
                         timeout=RENDEZVOUS_TIMEOUT_SECONDS, secret=secret.encode("utf-8")),
        RENDEZVOUS_TIMEOUT_SECONDS)
    ports = None
    try:
        host = args.host or store.local_address
        ports = PortReservation(host, nproc + int(is_node0))
        prefix = f"minidp-launch/{args.job_id}"
        store.set(f"{prefix}/node/{args.node_rank}",
                  ",".join(f"{host}:{p}" for p in ports.ports[:nproc]))
        if is_node0:
            store.set(f"{prefix}/store", f"{host}:{ports.ports[nproc]}")
        node_keys = [f"{prefix}/node/{node}" for node in range(args.nnodes)]
        while_logging(f"the launchers of all {args.nnodes} nodes to meet at {where}",
                      lambda: store.wait(node_keys), RENDEZVOUS_TIMEOUT_SECONDS)
        per_node = [store.get(key).decode().split(",") for key in node_keys]
        rank_store = store.get(f"{prefix}/store").decode()
    except BaseException:
        store.close()
        if ports is not None:
            ports.release()
        raise
    first_rank = sum(len(endpoints) for endpoints in per_node[:args.node_rank])
    endpoints = [endpoint for endpoints in per_node for endpoint in endpoints]
    return (endpoints, rank_store, first_rank, ports,
            NodeLink(store, prefix, args.node_rank, args.nnodes))


def make_plan(args: argparse.Namespace) -> LaunchPlan:
    """Validate the command line and decide every local rank's environment.

    With ``--master`` this meets the other nodes' launchers; the plan then holds the link to
    them and the reservation of this node's ports: pass it to :func:`supervise` (or call
    :meth:`LaunchPlan.release`).
    """
    if args.nnodes < 1:
        raise LaunchError(f"--nnodes must be at least 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        raise LaunchError(f"--node_rank must be in 0..{args.nnodes - 1}, got {args.node_rank}")
    if args.nnodes > 1 and args.master is None:
        raise LaunchError("--nnodes > 1 needs --master HOST:PORT (an address of node 0)")
    master = None if args.master is None else _parse_master(args.master)
    if not args.module and not os.path.isfile(args.training_script):
        raise LaunchError(f"training script {args.training_script!r} not found")
    backend = resolve_backend(args.backend, bool(args.devices))
    nproc = _resolve_nproc(args, backend)
    devices: Optional[List[int]] = None
    if backend == "nccl":
        devices = select_gpus(nproc, args.devices)
    secret = job_secret_for_launch(args.nnodes)
    link = None
    if master is None:
        job = plan_local_job(nproc, backend, devices, args.host or "127.0.0.1", secret)
    else:
        endpoints, rank_store, first_rank, ports, link = _rendezvous(args, master, nproc, secret)
        job = plan_node(backend, devices or [None] * nproc, endpoints, rank_store, first_rank,
                        secret, ports)
    _add_node_settings(job, nproc)
    runner = [sys.executable, "-u", "-m", RANK_RUNNER, *(["-m"] if args.module else [])]
    command = [*runner, args.training_script, *args.training_script_args]
    return LaunchPlan(job, command, link, args.node_rank)


def _add_node_settings(job: JobPlan, nproc: int) -> None:
    """``OMP_NUM_THREADS=1`` for several ranks per node (said once); the terminal hint."""
    settings = {}
    if nproc > 1 and not os.environ.get("OMP_NUM_THREADS"):
        settings["OMP_NUM_THREADS"] = "1"
        logger.info("setting OMP_NUM_THREADS=1 for each of the %d ranks of this node, which "
                    "share its cores; set OMP_NUM_THREADS to choose another value", nproc)
    if sys.stdout.isatty():
        settings[TTY_ENV] = "1"
        prefix = len("[rank 0] ")
        settings["COLUMNS"] = str(max(20, shutil.get_terminal_size().columns - prefix))
    for env in job.envs:
        env.update(settings)


# ----------------------------------------------------------------------------------------------
# Running the ranks
# ----------------------------------------------------------------------------------------------

class Terminal:
    """This launcher's standard output, shared by the ranks' output threads.

    Lines are written whole. One rank may also show a progress line (its latest text after a
    carriage return): it stays at the bottom, other lines are written above it.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._progress = ""

    def write_line(self, line: str, ends_progress: bool = False) -> None:
        """Write one whole line; ``ends_progress`` when it comes from the progress's rank."""
        with self._lock:
            if self._progress:
                self._stream.write(CLEAR_LINE)
            if ends_progress:
                self._progress = ""
            self._stream.write(line)
            self._stream.write(self._progress)
            self._stream.flush()

    def show_progress(self, text: str) -> None:
        """Replace the progress line by ``text`` ("" removes it)."""
        with self._lock:
            if text or self._progress:
                self._stream.write(CLEAR_LINE + text)
                self._stream.flush()
            self._progress = text


def _last_segment(text: str) -> str:
    """What a terminal would show of ``text``: the last non-blank part after a carriage return."""
    return next((part for part in reversed(text.split("\r")) if part.strip()), "")


class LaunchedRank(RankHandle):
    """One local rank: its process, where its output goes and its last lines of output.

    ``terminal`` is None for a rank that is not echoed; with ``progress``, the rank's
    carriage-return updates are shown on the terminal as they come and logged only as the
    final text of each line.
    """

    def __init__(self, env: dict, command: List[str], log_path: Optional[str],
                 terminal: Optional[Terminal], progress: bool) -> None:
        self.log_path = log_path
        self.tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._log_file = open(log_path, "w", encoding="utf-8") if log_path else None
        self._terminal = terminal
        self._progress = progress and terminal is not None
        self._threads: List[threading.Thread] = []
        self.process = subprocess.Popen(
            command, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()))
        super().__init__(int(env["PADDLE_TRAINER_ID"]), self.process.pid)

    @property
    def returncode(self) -> Optional[int]:
        return self.process.poll()

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        self._threads = [
            threading.Thread(target=self._copy_output, daemon=True,
                             name=f"minidp-launch-output-{self.rank}"),
            threading.Thread(target=self._wait_exit, args=(events,), daemon=True,
                             name=f"minidp-launch-wait-{self.rank}"),
        ]
        for thread in self._threads:
            thread.start()

    def _copy_output(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        shown = ""
        try:
            while True:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                pending += decoder.decode(chunk, final=not chunk)
                *lines, pending = pending.split("\n")
                for line in lines:
                    self._emit(line)
                if not chunk:
                    break
                if self._progress and _last_segment(pending) != shown:
                    shown = _last_segment(pending)
                    self._terminal.show_progress(f"[rank {self.rank}] {shown}" if shown else "")
            if pending:
                self._emit(pending)
        finally:
            self.process.stdout.close()
            if self._log_file is not None:
                self._log_file.close()

    def _emit(self, line: str) -> None:
        if self._progress:
            line = _last_segment(line)
        line += "\n"
        self.tail.append(line)
        if self._log_file is not None:
            self._log_file.write(line)
            self._log_file.flush()
        if self._terminal is not None:
            self._terminal.write_line(f"[rank {self.rank}] {line}", ends_progress=self._progress)

    def _wait_exit(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        self.process.wait()
        events.put(("exit", self.rank))

    def _deliver(self, signum: int) -> None:
        os.killpg(self.process.pid, signum)

    def wait(self, timeout: float) -> bool:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def finish_output(self) -> None:
        """Wait briefly for the last lines (a leftover grandchild may hold the pipe open)."""
        for thread in self._threads:
            thread.join(OUTPUT_DRAIN_SECONDS)


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _report_failure(failure: Failure) -> None:
    culprit = failure.culprit
    culprit.finish_output()
    where = f" (full log: {culprit.log_path})" if culprit.log_path else ""
    lines = "".join(f"    {line}" for line in culprit.tail) or "    (no output)\n"
    logger.error("last lines of rank %d%s:\n%s", culprit.rank, where, lines.rstrip("\n"))
    if failure.others:
        logger.error("rank(s) %s failed after it, most likely because they lost their "
                     "connections to it", ", ".join(str(other.rank) for other in failure.others))


def supervise(plan: LaunchPlan, log_dir: Optional[str], job_id: str) -> int:
    """Run the plan's ranks to the end; return the launcher's exit code.

    0 when every rank of this node succeeded; the exit code of the rank that failed first
    (128 + N for a rank killed by signal N); 128 + N when the launcher received signal N; 1 when
    another node failed or node 0's launcher vanished. The plan is released at the end.
    """
    supervisor = Supervisor(plan.job.failure_dir)
    terminal = Terminal(sys.stdout)
    node = f"node {plan.node_rank}"
    succeeded = False

    def on_signal(signum: int, _frame: object) -> None:
        supervisor.post("signal", signum)  # SimpleQueue.put may be called from a signal handler

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
        for index, env in enumerate(plan.envs):
            rank = int(env["PADDLE_TRAINER_ID"])
            log_path = os.path.join(log_dir, f"{job_id}.workerlog.{rank}") if log_dir else None
            echo = log_dir is None or index == 0
            supervisor.add(LaunchedRank(env, plan.command, log_path, terminal if echo else None,
                                        progress=rank == 0 and TTY_ENV in env))
        supervisor.watch()
        if plan.link is not None:
            plan.link.watch(supervisor.events)
        first, last = min(supervisor.ranks), max(supervisor.ranks)
        logger.info("started rank%s of %s (backend %s, store %s)",
                    f" {first}" if first == last else f"s {first}-{last}",
                    plan.envs[0]["PADDLE_TRAINERS_NUM"], plan.backend,
                    plan.envs[0]["PADDLE_MASTER"])
        event = supervisor.wait()
        if event.kind == "signal":
            name = signal_name(event.value)
            logger.warning("received signal %s; passing it on to the ranks", name)
            if plan.link is not None:
                plan.link.report_failure(f"{node}: its launcher received signal {name}")
            supervisor.stop(event.value)
            return 128 + event.value
        if event.kind in ("remote", "lost"):
            logger.error("%s; stopping the ranks of this node", event.value if event.kind == "lost"
                         else f"the job failed on {event.value}")
            supervisor.stop()
            return 1
        if event.kind == "failed":
            failure = event.value
            description = failure.describe()
            logger.error("%s; stopping the other ranks", description)
            if plan.link is not None:
                plan.link.report_failure(f"{node}: {description}")
            supervisor.stop()
            _report_failure(failure)
            culprit = failure.culprit
            return 1 if culprit.stopped else _exit_code(culprit.returncode)
        for handle in supervisor.ranks.values():
            handle.finish_output()
        logger.info("all %d ranks of this node finished", len(supervisor.ranks))
        succeeded = True
        return 0
    finally:
        supervisor.stop(signal.SIGKILL)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        plan.release(succeeded)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m minidp.distributed.launch`` and ``minidp-launch``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        f"[minidp-launch node {args.node_rank}] %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        try:
            plan = make_plan(args)
        except (ValueError, TypeError) as error:
            parser.error(str(error))
        except RuntimeError as error:
            logger.error("cannot start the job: %s", error)
            return 1
        return supervise(plan, args.log_dir, args.job_id)
    except OSError as error:
        logger.error("cannot run the job: %s", error)
        return 1
    finally:
        logger.removeHandler(handler)
