"""The host-executed kernel tests pass under AddressSanitizer and UndefinedBehaviorSanitizer."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "kernels_sanitize.py"
NOTHING_CHECKED = 3


@pytest.mark.timeout(300)
def test_kernels_run_clean_under_address_and_undefined_behaviour_sanitizers():
    result = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True,
                            timeout=280)
    output = result.stdout + result.stderr
    if result.returncode == NOTHING_CHECKED:
        pytest.skip(output.strip())
    assert result.returncode == 0, output[-5000:]
    assert "self-check: ASan reports a kernel's heap overflow" in output
    assert " passed" in output and " failed" not in output, output[-5000:]
