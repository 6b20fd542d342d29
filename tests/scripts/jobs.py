"""Helpers for the launcher tests: run jobs, read their reports, find what they left behind.

Every job a test starts carries a unique token in its environment (``MINIDP_TEST_JOB``), which
every process of the job inherits; :func:`job_processes` finds them by it, so a test can check
that nothing outlived the job and kill whatever did.
"""

import hashlib
import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import psutil
import pytest

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent.parent
RANK_TASKS = SCRIPTS / "rank_tasks.py"
TOKEN_VARIABLE = "MINIDP_TEST_JOB"
# Variables a test job must not inherit from the test process: those of an enclosing job, and
# OMP_NUM_THREADS, which the launcher sets itself unless given (and the benchmark modules that
# some tests import set in the test process).
_JOB_VARIABLE_PREFIXES = (
    "PADDLE_",
    "MASTER_",
    "FLAGS_selected",
    "OMPI_",
    "PMI_",
    "PMIX_",
    "MPI_LOCALRANKID",
    "SLURM_",
    "HYDRA_",
    "MINIDP_JOB_SECRET",
    "OMP_NUM_THREADS",
)


def job_environment(token: str, **extra: str) -> Dict[str, str]:
    """This process's environment without any job variables, plus the token and ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_JOB_VARIABLE_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env[TOKEN_VARIABLE] = token
    env.update(extra)
    return env


def start(command: Sequence[str], token: str, own_group: bool = False, **extra: str) -> subprocess.Popen:
    """Start ``command`` as a job marked with ``token``; stdout and stderr are captured. With
    ``own_group`` it leads a process group of its own, which a test may signal as a terminal does."""
    return subprocess.Popen(
        list(command),
        env=job_environment(token, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=own_group,
    )


def finish(process: subprocess.Popen, timeout: float = 60) -> subprocess.CompletedProcess:
    """Wait for a job started by :func:`start` and collect its output."""
    out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def reports(text: str) -> List[Dict[str, Any]]:
    """Every ``RESULT {json}`` line in ``text`` (after any ``[rank N]`` prefix), by rank."""
    found = [json.loads(match) for match in re.findall(r"^(?:\[rank \d+\] )?RESULT (.*)$", text, re.MULTILINE)]
    return sorted(found, key=lambda report: report["rank"])


def check_reports(found: List[Dict[str, Any]], world_size: int, backend: Optional[str] = None) -> None:
    """Assert that ``world_size`` ranks each reported a consistent view of the job."""
    assert [report["rank"] for report in found] == list(range(world_size))
    endpoints = found[0]["trainer_endpoints"]
    assert len(endpoints) == len(set(endpoints)) == world_size
    expected_sum = [world_size * i + sum(range(world_size)) for i in range(4)]
    for rank, report in enumerate(found):
        assert report["world_size"] == report["env_world_size"] == world_size
        assert report["env_rank"] == rank
        assert report["trainer_endpoints"] == endpoints
        assert report["current_endpoint"] == endpoints[rank]
        assert report["all_reduce"] == expected_sum
        if backend is not None:
            assert report["backend"] == backend
        # every job has a secret (spawn, the launcher, or rank 0 over MPI), the same on each rank
        assert report["secret_digest"] == found[0]["secret_digest"] != hashlib.sha256().hexdigest()


def job_processes(token: str) -> List[psutil.Process]:
    """Live processes (not zombies) whose environment carries ``token``."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(TOKEN_VARIABLE) == token and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_until_gone(token: str, timeout: float = 10) -> List[psutil.Process]:
    """Wait for the job's processes to end; return those still alive after ``timeout``."""
    _, alive = psutil.wait_procs(job_processes(token), timeout=timeout)
    return [process for process in alive if process.is_running() and process.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture
def job_token() -> Iterator[str]:
    """A fresh job token; whatever still carries it when the test ends is killed."""
    token = uuid.uuid4().hex
    yield token
    for process in job_processes(token):
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
