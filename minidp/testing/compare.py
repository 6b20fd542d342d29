"""Compare two golden files tensor by tensor: ``python -m minidp.testing compare A B``."""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
from typing import List, NamedTuple, Optional, Sequence

import numpy

_KEY = re.compile(r"^step(?P<step>\d+)/rank(?P<rank>\d+)/(?P<tensor>.+)$")
_MANIFEST = "__manifest__"


class Difference(NamedTuple):
    """The worst difference of one tensor at one step, over every rank (``step`` None for the
    starting parameters, ``init/param/*``)."""

    tensor: str
    step: Optional[int]
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


def selected_keys(golden_keys: Sequence[str], only: Sequence[str] = ()) -> List[str]:
    """The golden file's tensor keys a comparison checks: all of them (every key but the manifest,
    ``init/param/*`` included), or with ``only`` those matching one of its glob patterns (a
    pattern matching none is an error: a typo must not shrink the check to nothing)."""
    keys = [k for k in golden_keys if k != _MANIFEST]
    if not only:
        return keys
    for pattern in only:
        if not fnmatch.filter(keys, pattern):
            raise ValueError(f"--only {pattern!r} matches none of the golden file's {len(keys)} tensor keys")
    return [k for k in keys if any(fnmatch.fnmatchcase(k, pattern) for pattern in only)]


def compare(
    expected_path: str, actual_path: str, rtol: float = 1e-5, atol: float = 1e-6, only: Sequence[str] = ()
) -> List[Difference]:
    """One row per (tensor, step) of the golden file ``expected_path``, worst over ranks, in file order.

    Every tensor of the golden file is checked (see :func:`selected_keys` for ``only``, a named
    subset); one that ``actual_path`` lacks is an error, so a recording cannot pass by holding
    only some of them.
    """
    rows: dict = {}
    with (
        numpy.load(expected_path, allow_pickle=False) as expected,
        numpy.load(actual_path, allow_pickle=False) as actual,
    ):
        keys = selected_keys(expected.files, only)
        missing = [k for k in keys if k not in actual.files]
        if missing:
            raise ValueError(
                f"{actual_path} lacks {len(missing)} of the {len(keys)} tensors to check in {expected_path} "
                f"(first: {', '.join(missing[:3])}); record every key of the golden file, or name the ones "
                "you record with --only PATTERN"
            )
        for key in keys:
            match = _KEY.match(key)
            name, step = (match["tensor"], int(match["step"])) if match else (key, None)
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
    """A fixed-width table: the starting parameters first, then worst first within each step."""
    width = max([len("tensor")] + [len(r.tensor) for r in rows])
    lines = [f"{'step':>4}  {'tensor':<{width}}  {'max abs':>10}  {'max rel':>10}  ok"]
    for r in sorted(rows, key=lambda r: (-1 if r.step is None else r.step, -r.max_abs)):
        lines.append(
            f"{'init' if r.step is None else r.step:>4}  {r.tensor:<{width}}  {r.max_abs:>10.3g}  {r.max_rel:>10.3g}  "
            f"{'yes' if r.within else 'NO'}{'  ' + r.note if r.note else ''}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minidp.testing", description="Compare a framework's recording with a minidp golden file."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare",
        help="print the worst difference per tensor and step; exit 1 if any is outside the tolerance, "
        "2 if the recording lacks a tensor of the golden file",
    )
    cmp.add_argument("golden", help="the reference (minidp's golden .npz)")
    cmp.add_argument("theirs", help="the recording to check, with every key of the golden file")
    cmp.add_argument("--rtol", type=float, default=1e-5)
    cmp.add_argument("--atol", type=float, default=1e-6)
    cmp.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="check only the golden keys matching this glob (e.g. 'step*/rank*/param/*'); repeatable",
    )
    args = parser.parse_args(argv)
    try:
        rows = compare(args.golden, args.theirs, args.rtol, args.atol, args.only)
        with numpy.load(args.golden, allow_pickle=False) as golden:
            total, checked = len(selected_keys(golden.files)), len(selected_keys(golden.files, args.only))
    except (OSError, ValueError) as error:
        print(f"compare: {error}", file=sys.stderr)
        return 2
    print(format_table(rows))
    bad = [r for r in rows if not r.within]
    tolerance = f"rtol={args.rtol:g}, atol={args.atol:g}"
    subset = f" (--only {' '.join(args.only)})" if args.only else ""
    verdict = f"{len(bad)} of {len(rows)} rows outside {tolerance}" if bad else f"all within {tolerance}"
    print(f"{checked} of {total} tensors checked{subset}, {verdict}")
    return 1 if bad else 0
