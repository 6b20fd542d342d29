"""Record what ``tests/scripts/unedited_paddle.py`` reports under Paddle itself, for ``tests/test_run.py``.

Run by hand with an interpreter that has Paddle (kept in its own virtual environment; minidp
never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_run.py

The script runs once as ``python unedited_paddle.py`` and once on 2 CPU ranks under
``python -m paddle.distributed.launch``; both ``RESULT`` reports go to
``tests/fixtures/paddle_run_3.3.1.json``. ``tests/test_run.py`` runs the very same file, unedited,
through ``python -m minidp.run`` and minidp's launcher and compares.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from paddle_script_runner import parse_result  # noqa: E402

SCRIPT = ROOT / "tests" / "scripts" / "unedited_paddle.py"
OUT = ROOT / "tests" / "fixtures" / "paddle_run_3.3.1.json"
LAUNCH = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir"]


def report(command: list) -> dict:
    """The ``RESULT`` report of ``command``, run in a scratch directory."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed under Paddle:\n{done.stdout}\n{done.stderr}")
    return parse_result(done.stdout)


def main() -> None:
    import paddle

    reports = {
        "paddle_version": paddle.__version__,
        "one_process": report([sys.executable, str(SCRIPT)]),
        "two_ranks": report([*LAUNCH, tempfile.mkdtemp(prefix="paddle_launch_"), str(SCRIPT)]),
    }
    OUT.write_text(json.dumps(reports, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
