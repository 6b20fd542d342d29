"""Record what the Paddle scripts of ``tests/scripts/paddle_scripts`` report under Paddle itself
(``--corpus``: the real public scripts of ``tests/scripts/paddle_corpus``).

Run by hand with an interpreter that has Paddle (kept in its own virtual environment; minidp
never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_scripts.py

Each script prints one ``RESULT`` JSON line; ``data_parallel.py`` runs on 2 CPU ranks under
``python -m paddle.distributed.launch`` (rank 0 prints it). The reports are stored in
``tests/fixtures/paddle_scripts_3.3.1.json``, which ``tests/test_paddle_scripts.py`` compares
minidp's runs of the same scripts against; with ``--corpus`` the corpus's reports go to
``tests/fixtures/paddle_corpus_3.3.1.json`` instead (each corpus script runs as ``python SCRIPT``).
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
from paddle_script_runner import CORPUS, LAUNCHED, SCRIPTS, parse_result  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_scripts_3.3.1.json"
CORPUS_OUT = ROOT / "tests" / "fixtures" / "paddle_corpus_3.3.1.json"


def run_under_paddle(script: Path) -> dict:
    """The script's ``RESULT`` report, run by this interpreter (which must have Paddle)."""
    if script.name in LAUNCHED:
        log_dir = tempfile.mkdtemp(prefix="paddle_launch_")
        command = [
            sys.executable,
            "-m",
            "paddle.distributed.launch",
            "--log_dir",
            log_dir,
            "--nproc_per_node",
            str(LAUNCHED[script.name]),
            str(script),
        ]
    else:
        command = [sys.executable, str(script)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=tempfile.mkdtemp(prefix="paddle_run_")
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed under Paddle:\n{done.stdout}\n{done.stderr}")
    return parse_result(done.stdout)


def main() -> None:
    import paddle

    folder, out = (CORPUS, CORPUS_OUT) if "--corpus" in sys.argv[1:] else (SCRIPTS, OUT)
    reports = {"paddle_version": paddle.__version__}
    for script in sorted(folder.glob("*.py")):
        reports[script.name] = run_under_paddle(script)
        print(f"recorded {script.name}")
    out.write_text(json.dumps(reports, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
