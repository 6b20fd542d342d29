"""The kernel checks that live in tools/: the compile gate and the sanitizer run.

Each tool exits 0 when everything it checked passed and 3 when it could check nothing here (no
compiler); the test then skips with the tool's own reason.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
NOTHING_CHECKED = 3


def run_tool(name: str) -> str:
    """Run ``tools/<name>``; skip if it checked nothing, fail if it failed; return its output."""
    result = subprocess.run([sys.executable, str(TOOLS / name)], capture_output=True, text=True,
                            timeout=280)
    output = result.stdout + result.stderr
    if result.returncode == NOTHING_CHECKED:
        pytest.skip(output.strip())
    assert result.returncode == 0, output[-5000:]
    return output


@pytest.mark.timeout(300)
def test_every_kernel_compiles_for_sm80_and_sm90_without_warnings():
    output = run_tool("check_kernels.py")
    assert "PASS nvrtc" in output or "PASS nvcc" in output, output


@pytest.mark.timeout(300)
def test_kernels_run_clean_under_address_and_undefined_behaviour_sanitizers():
    output = run_tool("kernels_sanitize.py")
    assert "self-check: ASan reports a kernel's heap overflow" in output
    assert " passed" in output and " failed" not in output, output[-5000:]
