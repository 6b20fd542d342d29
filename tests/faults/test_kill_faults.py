"""SIGKILL of a data-parallel rank during forward, all-reduce and save, under spawn, the launcher
and mpirun: each case states its bound.

Every case runs the two-rank training job of ``tests/scripts/kill_tasks.py`` (gloo under spawn
and the launcher, mpi under mpirun, as the other mpirun tests), in which rank 1 SIGKILLs itself
at one phase of step ``KILL_STEP``, with a group timeout of ``PG_TIMEOUT_MS``. Bound: the
front-end returns within ``BOUND_SECONDS``, a quarter of the group timeout, so a surviving rank
that waited for the timeout instead of being stopped fails the case. Then:

- the exit status reports the failure: spawn raises RankFailedError (the script exits 1), the
  launcher exits 128 + 9 = 137, mpirun (MPICH's hydra) exits 9;
- the failure summary names rank 1 (its pid, as the rank announced it) and the signal: spawn and
  the launcher say "rank 1 (pid P) was killed by signal SIGKILL"; MPICH names the process by
  its pid ("PID P RUNNING AT") and the signal as "Killed (signal 9)";
- no process of the job is left: none carries the job's token, and the test process has no
  child it did not have before;
- rank 1's checkpoint of the step before loads intact and holds what one process training on
  the whole batch for those steps holds; a save killed midway left its temporary file, and the
  next save into each rank's target (a restarted job's) leaves no temporary file behind;
- no new ``minidp-`` segment remains in /dev/shm. (MPICH's own segment, ``mpich_shm_*``, is
  left behind by every mpirun job whose rank dies: MPICH keeps it linked while the job runs and
  unlinks it in MPI_Finalize, which no rank of such a job reaches. It is not minidp's: the test
  removes it, as the ranks name it.)
"""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

import dp_tasks
import jobs
import kill_tasks
import minidp
from dist_utils import find_mpiexec
from test_checkpoint_faults import temporaries
from test_shm import shm_files

KILL_STEP = 2
BOUND_SECONDS = 30
PG_TIMEOUT_MS = 120_000
SHM_SETTLE_SECONDS = 5.0
MPIEXEC = find_mpiexec()
LAUNCH = [sys.executable, "-m", "minidp.distributed.launch", "--nproc_per_node", "2", "--backend", "gloo"]

MPI_MARKS = [
    pytest.mark.mpi,
    pytest.mark.skipif(
        MPIEXEC is None or importlib.util.find_spec("mpi4py") is None,
        reason="mpi4py or mpiexec is missing (pip install 'minidp[mpi]')",
    ),
]
FRONT_ENDS = ["spawn", "launcher", pytest.param("mpirun", marks=MPI_MARKS)]


def command(front_end, phase, directory):
    """The command that runs the job of ``kill_tasks`` with ``front_end``."""
    job = [str(kill_tasks.__file__), phase, str(KILL_STEP), str(directory)]
    if front_end == "spawn":
        return [sys.executable, *job, "--spawn"]
    if front_end == "launcher":
        return [*LAUNCH, *job]
    return [MPIEXEC, "-n", "2", sys.executable, *job]


def expected_ending(front_end, pid):
    """The exit status and the failure summary that ``front_end`` gives for rank 1 (pid
    ``pid``) killed by SIGKILL."""
    if front_end == "spawn":
        return 1, [f"RankFailedError: spawn: rank 1 (pid {pid}) was killed by signal SIGKILL"]
    if front_end == "launcher":
        return 128 + signal.SIGKILL, [f"rank 1 (pid {pid}) was killed by signal SIGKILL"]
    return signal.SIGKILL, [f"PID {pid} RUNNING AT", "Killed (signal 9)"]


def rank_pids(output):
    """Rank -> pid, from the ``started rank R pid P`` lines (prefixed by the launcher or not)."""
    found = re.findall(r"started rank (\d+) pid (\d+)", output)
    return {int(rank): int(pid) for rank, pid in found}


def lingering_shm(before):
    """Segments named after minidp that appeared since ``before`` and are still there after
    ``SHM_SETTLE_SECONDS`` (other jobs on the machine unlink theirs within milliseconds)."""
    deadline = time.monotonic() + SHM_SETTLE_SECONDS
    new = set(shm_files("")) - before
    while new and time.monotonic() < deadline:
        time.sleep(0.1)
        new &= set(shm_files(""))
    return sorted(new)


def live_children():
    """The pids of the test process's descendants that still run (zombies excluded)."""
    alive = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def remove_mpich_segments(output):
    """Remove the MPICH segments that the job's ranks named (``shared file PATH`` lines)."""
    for path in set(re.findall(r"^shared file (\S+)$", output, re.MULTILINE)):
        if os.path.basename(path).startswith("mpich_shm_") and os.path.exists(path):
            os.remove(path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("phase", kill_tasks.PHASES)
def test_sigkill_of_rank_1_ends_the_job_and_leaves_nothing_behind(job_token, tmp_path, front_end, phase):
    before_shm = set(shm_files(""))
    before_children = live_children()  # e.g. multiprocessing's resource tracker of earlier tests
    job = jobs.start(command(front_end, phase, tmp_path), job_token, PADDLE_PG_TIMEOUT=str(PG_TIMEOUT_MS))
    try:
        result = jobs.finish(job, timeout=BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        job.kill()
        remove_mpich_segments(job.communicate()[0])
        pytest.fail(f"{front_end}: the job did not end within {BOUND_SECONDS} s of rank 1 being killed at {phase}")
    remove_mpich_segments(result.stdout)
    output = result.stdout + result.stderr

    pids = rank_pids(result.stdout)
    assert sorted(pids) == [0, 1], output
    returncode, summary = expected_ending(front_end, pids[1])
    assert result.returncode == returncode, output
    for words in summary:
        assert words in output, output

    assert jobs.wait_until_gone(job_token) == []
    assert live_children() - before_children == set()

    targets = [kill_tasks.checkpoint_path(str(tmp_path), rank) for rank in (0, 1)]
    stale = temporaries(tmp_path)
    if phase == "save":
        assert any(f".{pids[1]}." in name for name in stale), stale
    checkpoint = minidp.load(targets[1])
    assert checkpoint["step"] == KILL_STEP - 1
    want = dp_tasks.train_reference({**kill_tasks.SCENARIO, "steps": KILL_STEP}, 2)
    for name, value in want.items():
        np.testing.assert_allclose(checkpoint["model"][name].numpy(), value, rtol=1e-5, atol=1e-6, err_msg=name)
    for target in targets:
        minidp.save(minidp.load(target), target)
    assert sorted(os.listdir(tmp_path)) == ["rank0.ckpt", "rank1.ckpt"]

    assert lingering_shm(before_shm) == []
