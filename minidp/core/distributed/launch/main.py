"""``python -m minidp.distributed.launch``: start this node's ranks of a job and watch over them.

Usage::

    python -m minidp.distributed.launch [options] train.py [train.py's arguments]
    python -m minidp.distributed.launch [options] -m package.module [its arguments]

Every rank runs ``python -u train.py ...`` (``-m``: ``python -u -m package.module ...``), through
the module ``--rank_runner`` names (default :mod:`.run_rank`, which runs it as python would and
records a failure for the launcher; ``python -u -m RUNNER [-m] train.py ...``), with
the environment of the job plan (:mod:`minidp.core.distributed.job`): Paddle's variables that
``ParallelEnv`` reads, torchrun's ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``/``LOCAL_WORLD_SIZE``,
the job secret and the directory of failure records. Rank 0 hosts the rendezvous store on a free
port of node 0. With several ranks per node, ``OMP_NUM_THREADS`` is 1 unless it is set.

With several nodes, ``--master HOST:PORT`` names where node 0's launcher meets the others: it
hosts a small store there through which the launchers swap their ranks' endpoints and learn the
store address of rank 0 (``--master`` is therefore not the ranks' own store). The launchers stay
connected through it while the job runs: when a node's rank fails or its launcher is signalled,
every other node stops its ranks too and exits with code 1. While a launcher waits for the
others it says so every 10 s (see :mod:`minidp.core.distributed.launch.nodes`).

Output: without ``--log_dir`` every rank's lines reach this terminal prefixed with
``[rank N]``; with it, rank N writes ``LOG_DIR/JOB_ID.workerlog.N`` and only this node's first
rank is also echoed (prefixed) to the terminal. When the launcher's own output is a terminal,
it tells the ranks so (``MINIDP_LAUNCHER_TTY=1``) and shows rank 0's carriage-return updates
(progress bars) as they come, on a line of their own that other output never cuts (see
:mod:`minidp.core.distributed.launch.output`). SIGINT and SIGTERM are forwarded to every rank. The
ranks are watched by the supervisor ``spawn`` uses too (:mod:`minidp.core.distributed.supervisor`):
when a rank fails, the others are stopped, the last lines of the rank that failed first (told
by the failure records the ranks write, not by their output) are printed unless its output
already reached the terminal (the summary then points to it), followed by the Python stacks of
the ranks that were still running (where they were stuck), and the launcher
exits with that rank's exit code (128 + the signal number for a rank killed by a signal).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
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
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..job import (
    PLANNED_BACKENDS,
    JobPlan,
    job_secret_for_launch,
    plan_local_job,
    plan_node,
    resolve_backend,
    select_gpus,
    visible_gpus,
)
from .nodes import NodeLink, rendezvous
from .output import RankOutput, Terminal
from ..supervisor import Failure, RankHandle, Supervisor, die_with_parent, signal_name

logger = logging.getLogger("minidp.distributed.launch")

OUTPUT_DRAIN_SECONDS = 2.0
FILES_PER_RANK = 4
"""Open files the launcher and the busiest rank need per rank of the node (the output pipe, the
reserved port, the log file, a store or ring connection), beyond ``FILES_BASE``."""
FILES_BASE = 64
TTY_ENV = "MINIDP_LAUNCHER_TTY"
RANK_RUNNER = "minidp.core.distributed.launch.run_rank"

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
  COLUMNS                                           then its width less the [rank N] prefix
  OMP_NUM_THREADS                                   1 with several ranks per node, unless set

read by the launcher:
  MINIDP_JOB_SECRET      the job's secret; a fresh one per job unless set (needed, the same on
                         every node, with --nnodes > 1)
  OMP_NUM_THREADS        passed on as set instead of the default 1
  CUDA_VISIBLE_DEVICES   the cards --devices chooses from
"""


class LaunchError(ValueError):
    """The command line asks for something that cannot be launched."""


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The launcher's argument parser (Paddle's option names, torchrun's ``-m``)."""
    parser = argparse.ArgumentParser(
        prog="python -m minidp.distributed.launch",
        allow_abbrev=False,
        description="Start the ranks of a minidp data-parallel job on this node.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--nproc_per_node",
        type=int,
        default=None,
        help="ranks on this node (default: the number of --devices, else of visible GPUs under nccl, else 1)",
    )
    parser.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument("--node_rank", type=int, default=0, help="index of this node (default 0)")
    parser.add_argument(
        "--master",
        default=None,
        metavar="HOST:PORT",
        help="where the nodes' launchers meet; node 0 listens there (needed when --nnodes > 1)",
    )
    parser.add_argument(
        "--host",
        default=None,
        help="address of this node that the other ranks can reach (default: "
        "the address used to reach --master, else 127.0.0.1)",
    )
    parser.add_argument(
        "--devices",
        "--gpus",
        dest="devices",
        default=None,
        help="GPU cards for this node's ranks, e.g. '0,1' (nccl only)",
    )
    parser.add_argument(
        "--backend",
        default="auto",
        choices=PLANNED_BACKENDS,
        help="communication backend (default auto: nccl when GPUs are visible or --devices is given, else gloo)",
    )
    parser.add_argument("--log_dir", default=None, help="write each rank's output to LOG_DIR/JOB_ID.workerlog.RANK")
    parser.add_argument("--job_id", default="default", help="name of the job: prefixes log files and rendezvous keys")
    parser.add_argument(
        "-m", "--module", action="store_true", help="run training_script as a module, as python -m does"
    )
    parser.add_argument(
        "--rank_runner",
        default=RANK_RUNNER,
        metavar="MODULE",
        help="the module each rank runs the script through, as python -m MODULE [-m] SCRIPT ARGS "
        f"(default {RANK_RUNNER}: as python would, recording a failure for the launcher)",
    )
    parser.add_argument("training_script", help="the Python script every rank runs (with -m: the module)")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER, help="arguments passed on to the script")
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
        raise LaunchError(
            f"--master host {host!r} does not resolve ({error.strerror}); check the name or give node 0's IP address"
        ) from None
    return host, int(port)


