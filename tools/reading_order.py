"""The README's reading order of the core: every file of ``minidp/core``, in the order a learner
reads them, with its real length.

The table lives in README.md (section "Reading the core"); its order and its "what it teaches"
column are written by hand, its line counts and its total are computed. ``tests/test_docs.py``
fails when the table misses a file of the core, names one that is not there, or states a length
that is no longer true; this tool rewrites the counts in place.

Usage: python tools/reading_order.py [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CORE = ROOT / "minidp" / "core"
ROW = re.compile(r"^\| (?P<step>\d+) \| `(?P<path>[^`]+)` \| (?P<lines>\d+) \| (?P<what>.*) \|$", re.M)
TOTAL = re.compile(r"^\| \| \*\*the core\*\* \| (?P<lines>\d+) \| (?P<what>.*) \|$", re.M)


class Row(NamedTuple):
    step: int
    path: str
    lines: int
    what: str


def table_rows(text: str) -> List[Row]:
    """The rows of the reading order in README ``text``."""
    return [Row(int(m["step"]), m["path"], int(m["lines"]), m["what"]) for m in ROW.finditer(text)]


def line_count(path: str) -> int:
    return len((ROOT / path).read_text().splitlines())


def core_files() -> List[str]:
    """Every Python file of the core, as a path from the repository root."""
    return sorted(str(path.relative_to(ROOT)) for path in CORE.rglob("*.py"))


def problems(text: str) -> List[str]:
    """What is untrue in the table of README ``text`` (empty when it is right)."""
    rows = table_rows(text)
    named = [row.path for row in rows]
    found = [f"{path} is in the core but not in the reading order" for path in core_files() if path not in named]
    found += [f"{path} is in the reading order but not in minidp/core" for path in named if path not in core_files()]
    found += [f"{path} is listed twice" for path in sorted({p for p in named if named.count(p) > 1})]
    found += [
        f"{row.path} is said to have {row.lines} lines, it has {line_count(row.path)}"
        for row in rows
        if (ROOT / row.path).exists() and row.lines != line_count(row.path)
    ]
    if [row.step for row in rows] != list(range(1, len(rows) + 1)):
        found.append("the steps are not numbered 1, 2, 3, ... in order")
    total = TOTAL.search(text)
    real_total = sum(line_count(path) for path in named if (ROOT / path).exists())
    if total is None:
        found.append("the total row ('| | **the core** | N | ... |') is missing")
    elif int(total["lines"]) != real_total:
        found.append(f"the total says {total['lines']} lines, the files listed have {real_total}")
    return found


def refreshed(text: str) -> str:
    """README ``text`` with every count and the total recomputed."""
    text = ROW.sub(lambda m: f"| {m['step']} | `{m['path']}` | {line_count(m['path'])} | {m['what']} |", text)
    total = sum(line_count(row.path) for row in table_rows(text))
    return TOTAL.sub(lambda m: f"| | **the core** | {total} | {m['what']} |", text)


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report what is stale; exit 1 if anything is")
    args = parser.parse_args(argv)
    text = README.read_text()
    if not args.check:
        text = refreshed(text)
        README.write_text(text)
    found = problems(text)
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
