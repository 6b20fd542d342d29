"""Test helpers importable from every test file and folder: the modules in ``tests/`` that are
not tests (``gradcheck``, ``dist_utils``, ...) and the per-rank scripts in ``tests/scripts/``."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "scripts")]

from jobs import job_token  # noqa: E402,F401  (the fixture that marks a job's processes)
