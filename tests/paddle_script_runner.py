"""Run a script written for Paddle, unedited, under minidp: ``python -m minidp.run SCRIPT``, or the
launcher with ``--as_paddle`` for the scripts of ``LAUNCHED`` (``import paddle`` gives minidp in
the script and in every Python process it starts, see minidp/run.py).

    python tests/paddle_script_runner.py SCRIPT.py [ARGS...]

runs one script of ``SCRIPTS`` that way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "scripts" / "paddle_scripts"
CORPUS = ROOT / "tests" / "scripts" / "paddle_corpus"  # real public Paddle scripts, each citing its source
LAUNCHED = {"data_parallel.py": 2}  # scripts started by the launcher, with their number of ranks


def parse_result(stdout: str) -> dict:
    """The report a script printed as its last ``RESULT {json}`` line (a launcher may prefix
    the line with the rank)."""
    reports = [line.split("RESULT ", 1)[1] for line in stdout.splitlines() if "RESULT " in line]
    if not reports:
        raise ValueError(f"the script printed no RESULT line; its output was:\n{stdout}")
    return json.loads(reports[-1])


def minidp_env() -> dict:
    """The environment for a run: minidp importable, one BLAS thread, no job of an enclosing
    launcher inherited."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return {k: v for k, v in env.items() if not k.startswith(("PADDLE_", "MASTER_"))}


def paddle_command(nprocs: int = 0) -> List[str]:
    """What ``python`` (``python -m paddle.distributed.launch --nproc_per_node N``) becomes."""
    if nprocs:
        return [sys.executable, "-m", "minidp.distributed.launch", "--nproc_per_node", str(nprocs), "--as_paddle"]
    return [sys.executable, "-m", "minidp.run"]


def run_as_paddle(
    script: Path, args: Sequence[str] = (), nprocs: int = 0, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``script`` unedited on minidp (under the launcher with ``nprocs`` ranks when
    ``nprocs`` is positive) in ``cwd`` and return the finished process, output captured."""
    command = [*paddle_command(nprocs), str(script), *args]
    # its own session, so that a timeout ends the launcher's ranks and any child the script started
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=minidp_env(),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise subprocess.TimeoutExpired(command, timeout, stdout, stderr) from None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


if __name__ == "__main__":
    name = os.path.basename(sys.argv[1])
    done = run_as_paddle(SCRIPTS / name, sys.argv[2:], nprocs=LAUNCHED.get(name, 0))
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)
