"""Benchmark report: runs the benchmarks and writes docs/benchmarks.md with their tables and plots.

Runs, each as a subprocess so that its own timing logic and process handling are used as is:
  tools/bench_engine.py       engine step time against hand-written NumPy (and PyTorch);
  tools/bench_collectives.py  all-reduce bandwidth against message size (--json, --plot);
  tools/bench_dp.py           data-parallel step time and exposed communication (--json, --plot),
                              and with --sweep both against bucket size and world size.
The tables are rendered from the JSON by the benchmarks' own ``report`` functions, under a
description of the run (date, commit) and of the machine (with its load before and after).
PyTorch rows appear when torch is importable; Paddle lives in a separate environment and is never
imported here. Without matplotlib the report is written all the same, and says that its plots
were not drawn. ``--include FILE`` appends a Markdown section made elsewhere, e.g. the model
table of ``tools/bench_models.py --markdown`` or the sharding tables of
``tools/bench_sharding.py section``, under its own heading.

A full run writes docs/benchmarks.md (and its plots beside it) unless ``--out`` says otherwise; a
``--quick`` run writes into a new temporary folder unless ``--out`` is given, so trying the report
never replaces the committed page with noisy figures.

Usage: python tools/report.py [--quick] [--out PAGE.md] [--include SECTION.md ...]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
PAGE = REPO / "docs" / "benchmarks.md"
sys.path.insert(0, str(TOOLS))

import bench_collectives  # noqa: E402
import bench_dp  # noqa: E402
from bench_timing import pyplot  # noqa: E402

# (collective sizes, collective rounds, dp steps, dp rounds, engine repeats, sweep steps and rounds)
# per mode; the sweep covers bench_dp's default world sizes and bucket sizes in both
SETTINGS = {
    "quick": {
        "sizes": "4K,256K,4M",
        "collective_rounds": 1,
        "steps": 20,
        "dp_rounds": 1,
        "repeat": 2,
        "sweep_steps": 20,
        "sweep_rounds": 1,
    },
    "full": {
        "sizes": bench_collectives.DEFAULT_SIZES,
        "collective_rounds": 2,
        "steps": 60,
        "dp_rounds": 3,
        "repeat": 5,
        "sweep_steps": 60,
        "sweep_rounds": 3,
    },
}


def load_average() -> str:
    """The 1, 5 and 15 minute load averages now (other work on a shared machine skews timings)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit_description() -> str:
    """The commit the run measures (``git rev-parse --short HEAD``), saying when the working tree
    has uncommitted changes to tracked files; "unknown" outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30
        )
        changes = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (git did not answer)"
    if head.returncode != 0 or not head.stdout.strip():
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes" if changes.stdout.strip() else "")


def run_description() -> Dict[str, str]:
    """When the run started (UTC) and the commit it measures."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return {"date": now.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit_description()}


def included_section(path: Path) -> str:
    """The Markdown section in ``path``, under its own heading: the file's first line when it is a
    heading (``tools/bench_models.py --markdown`` starts with one), else ``## <file name>``.
    ``SystemExit`` naming the file when it cannot be read or is empty."""
    try:
        text = path.read_text().strip()
    except OSError as error:
        raise SystemExit(f"--include {path}: cannot read it ({error.strerror})") from None
    if not text:
        raise SystemExit(f"--include {path}: the file is empty; make the section first")
    if text.startswith("#"):
        return text
    return f"## {path.name}\n\n{text}"


def machine_description() -> Dict[str, str]:
    """CPU model, core count, Python/NumPy (and PyTorch) versions, and the load average now."""
    model = platform.processor() or "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    info = {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load average": load_average(),
    }
    if importlib.util.find_spec("torch") is not None:
        import torch

        info["pytorch"] = torch.__version__
    return info


TOOL_TIMEOUT = 3600  # seconds one benchmark may take before the report gives up on it


