"""The documentation runs: every Python block of README.md and docs/*.md executes as written,
and the README's reading order names real files with roughly their real length."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


def python_blocks():
    for page in PAGES:
        for number, match in enumerate(_BLOCK.finditer(page.read_text()), 1):
            code = textwrap.dedent(match["code"])
            yield pytest.param(code, id=f"{page.relative_to(ROOT)}#{number}")


def test_the_pages_have_python_blocks():
    assert len(list(python_blocks())) >= 6


@pytest.mark.parametrize("code", python_blocks())
def test_block_runs(code, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for name in [n for n in env if n.startswith(("PADDLE_", "MASTER_", "OMPI_", "PMI_"))]:
        del env[name]
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def test_the_reading_order_names_real_files_with_their_length():
    rows = re.findall(r"^\| \d+ \| `(?P<path>[^`]+)` \| (?P<lines>\d+) \|", (ROOT / "README.md").read_text(), re.M)
    assert len(rows) >= 10
    for path, stated in rows:
        actual = len((ROOT / path).read_text().splitlines())
        assert abs(actual - int(stated)) <= max(20, int(stated) // 4), (
            f"README says {path} has {stated} lines, it has {actual}: update the reading order"
        )
