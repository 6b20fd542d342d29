"""tools/gpu_check.py, the one command for the first GPU, where no GPU is: --dry-run lists its
steps within the 8-minute budget, a real run says "no GPU visible" and exits non-zero, and the
machinery that runs the steps (a time limit per step, the result line, the summary table) works
on stand-in steps. The steps themselves need a GPU and run only there."""

import os
import subprocess
import sys
import time

import gpu_check
from gpu_check import Outcome, Step

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "gpu_check.py")
NO_DEVICE = dict(os.environ, CUDA_VISIBLE_DEVICES="")


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], env=NO_DEVICE, capture_output=True, text=True, timeout=60)


def test_dry_run_lists_every_step_within_the_budget():
    done = run_tool("--dry-run")
    assert done.returncode == 0, done.stderr
    assert "no GPU visible" in done.stdout
    for step in gpu_check.STEPS:
        assert f"  {step.name} " in done.stdout
    assert sum(step.timeout for step in gpu_check.STEPS) <= gpu_check.TOTAL_SECONDS - 30
    assert [step.name for step in gpu_check.STEPS] == [
        "gpu-tests",
        "digits",
        "dp-1-rank",
        "dp-2-ranks",
        "optimizers",
        "bucket-pack",
        "torch-mlp",
    ]


def test_without_a_gpu_it_says_so_and_runs_nothing():
    done = run_tool()
    assert done.returncode == gpu_check.NO_GPU != 0
    assert "no GPU visible" in done.stderr and "--dry-run lists the steps" in done.stderr
    assert done.stdout == ""


def python_step(name, code, timeout=30.0):
    return Step(name, f"stand-in {name}", timeout, lambda: [sys.executable, "-c", code])


def test_a_step_that_overruns_its_limit_is_killed_and_reported(tmp_path):
    started = time.monotonic()
    outcome = gpu_check.run_step(python_step("slow", "import time; time.sleep(60)"), 0.5, tmp_path / "slow.log")
    assert outcome.status == "TIMEOUT" and "killed after 0 s" in outcome.figure
    assert time.monotonic() - started < 10


def test_a_step_reports_its_result_line_or_its_failure(tmp_path):
    line = gpu_check.RESULT_PREFIX + '{"status": "refused", "figure": "NCCL: Duplicate GPU detected"}'
    said = gpu_check.run_step(python_step("said", f"print('noise'); print({line!r})"), 30, tmp_path / "said.log")
    assert (said.status, said.figure) == ("refused", "NCCL: Duplicate GPU detected")
    crashed = gpu_check.run_step(python_step("crash", "raise SystemExit('it broke')"), 30, tmp_path / "crash.log")
    assert crashed.status == "FAILED" and crashed.figure == "exit code 1: it broke"


def test_steps_past_the_budget_are_skipped_and_the_table_has_a_row_per_step(tmp_path, capsys):
    steps = [python_step("first", "print('x')"), python_step("second", "print('y')")]
    outcomes = gpu_check.run_all(steps, budget=4, logs=tmp_path)
    assert [(o.step, o.status) for o in outcomes] == [("first", "skipped"), ("second", "skipped")]
    table = gpu_check.summary_table([Outcome("gpu-tests", "ok", "12 passed | 3 skipped", 40.04), *outcomes])
    assert table.splitlines() == [
        "| step | status | figure | seconds |",
        "|---|---|---|---|",
        "| gpu-tests | ok | 12 passed / 3 skipped | 40.0 |",
        "| first | skipped | no time left in the 8-minute budget | 0.0 |",
        "| second | skipped | no time left in the 8-minute budget | 0.0 |",
    ]


def test_the_tests_step_reports_pytests_counts():
    output = "....s\n===== 4 passed, 1 skipped in 3.21s =====\n"
    assert gpu_check._pytest_figure(output) == "4 passed, 1 skipped in 3.21s"
