"""tools/report.py renders docs/benchmarks.md from the benchmarks' results (a fixed fixture here;
running the benchmarks themselves takes minutes and is done by hand)."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import report  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "benchmarks_report.json")


@pytest.fixture
def page():
    with open(FIXTURE) as handle:
        data = json.load(handle)
    return report.render(data["machine"], data, "quick")


def test_names_the_machine_and_how_it_was_made(page):
    assert page.startswith("# Benchmarks\n")
    assert "`python tools/report.py --quick`" in page
    for line in ("- cpu: Test CPU 3000", "- cores: 2", "- python: 3.11.0", "- numpy: 2.0.0",
                 "- load average: 1.00 0.50 0.25", "- pytorch: 2.3.0"):
        assert line in page.splitlines()


def test_only_a_quick_run_is_flagged_as_noisy(page):
    with open(FIXTURE) as handle:
        data = json.load(handle)
    full = report.render(data["machine"], data, "full")
    assert "A quick run times three message sizes" in page
    assert "A quick run" not in full and "`python tools/report.py` (full run" in full


def test_collective_table_gives_time_and_bus_bandwidth_per_size(page):
    rows = [line for line in page.splitlines() if line.startswith("| 1 MiB |")]
    # 2 ranks: bus bandwidth = 2 * (n - 1) / n * bytes / seconds = 1 MiB / 2 ms
    assert rows == ["| 1 MiB | 2,000 us / 0.52 | 4,000 us / 0.26 |"]
    assert "- minidp gloo at 1 MiB: 2.00x PyTorch gloo's bandwidth" in page
    assert "![all-reduce bandwidth](bench_collectives.png)" in page


def test_data_parallel_tables_give_step_time_and_exposed_communication(page):
    lines = page.splitlines()
    assert "| 2 procs: minidp DataParallel, gloo shared memory | 20.00 | 21.00 | 2.00x | 20.00 |" in lines
    exposed = [line for line in lines if line.startswith("| minidp DataParallel, gloo (shared memory) | ")]
    assert exposed and exposed[0].split(" | ")[1:3] == ["4.00", "3.00"]
    assert any(line.startswith("| PyTorch DDP, gloo | 7.00 | n/a |") for line in lines)
    assert "| minidp DataParallel, mpi | skipped: mpi4py is not installed | | | |" in lines
    assert "![data-parallel step time](bench_dp.png)" in page


def test_engine_output_is_quoted_verbatim(page):
    assert "```\nsummary\n  (a) minidp/numpy  1.050  (target <= 1.10)\n```" in page
