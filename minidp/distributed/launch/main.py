"""``python -m minidp.distributed.launch``: start this node's ranks of a job and watch over them.

Usage::

    python -m minidp.distributed.launch [options] train.py [train.py's arguments]

Every rank runs ``python -u train.py ...`` with the variables ``ParallelEnv`` reads
(PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ENDPOINTS,
PADDLE_MASTER with MASTER_ADDR/MASTER_PORT, PADDLE_DISTRI_BACKEND and, under nccl,
FLAGS_selected_gpus). Rank 0 hosts the rendezvous store on a free port of node 0.

With several nodes, ``--master HOST:PORT`` names where node 0's launcher meets the others: it
hosts a small store there through which the launchers swap their ranks' endpoints and learn the
store address of rank 0 (``--master`` is therefore not the ranks' own store).

Output: without ``--log_dir`` every rank's lines reach this terminal prefixed with
``[rank N]``; with it, rank N writes ``LOG_DIR/JOB_ID.workerlog.N`` and only this node's first
rank is also echoed (prefixed) to the terminal. SIGINT and SIGTERM are forwarded to every rank.
When a rank fails, the others are stopped (SIGTERM, then SIGKILL after a grace period), the
failing rank's last lines are printed and the launcher exits with that rank's exit code (128 +
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
from typing import IO, Deque, Dict, List, Optional, Sequence, Tuple

from minidp.distributed.spawn import (
    default_backend,
    die_with_parent,
    find_free_ports,
    rank_environment,
    select_gpus,
    visible_gpus,
)
from minidp.distributed.store import TCPStore

logger = logging.getLogger("minidp.distributed.launch")

LAUNCH_BACKENDS = ("auto", "gloo", "nccl")
STOP_GRACE_SECONDS = 5.0
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
    """What this node starts: the backend, one environment per local rank, the command."""

    def __init__(self, backend: str, envs: List[Dict[str, str]], command: List[str]) -> None:
        self.backend = backend
        self.envs = envs
        self.command = command


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


def _rendezvous(args: argparse.Namespace, nproc: int) -> Tuple[List[str], str, int]:
    """Every rank's endpoint, the ranks' store address and this node's first global rank.

    One node needs nobody else. Several meet at ``--master``: each publishes its ranks'
    endpoints, node 0 also the store address that its rank 0 will host, then all read all.
    """
    if args.master is None:
        host = args.host or "127.0.0.1"
        ports = find_free_ports(host, nproc + 1)
        return [f"{host}:{port}" for port in ports[:nproc]], f"{host}:{ports[nproc]}", 0
    master_host, master_port = _parse_master(args.master)
    is_node0 = args.node_rank == 0
    store = TCPStore(master_host, master_port, is_master=is_node0,
                     timeout=RENDEZVOUS_TIMEOUT_SECONDS)
    try:
        host = args.host or store.local_address
        ports = find_free_ports(host, nproc + int(is_node0))
        prefix = f"minidp-launch/{args.job_id}"
        store.set(f"{prefix}/node/{args.node_rank}", ",".join(f"{host}:{p}" for p in ports[:nproc]))
        if is_node0:
            store.set(f"{prefix}/store", f"{host}:{ports[nproc]}")
        node_keys = [f"{prefix}/node/{node}" for node in range(args.nnodes)]
        store.wait(node_keys)
        per_node = [store.get(key).decode().split(",") for key in node_keys]
        rank_store = store.get(f"{prefix}/store").decode()
        store.set(f"{prefix}/read/{args.node_rank}", b"1")
        if is_node0:
            store.wait([f"{prefix}/read/{node}" for node in range(args.nnodes)])
    finally:
        store.close()
    first_rank = sum(len(endpoints) for endpoints in per_node[:args.node_rank])
    return [endpoint for endpoints in per_node for endpoint in endpoints], rank_store, first_rank


def make_plan(args: argparse.Namespace) -> LaunchPlan:
    """Validate the command line and decide every local rank's environment."""
    if args.nnodes < 1:
        raise LaunchError(f"--nnodes must be at least 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        raise LaunchError(f"--node_rank must be in 0..{args.nnodes - 1}, got {args.node_rank}")
    if args.nnodes > 1 and args.master is None:
        raise LaunchError("--nnodes > 1 needs --master HOST:PORT (an address of node 0)")
    if not os.path.isfile(args.training_script):
        raise LaunchError(f"training script {args.training_script!r} not found")
    backend = _resolve_backend(args)
    nproc = _resolve_nproc(args, backend)
    devices: List[Optional[int]] = [None] * nproc
    if backend == "nccl":
        devices = list(select_gpus(nproc, args.devices))
    endpoints, rank_store, first_rank = _rendezvous(args, nproc)
    envs = [rank_environment(first_rank + local, endpoints, rank_store, backend, devices[local])
            for local in range(nproc)]
    command = [sys.executable, "-u", args.training_script, *args.training_script_args]
    return LaunchPlan(backend, envs, command)


# ----------------------------------------------------------------------------------------------
# Running the ranks
# ----------------------------------------------------------------------------------------------

class RankProcess:
    """One local rank: its process, where its output goes and its last lines of output."""

    def __init__(self, env: Dict[str, str], command: List[str], log_path: Optional[str],
                 echo: bool, terminal_lock: threading.Lock) -> None:
        self.rank = int(env["PADDLE_TRAINER_ID"])
        self.log_path = log_path
        self.tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._echo = echo
        self._terminal_lock = terminal_lock
        self._threads: List[threading.Thread] = []
        self.process = subprocess.Popen(
            command, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()))

    def watch(self, events: "queue.SimpleQueue[Tuple[str, int]]") -> None:
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

    def _wait_exit(self, events: "queue.SimpleQueue[Tuple[str, int]]") -> None:
        self.process.wait()
        events.put(("exit", self.rank))

    def send_signal(self, signum: int) -> None:
        """Signal the rank and every process it started (its own process group)."""
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
    for rank in alive:
        try:
            rank.process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            logger.warning("rank %d ignored signal %s; killing it", rank.rank,
                           signal.Signals(signum).name)
            rank.send_signal(signal.SIGKILL)
            rank.process.wait()


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _describe_exit(rank: RankProcess) -> str:
    code = rank.process.returncode
    if code < 0:
        name = signal.Signals(-code).name
        return f"rank {rank.rank} (pid {rank.process.pid}) was killed by {name}"
    return f"rank {rank.rank} (pid {rank.process.pid}) exited with code {code}"


