"""What each rank does in the launcher tests (spawn, minidp-launch and mpirun).

The spawn tests pass these functions to ``spawn``; the launcher and mpirun tests run this file,
which prints ``RESULT <json>`` with what :func:`report` returns.
Usage: ``python rank_tasks.py [--fail-rank N [--linger S] | --sleep SECONDS | --exit-code C]``.
"""
import argparse
import atexit
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fail-rank", type=int, default=-1,
                        help="this rank raises instead of joining the all-reduce")
    parser.add_argument("--linger", type=float, default=0.0,
                        help="the failing rank exits this long after closing its connections")
    parser.add_argument("--sleep", type=float, default=None,
                        help="only announce the rank and sleep this long")
    parser.add_argument("--exit-code", type=int, default=None,
                        help="only exit at once with this code")
    args = parser.parse_args()
    if args.exit_code is not None:
        sys.exit(args.exit_code)
    if args.sleep is not None:
        announce_and_sleep(args.sleep)
        return
    emit("RESULT " + json.dumps(report(args.fail_rank, args.linger)))


if __name__ == "__main__":
    main()
