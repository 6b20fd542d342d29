"""Test helpers importable from every test file and folder: the modules in ``tests/`` that are
not tests (``gradcheck``, ``dist_utils``, ...), the per-rank scripts in ``tests/scripts/`` and
the tools in ``tools/`` (benchmarks, report, kernel checks, API coverage); and the fixtures
that test files of several modules share."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "scripts"), str(HERE.parent / "tools")]

from jobs import job_token  # noqa: E402,F401  (the fixture that marks a job's processes)


@pytest.fixture
def clean_env(monkeypatch):
    """No job variables: init_parallel_env sees a process outside any launcher."""
    for name in (
        "PADDLE_TRAINER_ID",
        "PADDLE_TRAINERS_NUM",
        "PADDLE_TRAINER_ENDPOINTS",
        "PADDLE_CURRENT_ENDPOINT",
        "PADDLE_MASTER",
        "MASTER_ADDR",
        "MASTER_PORT",
        "PADDLE_DISTRI_BACKEND",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch
