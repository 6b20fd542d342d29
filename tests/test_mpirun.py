"""A bare ``mpirun -n N python train.py`` (the pip-installed MPICH of the ``mpi`` extra)."""

import importlib.util
import sys
import time

import pytest


import jobs
from dist_utils import find_mpiexec

MPIEXEC = find_mpiexec()

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(
        importlib.util.find_spec("mpi4py") is None, reason="mpi4py is not installed (pip install 'minidp[mpi]')"
    ),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec next to Python or on PATH (pip install 'minidp[mpi]')"),
]


def mpirun(ranks: int, token: str, *script_args: str, **env: str):
    return jobs.start([MPIEXEC, "-n", str(ranks), sys.executable, str(jobs.RANK_TASKS), *script_args], token, **env)


@pytest.mark.timeout(90)
def test_two_jobs_of_two_and_three_ranks_at_once(job_token):
    # The default backend under mpirun is mpi; the gloo job needs rank 0's endpoint, which
    # init_parallel_env shares over MPI.
    two = mpirun(2, job_token)
    three = mpirun(3, job_token, PADDLE_DISTRI_BACKEND="gloo")
    for process, world_size, backend in ((two, 2, "mpi"), (three, 3, "gloo")):
        result = jobs.finish(process)
        assert result.returncode == 0, result.stdout + result.stderr
        jobs.check_reports(jobs.reports(result.stdout), world_size, backend)
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("backend", ["mpi", "gloo"])
def test_a_failing_rank_stops_the_job(job_token, backend):
    result = jobs.finish(mpirun(2, job_token, "--fail-rank", "1", PADDLE_DISTRI_BACKEND=backend))
    assert result.returncode != 0
    assert "ValueError: rank 1 fails on purpose" in result.stdout + result.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_spawn_inside_an_mpirun_job_runs_as_that_rank(job_token):
    result = jobs.finish(mpirun(2, job_token, "--spawn"))
    assert result.returncode == 0, result.stdout + result.stderr
    jobs.check_reports(jobs.reports(result.stdout), 2, "mpi")
    assert (result.stdout + result.stderr).count("already is rank") == 2
    assert jobs.wait_until_gone(job_token) == []


ONE_EXTRA_ALL_REDUCE = """
import numpy, minidp, minidp.distributed as dist
dist.init_parallel_env()
tensor = minidp.to_tensor(numpy.ones(4, numpy.float32))
for _ in range(1 + dist.get_rank()):
    dist.all_reduce(tensor)
"""


@pytest.mark.timeout(60)
def test_a_rank_left_waiting_warns_then_fails_naming_the_peer_and_the_job_ends(job_token):
    # Rank 1 all-reduces once more while rank 0 finishes: rank 1 must say it waits for rank 0,
    # then fail at the group timeout naming it, instead of waiting silently.
    started = time.monotonic()
    result = jobs.finish(
        jobs.start(
            [MPIEXEC, "-n", "2", sys.executable, "-c", ONE_EXTRA_ALL_REDUCE],
            job_token,
            MINIDP_STALL_WARNING_SECONDS="1",
            PADDLE_PG_TIMEOUT="3000",
        )
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    prefix = "mpi all_reduce on group 'default' at rank 1"
    warning = output.index(f"{prefix} has waited 1 s for rank 0, which has not reached it")
    failure = output.index(f"PeerFailedError: {prefix}: timed out waiting for rank 0 (group timeout 3 s)")
    assert warning < failure
    assert time.monotonic() - started < 30
    assert jobs.wait_until_gone(job_token) == []