def _report_failure(rank: RankProcess) -> None:
    rank.finish_output()
    where = f" (full log: {rank.log_path})" if rank.log_path else ""
    lines = "".join(f"    {line}" for line in rank.tail) or "    (no output)\n"
    logger.error("last lines of rank %d%s:\n%s", rank.rank, where, lines.rstrip("\n"))


def supervise(plan: LaunchPlan, log_dir: Optional[str], job_id: str) -> int:
    """Run the plan's ranks to the end; return the launcher's exit code."""
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
    events: "queue.SimpleQueue[Tuple[str, int]]" = queue.SimpleQueue()
    terminal_lock = threading.Lock()
    ranks: Dict[int, RankProcess] = {}

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
        first, last = min(ranks), max(ranks)
        logger.info("started rank%s of %s (backend %s, store %s)",
                    f" {first}" if first == last else f"s {first}-{last}",
                    plan.envs[0]["PADDLE_TRAINERS_NUM"], plan.backend,
                    plan.envs[0]["PADDLE_MASTER"])
        running = set(ranks)
        while running:
            kind, value = events.get()
            if kind == "signal":
                logger.warning("received %s; passing it on to the ranks", signal.Signals(value).name)
                stop_ranks(list(ranks.values()), value)
                return 128 + value
            running.discard(value)
            failed = ranks[value]
            if failed.process.returncode != 0:
                logger.error("%s; stopping the other ranks", _describe_exit(failed))
                stop_ranks(list(ranks.values()))
                _report_failure(failed)
                return _exit_code(failed.process.returncode)
        for rank in ranks.values():
            rank.finish_output()
        logger.info("all %d ranks of this node finished", len(ranks))
        return 0
    finally:
        stop_ranks(list(ranks.values()), signal.SIGKILL)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
