"""A two-rank data-parallel training job in which rank 1 SIGKILLs itself at one phase of one step
(tests/faults/test_kill_faults.py runs it under spawn, the launcher and mpirun).

Every rank trains :class:`dp_tasks.Net` on its shard of :func:`dp_tasks.global_batch` with
Momentum, as :func:`dp_tasks.train_reference` does in one process, and after each step saves
``{"step", "model", "opt"}`` to ``DIRECTORY/rank<R>.ckpt``. At step ``KILL_STEP`` rank 1 kills
itself with SIGKILL, where ``PHASE`` says:

- ``forward``: inside the model's forward (a pre-hook of its second layer);
- ``all_reduce``: in the comm hook, once the bucket's asynchronous all-reduce is issued and
  before backward waits for it;
- ``save``: inside ``minidp.save`` of that step's checkpoint, once the temporary file exists
  and the first array has been written into its archive (the checkpoint of the step before
  stays in place).

Each rank first prints ``started rank R pid P``, then ``shared file PATH`` for each file of
/dev/shm it maps that still has a name. Usage (one rank per process, as the launcher and
mpirun start it): ``python kill_tasks.py PHASE KILL_STEP DIRECTORY``; with ``--spawn`` this
process spawns the two ranks itself (gloo backend) and raises what ``spawn`` raises.
"""

import argparse
import os
import signal
from typing import List

import numpy

import minidp
import minidp.distributed as dist
import minidp.nn as nn
from minidp.core.distributed import comm_hooks

import dp_tasks
import rank_tasks

PHASES = ("forward", "all_reduce", "save")
KILLED_RANK = 1
SCENARIO = {"name": "kill", "optimizer": "momentum"}


def checkpoint_path(directory: str, rank: int) -> str:
    """Where rank ``rank`` saves its checkpoint after every step."""
    return os.path.join(directory, f"rank{rank}.ckpt")


def linked_shared_files() -> List[str]:
    """The files of /dev/shm that this process maps and that still have a name: under mpirun,
    MPICH's segment (minidp unlinks its own as soon as every rank has opened it)."""
    with open("/proc/self/maps") as maps:
        paths = {fields[5].strip() for fields in (line.split(maxsplit=5) for line in maps) if len(fields) == 6}
    return sorted(path for path in paths if path.startswith("/dev/shm/") and os.path.exists(path))


def die() -> None:
    """End this process at once, as the kernel's OOM killer or ``kill -9`` would."""
    os.kill(os.getpid(), signal.SIGKILL)


class Doom:
    """Whether this rank is to die in the step now running: ``armed`` is set for that step only."""

    def __init__(self) -> None:
        self.armed = False

    def strike(self) -> None:
        if self.armed:
            die()


def all_reduce_then_strike(doom: Doom, bucket: comm_hooks.GradBucket) -> comm_hooks.BucketWork:
    """The default hook, except that an armed rank dies while the all-reduce it issued is in
    flight."""
    work = comm_hooks.allreduce_hook(None, bucket)
    doom.strike()
    return work


def save_striking_mid_write(doom: Doom, obj: dict, path: str) -> None:
    """``minidp.save``; an armed rank dies once the first array is written into the temporary
    file's archive."""
    if not doom.armed:
        minidp.save(obj, path)
        return
    write_array = numpy.lib.format.write_array

    def write_then_die(entry, array, allow_pickle=False):
        write_array(entry, array, allow_pickle=allow_pickle)
        die()

    numpy.lib.format.write_array = write_then_die
    minidp.save(obj, path)


def train(phase: str, kill_step: int, directory: str) -> None:
    """Train until rank 1 kills itself at ``phase`` of step ``kill_step`` (or the job stops)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    rank_tasks.emit(f"started rank {rank} pid {os.getpid()}")
    for path in linked_shared_files():
        rank_tasks.emit(f"shared file {path}")
    model = dp_tasks.build_model(SCENARIO, rank)
    dp = minidp.DataParallel(model)
    doom = Doom()
    if phase == "forward":
        model.fc2.register_forward_pre_hook(lambda layer, inputs: doom.strike())
    elif phase == "all_reduce":
        dp.register_comm_hook(doom, all_reduce_then_strike)
    optimizer = dp_tasks.make_optimizer(SCENARIO["optimizer"], dp.parameters())
    loss_fn = nn.MSELoss()
    rows = dp_tasks.shard_rows(rank, world)
    for step in range(kill_step + 2):
        doom.armed = rank == KILLED_RANK and step == kill_step
        x, y = dp_tasks.global_batch(step, 0)
        loss_fn(dp(minidp.to_tensor(x[rows])), minidp.to_tensor(y[rows])).backward()
        optimizer.step()
        optimizer.clear_grad()
        state = {"step": step, "model": model.state_dict(), "opt": optimizer.state_dict()}
        if phase == "save":
            save_striking_mid_write(doom, state, checkpoint_path(directory, rank))
        else:
            minidp.save(state, checkpoint_path(directory, rank))
    raise AssertionError(
        f"rank {rank} trained past step {kill_step}: rank {KILLED_RANK} should have died there and stopped the job"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("phase", choices=PHASES)
    parser.add_argument("kill_step", type=int)
    parser.add_argument("directory")
    parser.add_argument("--spawn", action="store_true", help="spawn the two ranks from this process (gloo backend)")
    args = parser.parse_args()
    if args.spawn:
        dist.spawn(train, args=(args.phase, args.kill_step, args.directory), nprocs=2, backend="gloo")
    else:
        train(args.phase, args.kill_step, args.directory)


if __name__ == "__main__":
    main()
