"""``python -m minidp.distributed.launch``: start this node's ranks of a job and watch over them.

Usage::

    python -m minidp.distributed.launch [options] train.py [train.py's arguments]

Every rank runs ``python -u train.py ...`` with the variables ``ParallelEnv`` reads
(PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ENDPOINTS,
PADDLE_MASTER with MASTER_ADDR/MASTER_PORT, PADDLE_DISTRI_BACKEND and, under nccl,
FLAGS_selected_gpus). Rank 0 hosts the rendezvous store on a free port of node 0.

With several nodes, ``--master HOST:PORT`` names where node 0's launcher meets the others: it
hosts a small store there through which the launchers swap their ranks' endpoints and learn the
store address of rank 0 (``--master`` is therefore not the ranks' own store). The launchers stay
connected through it while the job runs: when a node's rank fails or its launcher is signalled,
every other node stops its ranks too and exits with code 1 (see :class:`NodeLink`). The ports
a launcher hands out stay reserved until the job ends (see ``PortReservation``).

Output: without ``--log_dir`` every rank's lines reach this terminal prefixed with
``[rank N]``; with it, rank N writes ``LOG_DIR/JOB_ID.workerlog.N`` and only this node's first
rank is also echoed (prefixed) to the terminal. SIGINT and SIGTERM are forwarded to every rank.
When a rank fails, the others are stopped (SIGTERM, then SIGKILL after a grace period), the
last lines of the rank that failed first are printed (its peers usually fail right after it,
having lost their connections to it) and the launcher exits with that rank's exit code (128 +
the signal number for a rank killed by a signal).
"""
from __future__ import annotations

import argparse
import collections
import functools
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Deque, Dict, List, Optional, Sequence, Tuple

from minidp.distributed.backends.gloo import peers_blamed
from minidp.distributed.spawn import (
    PortReservation,
    default_backend,
    die_with_parent,
    job_secret_for_launch,
    rank_environment,
    select_gpus,
    signal_name,
    visible_gpus,
)
from minidp.distributed.store import TCPStore

logger = logging.getLogger("minidp.distributed.launch")

LAUNCH_BACKENDS = ("auto", "gloo", "nccl")
STOP_GRACE_SECONDS = 5.0
SETTLE_SECONDS = 3.0
TAIL_LINES = 30
RENDEZVOUS_TIMEOUT_SECONDS = 300.0
OUTPUT_DRAIN_SECONDS = 2.0


