"""The documentation runs: every Python block of README.md and docs/*.md executes as written,
its links and the repository files it names exist, and the README's reading order lists every
file of the core with its true length (tools/reading_order.py)."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import reading_order

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)
# a relative Markdown link's target (anchors dropped); links with a scheme (https:, mailto:) are skipped
_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)(?P<target>[^)#\s]*)[^)]*\)")
# a path under a top-level folder of the repository, as named in backticks
_REPO_PATH = re.compile(r"(?<![\w./*-])(?:minidp|tests|tools|examples|docs)/[\w./*-]*(?![\w./*-])")


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


def test_the_reading_order_is_the_whole_core_with_true_lengths():
    text = (ROOT / "README.md").read_text()
    assert len(reading_order.table_rows(text)) >= 10
    found = reading_order.problems(text)
    assert not found, "README's reading order is stale (python tools/reading_order.py refreshes the counts):\n" + (
        "\n".join(found)
    )


def test_the_reading_order_check_sees_a_stale_count_and_a_missing_file():
    text = (ROOT / "README.md").read_text()
    first = reading_order.table_rows(text)[0]
    stale = text.replace(f"| `{first.path}` | {first.lines} |", f"| `{first.path}` | {first.lines + 1} |")
    assert any("is said to have" in problem for problem in reading_order.problems(stale))
    missing = text.replace(f"`{first.path}`", "`minidp/core/nothing.py`")
    assert any(f"{first.path} is in the core but not" in problem for problem in reading_order.problems(missing))
    assert not reading_order.problems(reading_order.refreshed(stale))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(page):
    targets = [match["target"] for match in _LINK.finditer(page.read_text()) if match["target"]]
    missing = [target for target in targets if not (page.parent / target).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_repository_file_named_in_backticks_exists(page):
    spans = re.findall(r"`([^`\n]+)`", page.read_text())
    paths = [path for span in spans for path in _REPO_PATH.findall(span)]
    # files only (a suffix or a glob in the last part): folders such as tools/out/ may be made by a run
    named = [path for path in paths if re.search(r"[.*][^/]*$", path)]
    missing = [path for path in named if not any(ROOT.glob(path))]
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist (moved or renamed?): {missing}"


def test_every_environment_variable_minidp_reads_is_in_docs_environment_md():
    # Every quoted MINIDP_*/PADDLE_* name in minidp's code: read directly (os.environ[...],
    # os.environ.get, os.getenv) or through a constant such as SECRET_ENV = "MINIDP_JOB_SECRET".
    # A quoted name that is also a Python constant of its module (PADDLE_API_VERSION in __all__)
    # is not an environment variable.
    names = set()
    for path in (ROOT / "minidp").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        constants = set(re.findall(r"^(\w+)\s*[:=]", text, re.MULTILINE))
        names |= {name for name in re.findall(r"[\"']((?:MINIDP|PADDLE)_[A-Z0-9_]+)[\"']", text)} - constants
    listed = set(re.findall(r"`((?:MINIDP|PADDLE)_[A-Z0-9_]+)`", (ROOT / "docs" / "environment.md").read_text()))
    assert "MINIDP_JOB_SECRET" in names and "PADDLE_PG_TIMEOUT" in names
    missing = sorted(names - listed)
    assert not missing, f"docs/environment.md does not list {missing}: add each with its default and meaning"
