"""Run a script written for Paddle under minidp: the import statements are the only change.

``to_minidp(source)`` rewrites each import of ``paddle`` to the same import of ``minidp``, binding
the same names (``import paddle`` becomes ``import minidp as paddle``, ``import paddle.nn as nn``
becomes ``import minidp.nn as nn``, ``from paddle.io import X`` becomes ``from minidp.io import
X``); the rest of the text, and so every ``paddle.`` call, is left as the user wrote it. A command
line ``python -m paddle.distributed.launch`` likewise becomes minidp's launcher.

    python tests/paddle_script_runner.py SCRIPT.py [ARGS...]

runs one script that way (the translated copy is written to a temporary directory, so a script
that starts itself again, or is started by the launcher, runs translated too); the scripts of
``LAUNCHED`` run under minidp's launcher.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Sequence

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "scripts" / "paddle_scripts"
LAUNCHED = {"data_parallel.py": 2}  # scripts started by the launcher, with their number of ranks

_IMPORT_AS = re.compile(r"^(\s*)import paddle((?:\.\w+)*) as (\w+)\s*$")
_IMPORT = re.compile(r"^(\s*)import paddle\s*$")
_FROM = re.compile(r"^(\s*)from paddle((?:\.\w+)*) import (.+)$")


def to_minidp(source: str) -> str:
    """The script with its ``paddle`` imports turned into the same imports of ``minidp``."""
    lines = []
    for number, line in enumerate(source.splitlines(), 1):
        if _IMPORT.match(line):
            line = _IMPORT.sub(r"\1import minidp as paddle", line)
        elif _IMPORT_AS.match(line):
            line = _IMPORT_AS.sub(r"\1import minidp\2 as \3", line)
        elif _FROM.match(line):
            line = _FROM.sub(r"\1from minidp\2 import \3", line)
        elif re.match(r"^\s*(import|from)\s+paddle\b", line):
            raise ValueError(
                f"line {number}: cannot translate {line.strip()!r}; write 'import paddle', "
                f"'import paddle.X as Y' or 'from paddle.X import Y'"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


def parse_result(stdout: str) -> dict:
    """The report a script printed as its last ``RESULT {json}`` line (a launcher may prefix
    the line with the rank)."""
    reports = [line.split("RESULT ", 1)[1] for line in stdout.splitlines() if "RESULT " in line]
    if not reports:
        raise ValueError(f"the script printed no RESULT line; its output was:\n{stdout}")
    return json.loads(reports[-1])


def translate_all(directory: Path) -> Path:
    """Write the translated copy of every script of ``SCRIPTS`` to ``directory``; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    for script in SCRIPTS.glob("*.py"):
        (directory / script.name).write_text(to_minidp(script.read_text()))
    return directory


def minidp_env() -> dict:
    """The environment for a translated script: minidp importable, one BLAS thread, no job of
    an enclosing launcher inherited."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return {k: v for k, v in env.items() if not k.startswith(("PADDLE_", "MASTER_"))}


def launcher_command(nprocs: int) -> List[str]:
    """What ``python -m paddle.distributed.launch --nproc_per_node N`` becomes."""
    return [sys.executable, "-m", "minidp.distributed.launch", "--nproc_per_node", str(nprocs)]


def run_translated(
    script: str, args: Sequence[str] = (), nprocs: int = 0, timeout: float = 120, workdir: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``SCRIPTS/script`` translated to minidp (under the launcher with ``nprocs`` ranks
    when ``nprocs`` is positive) and return the finished process, output captured."""
    workdir = translate_all(Path(workdir or tempfile.mkdtemp(prefix="paddle_scripts_")))
    command = (launcher_command(nprocs) if nprocs else [sys.executable]) + [str(workdir / script), *args]
    # its own session, so that a timeout ends the launcher's ranks and any child the script started
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=minidp_env(),
        cwd=workdir,
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
    done = run_translated(name, sys.argv[2:], nprocs=LAUNCHED.get(name, 0))
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)
