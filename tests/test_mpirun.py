"""A bare ``mpirun -n N python train.py`` (the pip-installed MPICH of the ``mpi`` extra)."""

import importlib.util
import sys

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