def run_tool(args: List[str]) -> str:
    """Run one benchmark script from the repository root and return its standard output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    try:
        done = subprocess.run(
            [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT
        )
    except subprocess.TimeoutExpired as error:
        raise SystemExit(f"{' '.join(args)} did not finish within {TOOL_TIMEOUT} s:\n{error.stdout}") from None
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def run_benchmarks(settings: dict, docs: Path) -> dict:
    """Run the three benchmarks and collect what render() needs; plots are written into ``docs``."""
    with tempfile.TemporaryDirectory() as scratch:
        collectives_json = os.path.join(scratch, "collectives.json")
        dp_json = os.path.join(scratch, "dp.json")
        sweep_json = os.path.join(scratch, "sweep.json")
        engine = run_tool(["tools/bench_engine.py", "--repeat", str(settings["repeat"])])
        run_tool(
            [
                "tools/bench_collectives.py",
                "--sizes",
                settings["sizes"],
                "--rounds",
                str(settings["collective_rounds"]),
                "--json",
                collectives_json,
                "--plot",
                str(docs / "bench_collectives.png"),
            ]
        )
        block = max(1, settings["steps"] // 4)
        run_tool(
            [
                "tools/bench_dp.py",
                "--steps",
                str(settings["steps"]),
                "--block",
                str(block),
                "--rounds",
                str(settings["dp_rounds"]),
                "--json",
                dp_json,
                "--plot",
                str(docs / "bench_dp.png"),
            ]
        )
        run_tool(
            [
                "tools/bench_dp.py",
                "--sweep",
                "--steps",
                str(settings["sweep_steps"]),
                "--rounds",
                str(settings["sweep_rounds"]),
                "--json",
                sweep_json,
                "--plot",
                str(docs / "bench_dp_sweep.png"),
            ]
        )
        collectives = json.loads(Path(collectives_json).read_text())
        dp = json.loads(Path(dp_json).read_text())
        sweep = json.loads(Path(sweep_json).read_text())
    sizes = [bench_collectives.parse_size(s) for s in settings["sizes"].split(",")]
    return {
        "engine": engine,
        "collectives": {"nprocs": 2, "sizes": sizes, "results": collectives},
        "dp": dict(dp, rounds=settings["dp_rounds"], block=block),
        "dp_sweep": sweep,
        "plots": pyplot() is not None,
    }


def figure(alt: str, file: str, plots: bool) -> str:
    """The Markdown image of a plot, or a note that it was not drawn (matplotlib missing)."""
    if plots:
        return f"![{alt}]({file})"
    return f"({alt}: plot not drawn, matplotlib is not installed; `pip install -e '.[bench]'` adds it)"


def render(machine: Dict[str, str], results: dict, mode: str, sections: Sequence[str] = ()) -> str:
    """The Markdown of docs/benchmarks.md from a description of the run and the machine, the
    benchmarks' results and the extra ``sections`` (Markdown, each under its own heading)."""
    collectives = results["collectives"]
    timings = {
        name: {int(size): seconds for size, seconds in by_size.items()}
        for name, by_size in collectives["results"].items()
    }
    dp = results["dp"]
    plots = results["plots"]
    dp_tables, _ = bench_dp.report(dp["results"], dp["skipped"], dp["failed"], dp["rounds"], dp["block"])
    lines = ["# Benchmarks", ""]
    if mode == "quick":
        lines += [
            "A quick run times three message sizes and one round per configuration, so its figures are "
            "noisier than a full run's (`python tools/report.py`, several minutes).",
            "",
        ]
    lines += [
        f"Written by `python tools/report.py{' --quick' if mode == 'quick' else ''}` "
        f"({mode} run; rerun it to refresh). Every figure below comes from one run on this machine:",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in machine.items()]
    lines += ["- Paddle: not measured (it lives in a separate environment)", ""]
    if sections:
        lines += ["The sections appended after the sweep come from other tools and give their own run's details.", ""]
    lines += [
        "## Engine step time (tools/bench_engine.py)",
        "",
        "```",
        results["engine"].strip(),
        "```",
        "",
        f"## All-reduce bandwidth against message size (tools/bench_collectives.py, {collectives['nprocs']} ranks)",
        "",
        bench_collectives.report(timings, collectives["sizes"], collectives["nprocs"]),
        "",
        figure("all-reduce bandwidth", "bench_collectives.png", plots),
        "",
        "## Data-parallel step time and exposed communication (tools/bench_dp.py)",
        "",
        "Two ranks and DataParallel's default buckets; the next section varies both.",
        "",
        dp_tables,
        "",
        figure("data-parallel step time", "bench_dp.png", plots),
        "",
        "## Step time and exposed communication against bucket size and world size (tools/bench_dp.py --sweep)",
        "",
        bench_dp.sweep_report(results["dp_sweep"]),
        "",
        figure("step time and exposed communication against bucket size and world size", "bench_dp_sweep.png", plots),
        "",
    ]
    for section in sections:
        lines += [section, ""]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="three sizes, one round each, to try the report (about 1.5 min on 2 cores)"
    )
    parser.add_argument(
        "--out",
        help=f"Markdown file to write, its plots beside it (default: {os.path.relpath(PAGE, REPO)} for a full "
        "run, a new temporary folder for --quick)",
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="FILE",
        help="append this Markdown section (e.g. from tools/bench_models.py --markdown) under its own heading; "
        "repeat for more",
    )
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    sections = [included_section(Path(name)) for name in args.include]
    if args.out:
        out = Path(args.out)
    elif args.quick:
        out = Path(tempfile.mkdtemp(prefix="minidp-report-")) / "benchmarks.md"
    else:
        out = PAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {**run_description(), **machine_description()}
    results = run_benchmarks(SETTINGS[mode], out.parent)
    machine["load average at the end"] = load_average()
    out.write_text(render(machine, results, mode, sections))
    print(f"wrote {out}")
    if args.quick and not args.out:
        page = os.path.relpath(PAGE, REPO)
        print(f"(a quick run leaves {page} alone; pass --out {page} to replace it)")


if __name__ == "__main__":
    main()