class LaunchError(ValueError):
    """The command line asks for something that cannot be launched."""


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The launcher's argument parser (Paddle's option names)."""
    parser = argparse.ArgumentParser(
        prog="python -m minidp.distributed.launch", allow_abbrev=False,
        description="Start the ranks of a minidp data-parallel job on this node.")
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
    parser.add_argument("--backend", default="auto", choices=LAUNCH_BACKENDS,
                        help="communication backend (default auto: nccl when GPUs are visible "
                             "or --devices is given, else gloo)")
    parser.add_argument("--log_dir", default=None,
                        help="write each rank's output to LOG_DIR/JOB_ID.workerlog.RANK")
    parser.add_argument("--job_id", default="default",
                        help="name of the job: prefixes log files and rendezvous keys")
    parser.add_argument("training_script", help="the Python script every rank runs")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER,
                        help="arguments passed on to the script")
    return parser


def _parse_master(master: str) -> Tuple[str, int]:
    host, _, port = master.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError(f"--master must look like HOST:PORT, got {master!r}")
    return host.strip("[]"), int(port)


class LaunchPlan:
    """What this node starts: the backend, one environment per local rank, the command.

    It also holds what must live as long as the job: the reservation of the ports the
    environments name and, with several nodes, the link to the other launchers.
    """

    def __init__(self, backend: str, envs: List[Dict[str, str]], command: List[str],
                 ports: Optional[PortReservation] = None, link: Optional["NodeLink"] = None,
                 node_rank: int = 0) -> None:
        self.backend = backend
        self.envs = envs
        self.command = command
        self.ports = ports
        self.link = link
        self.node_rank = node_rank

    def release(self, succeeded: bool = False) -> None:
        """The job is over: leave the other launchers and free the reserved ports."""
        if self.link is not None:
            self.link.close(succeeded)
            self.link = None
        if self.ports is not None:
            self.ports.release()
            self.ports = None


def _resolve_backend(args: argparse.Namespace) -> str:
    if args.backend != "auto":
        if args.backend == "gloo" and args.devices:
            raise LaunchError("--devices selects GPUs for the nccl backend; drop it for gloo")
        return args.backend
    return default_backend(bool(args.devices))


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
    return nproc


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


def _rendezvous(args: argparse.Namespace, master: Optional[Tuple[str, int]], nproc: int,
                secret: str) -> Tuple[List[str], str, int, PortReservation, Optional[NodeLink]]:
    """Every rank's endpoint, the ranks' store address, this node's first global rank, the
    reservation of this node's ports and, with several nodes, the link between the launchers.

    One node needs nobody else. Several meet at ``--master``: each publishes its ranks'
    endpoints, node 0 also the store address that its rank 0 will host, then all read all.
    The ports this node hands out stay reserved until the job ends, so that nothing takes them
    before the ranks listen there and two launchers on one host never hand out the same one.
    """
    if master is None:
        host = args.host or "127.0.0.1"
        ports = PortReservation(host, nproc + 1)
        endpoints = [f"{host}:{port}" for port in ports.ports[:nproc]]
        return endpoints, f"{host}:{ports.ports[nproc]}", 0, ports, None
    master_host, master_port = master
    is_node0 = args.node_rank == 0
    store = TCPStore(master_host, master_port, is_master=is_node0,
                     timeout=RENDEZVOUS_TIMEOUT_SECONDS, secret=secret.encode("utf-8"))
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
        store.wait(node_keys)
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
    if not os.path.isfile(args.training_script):
        raise LaunchError(f"training script {args.training_script!r} not found")
    backend = _resolve_backend(args)
    nproc = _resolve_nproc(args, backend)
    devices: List[Optional[int]] = [None] * nproc
    if backend == "nccl":
        devices = list(select_gpus(nproc, args.devices))
    try:
        secret = job_secret_for_launch(args.nnodes)
    except ValueError as error:
        raise LaunchError(str(error)) from None
    endpoints, rank_store, first_rank, ports, link = _rendezvous(args, master, nproc, secret)
    envs = [rank_environment(first_rank + local, endpoints, rank_store, backend, devices[local],
                             secret)
            for local in range(nproc)]
    command = [sys.executable, "-u", args.training_script, *args.training_script_args]
    return LaunchPlan(backend, envs, command, ports, link, args.node_rank)


# ----------------------------------------------------------------------------------------------
# Running the ranks
# ----------------------------------------------------------------------------------------------

TRACEBACK_HEADER = "Traceback (most recent call last):"


class RankProcess:
    """One local rank: its process, where its output goes and its last lines of output.

    ``traceback_at`` is when the rank's latest Python traceback began (monotonic clock, as read
    by the launcher), ``exited_at`` when its exit was seen and ``stopped`` whether the launcher
    signalled it: together they tell the rank that failed first from those that failed
    because of it.
    """

    def __init__(self, env: Dict[str, str], command: List[str], log_path: Optional[str],
                 echo: bool, terminal_lock: threading.Lock) -> None:
        self.rank = int(env["PADDLE_TRAINER_ID"])
        self.log_path = log_path
        self.tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.traceback_at: Optional[float] = None
        self.exited_at: Optional[float] = None
        self.stopped = False
        self._echo = echo
        self._terminal_lock = terminal_lock
        self._threads: List[threading.Thread] = []
        self.process = subprocess.Popen(
            command, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()))

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        """Start copying the output and report the exit to ``events`` as ("exit", rank)."""
        log_file = open(self.log_path, "w", encoding="utf-8") if self.log_path else None
        self._threads = [
            threading.Thread(target=self._copy_output, args=(log_file,), daemon=True,
                             name=f"minidp-launch-output-{self.rank}"),
            threading.Thread(target=self._wait_exit, args=(events,), daemon=True,
                             name=f"minidp-launch-wait-{self.rank}"),
        ]
        for thread in self._threads:
            thread.start()

    def _copy_output(self, log_file: Optional[IO[str]]) -> None:
        try:
            for raw in self.process.stdout:
                line = raw.decode("utf-8", "replace")
                if line.startswith(TRACEBACK_HEADER):
                    self.traceback_at = time.monotonic()
                if not line.endswith("\n"):
                    line += "\n"
                self.tail.append(line)
                if log_file is not None:
                    log_file.write(line)
                    log_file.flush()
                if self._echo:
                    with self._terminal_lock:
                        sys.stdout.write(f"[rank {self.rank}] {line}")
                        sys.stdout.flush()
        finally:
            self.process.stdout.close()
            if log_file is not None:
                log_file.close()

    def _wait_exit(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        self.process.wait()
        self.exited_at = time.monotonic()
        events.put(("exit", self.rank))

    def failed_by_itself(self) -> bool:
        """True once the rank has exited non-zero without the launcher having signalled it."""
        return self.process.returncode not in (None, 0) and not self.stopped

    def send_signal(self, signum: int) -> None:
        """Signal the rank and every process it started (its own process group)."""
        self.stopped = True
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def finish_output(self) -> None:
        """Wait briefly for the last lines (a leftover grandchild may hold the pipe open)."""
        for thread in self._threads:
            thread.join(OUTPUT_DRAIN_SECONDS)


def stop_ranks(ranks: Sequence[RankProcess], signum: int = signal.SIGTERM) -> None:
    """Send ``signum`` to every live rank, then SIGKILL those alive after the grace period."""
    alive = [rank for rank in ranks if rank.process.poll() is None]
    for rank in alive:
        rank.send_signal(signum)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for rank in alive:
        try:
            rank.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            logger.warning("rank %d ignored signal %s; killing it", rank.rank,
                           signal_name(signum))
            rank.send_signal(signal.SIGKILL)
            try:
                rank.process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                logger.error("rank %d (pid %d) survived SIGKILL (stuck in the kernel?)",
                             rank.rank, rank.process.pid)


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _describe_exit(rank: RankProcess) -> str:
    code = rank.process.returncode
    if code < 0:
        return (f"rank {rank.rank} (pid {rank.process.pid}) was killed by signal "
                f"{signal_name(-code)}")
    return f"rank {rank.rank} (pid {rank.process.pid}) exited with code {code}"


def _describe_failure(rank: RankProcess) -> str:
    if rank.process.returncode is None:
        return (f"rank {rank.rank} (pid {rank.process.pid}) raised an exception and has not "
                "exited")
    return _describe_exit(rank)


def _report_failure(rank: RankProcess, others: Sequence[RankProcess]) -> None:
    rank.finish_output()
    where = f" (full log: {rank.log_path})" if rank.log_path else ""
    lines = "".join(f"    {line}" for line in rank.tail) or "    (no output)\n"
    logger.error("last lines of rank %d%s:\n%s", rank.rank, where, lines.rstrip("\n"))
    if others:
        logger.error("rank(s) %s failed after it, most likely because it had",
                     ", ".join(str(other.rank) for other in others))


def _first_failure(ranks: Dict[int, RankProcess], running: set,
                   events: "queue.SimpleQueue[Tuple[str, object]]") -> List[RankProcess]:
    """The ranks that failed by themselves, the one that failed first leading.

    When one rank fails, its peers soon fail too (their connections to it break), and may even
    exit before it does: an exiting Python process closes its sockets before it ends. Ranks
    that already printed a traceback are therefore given ``SETTLE_SECONDS`` to exit by
    themselves. The failed ranks -- those that exited non-zero, and those still running after
    printing a traceback -- whose last lines blame another failed rank (a gloo "lost the
    connection to rank N") come last; within each part, ranks are ordered by when their last
    traceback was read (for a rank that printed none, by when it exited), which under load is
    only approximately when it was written. Other events arriving meanwhile are put back.
    """
    deadline = time.monotonic() + SETTLE_SECONDS
    postponed = []
    while any(ranks[r].traceback_at is not None for r in running):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            kind, value = events.get(timeout=remaining)
        except queue.Empty:
            break
        if kind == "exit":
            running.discard(value)
            ranks[value].finish_output()
        else:
            postponed.append((kind, value))
    for item in postponed:
        events.put(item)
    failed = [rank for rank in ranks.values()
              if rank.failed_by_itself()
              or (rank.rank in running and rank.traceback_at is not None)]
    for rank in failed:
        if rank.rank not in running:
            rank.finish_output()  # every line it wrote has been read, tracebacks included

    failed_ranks = {rank.rank for rank in failed}

    def order(rank: RankProcess) -> Tuple[bool, float, int]:
        echo = bool(peers_blamed("".join(rank.tail)) & (failed_ranks - {rank.rank}))
        if rank.traceback_at is not None:
            when = rank.traceback_at
        else:
            when = rank.exited_at if rank.exited_at is not None else float("inf")
        return echo, when, rank.rank

    return sorted(failed, key=order)


def supervise(plan: LaunchPlan, log_dir: Optional[str], job_id: str) -> int:
    """Run the plan's ranks to the end; return the launcher's exit code.

    0 when every rank of this node succeeded; the exit code of the rank that failed first
    (128 + N for a rank killed by signal N); 128 + N when the launcher received signal N; 1 when
    another node failed or node 0's launcher vanished. The plan's ports are released at the end.
    """
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
    events: "queue.SimpleQueue[Tuple[str, object]]" = queue.SimpleQueue()
    terminal_lock = threading.Lock()
    ranks: Dict[int, RankProcess] = {}
    node = f"node {plan.node_rank}"
    succeeded = False

    def on_signal(signum: int, _frame: object) -> None:
        events.put(("signal", signum))  # SimpleQueue.put may be called from a signal handler

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for index, env in enumerate(plan.envs):
            rank_id = int(env["PADDLE_TRAINER_ID"])
            log_path = os.path.join(log_dir, f"{job_id}.workerlog.{rank_id}") if log_dir else None
            ranks[rank_id] = RankProcess(env, plan.command, log_path,
                                         echo=log_dir is None or index == 0,
                                         terminal_lock=terminal_lock)
        for rank in ranks.values():
            rank.watch(events)
        if plan.link is not None:
            plan.link.watch(events)
        first, last = min(ranks), max(ranks)
        logger.info("started rank%s of %s (backend %s, store %s)",
                    f" {first}" if first == last else f"s {first}-{last}",
                    plan.envs[0]["PADDLE_TRAINERS_NUM"], plan.backend,
                    plan.envs[0]["PADDLE_MASTER"])
        running = set(ranks)
        while running:
            kind, value = events.get()
            if kind == "signal":
                name = signal_name(value)
                logger.warning("received signal %s; passing it on to the ranks", name)
                if plan.link is not None:
                    plan.link.report_failure(f"{node}: its launcher received signal {name}")
                stop_ranks(list(ranks.values()), value)
                return 128 + value
            if kind in ("remote", "lost"):
                logger.error("%s; stopping the ranks of this node", value if kind == "lost"
                             else f"the job failed on {value}")
                stop_ranks(list(ranks.values()))
                return 1
            running.discard(value)
            if ranks[value].process.returncode != 0:
                failed = _first_failure(ranks, running, events)
                culprit = failed[0] if failed else ranks[value]
                description = _describe_failure(culprit)
                logger.error("%s; stopping the other ranks", description)
                if plan.link is not None:
                    plan.link.report_failure(f"{node}: {description}")
                stop_ranks(list(ranks.values()))
                _report_failure(culprit, failed[1:])
                return 1 if culprit.stopped else _exit_code(culprit.process.returncode)
        for rank in ranks.values():
            rank.finish_output()
        logger.info("all %d ranks of this node finished", len(ranks))
        succeeded = True
        return 0
    finally:
        stop_ranks(list(ranks.values()), signal.SIGKILL)
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
    finally:
        logger.removeHandler(handler)
