"""What each rank does in the launcher tests (spawn, minidp-launch and mpirun).

The spawn tests pass these functions to ``spawn``; the launcher and mpirun tests run this file,
which prints ``RESULT <json>`` with what :func:`report` returns.
Usage: ``python rank_tasks.py [--fail-rank N [--linger S] | --sleep SECONDS | --exit-code C |
--blame CULPRIT | --all-fail | --spawn | --progress]`` (also runnable as a module: ``-m rank_tasks``).
"""

import argparse
import atexit
import hashlib
import json
import os
import signal
import sys
import time
from typing import Any, Dict

import numpy


def emit(line: str) -> None:
    """Print ``line`` in one write call, so that ranks sharing a pipe never mix their lines."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def report(fail_rank: int = -1, linger: float = 0.0) -> Dict[str, Any]:
    """Join the job, all-reduce a small tensor and describe what this rank saw.

    The rank numbered ``fail_rank`` raises instead of joining the all-reduce, so the others
    block in it until their connections to it break or their launcher stops them. With
    ``linger``, that rank closes its connections right after printing its traceback but exits
    only ``linger`` seconds later: its peers fail, and exit, before it does.
    """
    import minidp
    import minidp.distributed as dist
    from minidp.core.distributed import auth

    group = dist.init_parallel_env()
    env = dist.ParallelEnv()
    rank = dist.get_rank()
    if rank == fail_rank:
        if linger:
            atexit.register(lambda: (dist.destroy_process_group(), time.sleep(linger)))
        raise ValueError(f"rank {rank} fails on purpose")
    tensor = minidp.to_tensor(numpy.arange(4, dtype=numpy.float32) + rank)
    dist.all_reduce(tensor)
    return {
        "rank": rank,
        "world_size": dist.get_world_size(),
        "env_rank": env.rank,
        "env_world_size": env.world_size,
        "current_endpoint": env.current_endpoint,
        "trainer_endpoints": env.trainer_endpoints,
        "backend": group.process_group.backend_name,
        "all_reduce": tensor.numpy().tolist(),
        "pid": os.getpid(),
        "torchrun": {name: os.environ.get(name) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")},
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "secret_digest": hashlib.sha256(auth.job_secret()).hexdigest(),
    }


def large_array(megabytes: int) -> numpy.ndarray:
    """A ``megabytes`` MiB float64 array filled with this rank's number (no communication)."""
    rank = float(os.environ["PADDLE_TRAINER_ID"])
    return numpy.full(megabytes * (1 << 20) // 8, rank)


def announce_and_sleep(seconds: float) -> None:
    """Print ``ready <rank> <pid>`` and sleep: a rank that is still busy when its parent dies."""
    emit(f"ready {os.environ['PADDLE_TRAINER_ID']} {os.getpid()}")
    time.sleep(seconds)


def kill_rank(rank: int, signum: int = signal.SIGKILL) -> None:
    """Rank ``rank`` dies from ``signum`` at once; the others sleep until they are stopped."""
    if int(os.environ["PADDLE_TRAINER_ID"]) == rank:
        os.kill(os.getpid(), signum)
    time.sleep(120)


def blame(culprit: int, delay: float) -> None:
    """Every other rank fails at once blaming ``culprit`` in an MPI-style message (which names
    no rank in words any regex knew); ``culprit`` fails ``delay`` seconds later."""
    from minidp.core.distributed.failure_record import PeerFailedError

    if int(os.environ["PADDLE_TRAINER_ID"]) != culprit:
        raise PeerFailedError("MPI_ERR_PROC_FAILED: Process Failure (peer gone in MPI_Allreduce)", blamed_rank=culprit)
    time.sleep(delay)
    raise ValueError(f"rank {culprit} fails on purpose")


def stuck_in_here(fifo: str) -> None:
    """Tell the FIFO ``fifo`` that this rank is in here, then sleep: a rank stuck somewhere named."""
    with open(fifo, "w") as ready:
        ready.write("x")
    time.sleep(60)


def fail_while_rank_one_is_stuck(fifo: str) -> None:
    """Rank 1 enters :func:`stuck_in_here`; rank 0 raises once rank 1 says it is there (through
    the FIFO ``fifo``), so the failure summary must show where rank 1 is stuck."""
    if os.environ["PADDLE_TRAINER_ID"] == "1":
        stuck_in_here(fifo)
    with open(fifo) as ready:
        ready.read()
    raise ValueError("rank 0 fails while rank 1 is stuck")


def all_fail() -> None:
    """Every rank raises an error of its own at once, blaming no peer. So that the launcher
    sees every rank's own error, not only the first to exit, each rank ends only once every
    rank's failure record is written (at exit, after the excepthook wrote its own; at most 20 s)
    and ignores the stop signal sent after the first failure meanwhile."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    directory, size = os.environ["MINIDP_FAILURE_DIR"], int(os.environ["PADDLE_TRAINERS_NUM"])

    def every_rank_recorded() -> bool:
        return all(os.path.exists(os.path.join(directory, f"rank-{r}.json")) for r in range(size))

    def wait_for_every_record() -> None:
        deadline = time.monotonic() + 20
        while not every_rank_recorded() and time.monotonic() < deadline:
            time.sleep(0.01)  # the records are files written by other processes: nothing to wait on

    atexit.register(wait_for_every_record)
    raise ValueError(f"rank {os.environ['PADDLE_TRAINER_ID']} fails on its own")


def spawn_inside_the_job() -> None:
    """What the README's first script does: ``spawn(train, nprocs=2)`` under ``__main__``."""
    import minidp.distributed as dist

    context = dist.spawn(report, nprocs=2)
    emit("RESULT " + json.dumps(context.return_queues[0].get()))


def progress(steps: int) -> None:
    """Rank 0 draws a carriage-return progress line when told its launcher has a terminal;
    every rank prints whole lines meanwhile."""
    rank = os.environ["PADDLE_TRAINER_ID"]
    drawing = rank == "0" and os.environ.get("MINIDP_LAUNCHER_TTY") == "1"
    for step in range(1, steps + 1):
        if drawing:
            sys.stderr.write(f"\rstep {step}/{steps}")
            sys.stderr.flush()
        else:
            emit(f"line {step} of rank {rank}")
        time.sleep(0.3)
    if drawing:
        sys.stderr.write("\n")
    emit(f"done {rank}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank raises instead of joining the all-reduce")
    parser.add_argument(
        "--linger", type=float, default=0.0, help="the failing rank exits this long after closing its connections"
    )
    parser.add_argument("--sleep", type=float, default=None, help="only announce the rank and sleep this long")
    parser.add_argument("--exit-code", type=int, default=None, help="only exit at once with this code")
    parser.add_argument(
        "--blame", type=int, default=None, help="the other ranks blame this rank, which fails after them"
    )
    parser.add_argument("--all-fail", action="store_true", help="every rank raises an error of its own at once")
    parser.add_argument(
        "--spawn", action="store_true", help="call spawn(report, nprocs=2), as the README's first script does"
    )
    parser.add_argument("--progress", type=int, default=None, help="draw a progress line of this many steps on rank 0")
    args = parser.parse_args()
    if args.blame is not None:
        blame(args.blame, 0.5)
    if args.all_fail:
        all_fail()
    if args.spawn:
        spawn_inside_the_job()
        return
    if args.progress is not None:
        progress(args.progress)
        return
    if args.exit_code is not None:
        sys.exit(args.exit_code)
    if args.sleep is not None:
        announce_and_sleep(args.sleep)
        return
    emit("RESULT " + json.dumps(report(args.fail_rank, args.linger)))


if __name__ == "__main__":
    main()