def _check_open_files(nproc: int) -> None:
    """Refuse a node whose ranks would run out of file descriptors part-way through."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FILES_BASE + FILES_PER_RANK * nproc
    if soft != resource.RLIM_INFINITY and needed > soft:
        raise LaunchError(
            f"--nproc_per_node {nproc} needs about {needed} open files but the limit is {soft} "
            f"(ulimit -n); start fewer ranks per node or raise the limit (ulimit -n {needed})"
        )


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
    _check_rank_runner(args.rank_runner)
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
        endpoints, rank_store, first_rank, ports, link = rendezvous(
            master, args.node_rank, args.nnodes, args.host, args.job_id, nproc, secret
        )
        job = plan_node(backend, devices or [None] * nproc, endpoints, rank_store, first_rank, secret, ports)
    _add_node_settings(job, nproc)
    runner = [sys.executable, "-u", "-m", args.rank_runner, *(["-m"] if args.module else [])]
    command = [*runner, args.training_script, *args.training_script_args]
    return LaunchPlan(job, command, link, args.node_rank)


def _check_rank_runner(name: str) -> None:
    """Refuse a ``--rank_runner`` that no rank could start."""
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise LaunchError(f"--rank_runner module {name!r} not found; name a module python -m can run")


def _add_node_settings(job: JobPlan, nproc: int) -> None:
    """``OMP_NUM_THREADS=1`` for several ranks per node (said once); the terminal hint."""
    settings = {}
    if nproc > 1 and not os.environ.get("OMP_NUM_THREADS"):
        settings["OMP_NUM_THREADS"] = "1"
        logger.info(
            "setting OMP_NUM_THREADS=1 for each of the %d ranks of this node, which "
            "share its cores; set OMP_NUM_THREADS to choose another value",
            nproc,
        )
    if sys.stdout.isatty():
        settings[TTY_ENV] = "1"
        prefix = len("[rank 0] ")
        settings["COLUMNS"] = str(max(20, shutil.get_terminal_size().columns - prefix))
    for env in job.envs:
        env.update(settings)


# ----------------------------------------------------------------------------------------------
# Running the ranks
# ----------------------------------------------------------------------------------------------


class LaunchedRank(RankHandle):
    """One local rank: its process and its output (see :class:`RankOutput`)."""

    def __init__(self, env: dict, command: List[str], output: RankOutput) -> None:
        self.output = output
        self._threads: List[threading.Thread] = []
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        super().__init__(int(env["PADDLE_TRAINER_ID"]), self.process.pid)

    @property
    def returncode(self) -> Optional[int]:
        return self.process.poll()

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        self._threads = [
            threading.Thread(
                target=self.output.copy,
                args=(self.process.stdout,),
                daemon=True,
                name=f"minidp-launch-output-{self.rank}",
            ),
            threading.Thread(
                target=self._wait_exit, args=(events,), daemon=True, name=f"minidp-launch-wait-{self.rank}"
            ),
        ]
        for thread in self._threads:
            thread.start()

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
    output = culprit.output
    where = f" (full log: {output.log_path})" if output.log_path else ""
    if output.echoed:
        logger.error(
            "rank %d's output, its error included, is above (lines prefixed [rank %d])%s",
            culprit.rank,
            culprit.rank,
            where,
        )
    else:
        lines = "".join(f"    {line}" for line in output.tail) or "    (no output)\n"
        logger.error("last lines of rank %d%s:\n%s", culprit.rank, where, lines.rstrip("\n"))
    for line in failure.others_described():
        logger.error("%s", line)
    for paragraph in failure.stacks_described():
        logger.error("%s", paragraph)


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
            output = RankOutput(rank, log_path, terminal if echo else None, progress=rank == 0 and TTY_ENV in env)
            supervisor.add(LaunchedRank(env, plan.command, output))
        supervisor.watch()
        if plan.link is not None:
            plan.link.watch(supervisor.events)
        first, last = min(supervisor.ranks), max(supervisor.ranks)
        logger.info(
            "started rank%s of %s (backend %s, store %s)",
            f" {first}" if first == last else f"s {first}-{last}",
            plan.envs[0]["PADDLE_TRAINERS_NUM"],
            plan.backend,
            plan.envs[0]["PADDLE_MASTER"],
        )
        event = supervisor.wait()
        if event.kind == "signal":
            name = signal_name(event.value)
            logger.warning("received signal %s; passing it on to the ranks", name)
            if plan.link is not None:
                plan.link.report_failure(f"{node}: its launcher received signal {name}")
            supervisor.stop(event.value)
            for handle in supervisor.ranks.values():
                handle.finish_output()
            logger.warning(
                "stopped on signal %s: %s",
                name,
                "; ".join(handle.describe(None) for handle in supervisor.ranks.values()),
            )
            return 128 + event.value
        if event.kind in ("remote", "lost"):
            logger.error(
                "%s; stopping the ranks of this node",
                event.value if event.kind == "lost" else f"the job failed on {event.value}",
            )
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


def main(argv: Optional[Sequence[str]] = None, parser: Optional[argparse.ArgumentParser] = None) -> int:
    """Entry point of ``python -m minidp.distributed.launch`` and ``minidp-launch``.

    ``parser`` is :func:`build_parser`'s parser, possibly with options a front-end adds that set
    the same destinations (the surface's ``--as_paddle`` sets ``rank_runner``); default: as built.
    """
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"[minidp-launch node {args.node_rank}] %(levelname)s %(message)s"))
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
