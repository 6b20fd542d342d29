"""tools/command_line.py: every tool in tools/ answers ``--help`` with its usage and exit code 0,
even where its optional dependencies (Paddle, torch, matplotlib) cannot be imported."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = sorted((ROOT / "tools").glob("*.py"))
BLOCKED = ("paddle", "torch", "matplotlib")


@pytest.fixture(scope="module")
def without_optional_dependencies(tmp_path_factory):
    """An environment where importing Paddle, torch or matplotlib fails, as where none is installed."""
    blockers = tmp_path_factory.mktemp("blockers")
    for name in BLOCKED:
        (blockers / f"{name}.py").write_text(f"raise ImportError('{name} is not installed here')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(blockers), str(ROOT)])}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])
def test_every_tool_answers_help_without_its_optional_dependencies(tool, without_optional_dependencies):
    result = subprocess.run(
        [sys.executable, str(tool), "--help"],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=ROOT,
        env=without_optional_dependencies,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: "), result.stdout + result.stderr
