"""MINIDP_LOG_LEVEL switches on minidp's logging, with the rank in every line."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "MINIDP_", "OMPI_", "PMI_"))}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, clean.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=dict(clean, **env)
    )


LOG_TWO_LINES = (
    "import logging, minidp; log = logging.getLogger('minidp.distributed'); "
    "log.debug('bucket layout'); log.info('ready')"
)


def test_debug_level_prints_every_line_with_the_rank():
    done = run(LOG_TWO_LINES, MINIDP_LOG_LEVEL="debug", PADDLE_TRAINER_ID="3")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert all(" rank 3 minidp.distributed " in line for line in lines)
    assert lines[0].endswith("DEBUG: bucket layout") and lines[1].endswith("INFO: ready")


def test_info_level_hides_debug_lines():
    done = run(LOG_TWO_LINES, MINIDP_LOG_LEVEL="INFO")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [line for line in done.stderr.splitlines() if "ready" in line]
    assert " rank - " in done.stderr


def test_unset_prints_nothing():
    done = run(LOG_TWO_LINES)
    assert done.returncode == 0 and done.stderr == ""


def test_a_bad_level_names_the_variable_and_the_choices():
    done = run("import minidp", MINIDP_LOG_LEVEL="LOUD")
    assert done.returncode != 0
    assert "MINIDP_LOG_LEVEL='LOUD' is not a logging level" in done.stderr
    assert "DEBUG, INFO" in done.stderr
