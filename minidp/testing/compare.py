"""Compare two golden files tensor by tensor: ``python -m minidp.testing compare A B``."""

from __future__ import annotations

import argparse
import re
import sys
from typing import List, NamedTuple, Optional, Sequence

import numpy

_KEY = re.compile(r"^step(?P<step>\d+)/rank(?P<rank>\d+)/(?P<tensor>.+)$")


class Difference(NamedTuple):
    """The worst difference of one tensor at one step, over every rank."""

    tensor: str
    step: int
    max_abs: float
    max_rel: float
    within: bool
    note: str = ""


def _worst(a: numpy.ndarray, b: numpy.ndarray, rtol: float, atol: float):
    a = a.astype(numpy.float64)
    b = b.astype(numpy.float64)
    diff = numpy.abs(a - b)
    max_abs = float(diff.max()) if diff.size else 0.0
    with numpy.errstate(divide="ignore", invalid="ignore"):
        rel = numpy.where(diff == 0, 0.0, diff / numpy.abs(b))
    max_rel = float(rel.max()) if rel.size else 0.0
    return max_abs, max_rel, bool(numpy.all(diff <= atol + rtol * numpy.abs(b)))


def compare(expected_path: str, actual_path: str, rtol: float = 1e-5, atol: float = 1e-6) -> List[Difference]:
    """One row per (tensor, step) present in both files, worst over ranks, in file order.

    Keys only one file has are not compared; comparing files with no key in common is an error.
    """
    rows: dict = {}
    with (
        numpy.load(expected_path, allow_pickle=False) as expected,
        numpy.load(actual_path, allow_pickle=False) as actual,
    ):
        common = [k for k in expected.files if _KEY.match(k) and k in actual.files]
        if not common:
            raise ValueError(
                f"{expected_path} and {actual_path} have no tensor key in common; "
                "both must use the golden-file keys step{s}/rank{r}/..."
            )
        for key in common:
            match = _KEY.match(key)
            name, step = match["tensor"], int(match["step"])
            a, b = actual[key], expected[key]
            if a.shape != b.shape:
                row = Difference(
                    name, step, float("inf"), float("inf"), False, f"shape {list(a.shape)} != {list(b.shape)}"
                )
            else:
                row = Difference(name, step, *_worst(a, b, rtol, atol))
            previous = rows.get((name, step))
            if previous is None or (row.max_abs, not row.within) > (previous.max_abs, not previous.within):
                rows[(name, step)] = row
    return list(rows.values())


def format_table(rows: Sequence[Difference]) -> str:
    """A fixed-width table, worst first within each step."""
    width = max([len("tensor")] + [len(r.tensor) for r in rows])
    lines = [f"{'step':>4}  {'tensor':<{width}}  {'max abs':>10}  {'max rel':>10}  ok"]
    for r in sorted(rows, key=lambda r: (r.step, -r.max_abs)):
        lines.append(
            f"{r.step:>4}  {r.tensor:<{width}}  {r.max_abs:>10.3g}  {r.max_rel:>10.3g}  "
            f"{'yes' if r.within else 'NO'}{'  ' + r.note if r.note else ''}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minidp.testing", description="Compare a framework's recording with a minidp golden file."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare", help="print the worst difference per tensor and step; exit 1 if any is outside the tolerance"
    )
    cmp.add_argument("golden", help="the reference (minidp's golden .npz)")
    cmp.add_argument("theirs", help="the recording to check, with the same keys")
    cmp.add_argument("--rtol", type=float, default=1e-5)
    cmp.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args(argv)
    try:
        rows = compare(args.golden, args.theirs, args.rtol, args.atol)
    except (OSError, ValueError) as error:
        print(f"compare: {error}", file=sys.stderr)
        return 2
    print(format_table(rows))
    bad = [r for r in rows if not r.within]
    print(f"{len(rows) - len(bad)} of {len(rows)} tensors within rtol={args.rtol:g}, atol={args.atol:g}")
    return 1 if bad else 0
