"""python -m minidp.distributed.launch: rank environments, logs, failures, signals, nodes."""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))

import jobs  # noqa: E402  (lives in tests/scripts)
from jobs import job_token  # noqa: E402,F401  (pytest fixture)
from minidp.distributed.launch.main import build_parser, make_plan  # noqa: E402
from minidp.distributed.spawn import PortReservation  # noqa: E402

LAUNCH = [sys.executable, "-m", "minidp.distributed.launch"]


@pytest.mark.parametrize("arguments, match", [
    (["--nnodes", "2"], "needs --master"),
    (["--nnodes", "2", "--node_rank", "2", "--master", "127.0.0.1:6170"], "node_rank must be in"),
    (["--nnodes", "2", "--master", "127.0.0.1"], "HOST:PORT"),
    (["--nproc_per_node", "0"], "at least 1"),
    (["--backend", "gloo", "--devices", "0,1"], "drop it for gloo"),
    (["--nnodes", "2", "--master", "127.0.0.1:6170"], "same MINIDP_JOB_SECRET on every node"),
])
def test_bad_command_lines_are_rejected(arguments, match, monkeypatch):
    monkeypatch.delenv("MINIDP_JOB_SECRET", raising=False)
    args = build_parser().parse_args([*arguments, str(jobs.RANK_TASKS)])
    with pytest.raises(ValueError, match=match):
        make_plan(args)


def test_missing_script_is_a_usage_error(tmp_path):
    result = subprocess.run([*LAUNCH, str(tmp_path / "absent.py")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "absent.py' not found" in result.stderr


def test_gpu_plan_gives_each_rank_its_card(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    args = build_parser().parse_args(["--devices", "3,2", str(jobs.RANK_TASKS), "--x", "1"])
    plan = make_plan(args)
    plan.release()
    assert plan.backend == "nccl"
    assert [env["FLAGS_selected_gpus"] for env in plan.envs] == ["1", "0"]
    assert plan.command[-3:] == [str(jobs.RANK_TASKS), "--x", "1"]


@pytest.mark.timeout(90)
def test_two_jobs_at_once_with_and_without_log_dir(job_token, tmp_path):
    logged = jobs.start([*LAUNCH, "--nproc_per_node", "2", "--backend", "gloo",
                         "--log_dir", str(tmp_path), "--job_id", "first",
                         str(jobs.RANK_TASKS)], job_token)
    echoed = jobs.start([*LAUNCH, "--nproc_per_node", "3", str(jobs.RANK_TASKS)], job_token)
    logged_result, echoed_result = jobs.finish(logged), jobs.finish(echoed)
    assert logged_result.returncode == 0, logged_result.stderr
    assert echoed_result.returncode == 0, echoed_result.stderr

    # Without --log_dir every rank's lines reach the terminal, prefixed with the rank.
    found = jobs.reports(echoed_result.stdout)
    jobs.check_reports(found, 3, "gloo")
    for report in found:
        assert f"[rank {report['rank']}] RESULT " in echoed_result.stdout

    # With --log_dir each rank has its file; only rank 0 is echoed, prefixed.
    assert sorted(os.listdir(tmp_path)) == ["first.workerlog.0", "first.workerlog.1"]
    logs = [(tmp_path / f"first.workerlog.{rank}").read_text() for rank in range(2)]
    jobs.check_reports([jobs.reports(text)[0] for text in logs], 2, "gloo")
    assert all(text.startswith("RESULT ") for text in logs)
    assert "[rank 0] RESULT " in logged_result.stdout
    assert "[rank 1]" not in logged_result.stdout
    assert jobs.job_processes(job_token) == []


@pytest.mark.timeout(30)
def test_a_failing_rank_stops_the_job(job_token, tmp_path):
    result = jobs.finish(jobs.start([*LAUNCH, "--nproc_per_node", "3", "--log_dir", str(tmp_path),
                                     str(jobs.RANK_TASKS), "--fail-rank", "1"], job_token))
    assert result.returncode == 1
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "last lines of rank 1" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in (tmp_path / "default.workerlog.1").read_text()
    assert jobs.job_processes(job_token) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_signals_reach_every_rank(job_token, signum):
    launcher = jobs.start([*LAUNCH, "--nproc_per_node", "2", str(jobs.RANK_TASKS),
                           "--sleep", "120"], job_token)
    try:
        ready = sorted(launcher.stdout.readline().split()[:3] for _ in range(2))
        assert ready == [["[rank", "0]", "ready"], ["[rank", "1]", "ready"]]
        launcher.send_signal(signum)
        launcher.wait(30)
        if signum != signal.SIGKILL:
            assert launcher.returncode == 128 + signum
        assert jobs.wait_until_gone(job_token) == []
    finally:
        launcher.kill()
        launcher.communicate()


@pytest.mark.timeout(90)
def test_two_nodes_meet_at_the_master(job_token):
    # The master port stays reserved (SO_REUSEADDR, not listening) until node 0 listens on it,
    # so nothing else on this busy machine can take it in between; node 1 starts first and
    # retries until node 0's launcher is up.
    with PortReservation("127.0.0.1", 1) as reserved:
        master = f"127.0.0.1:{reserved.ports[0]}"
        nodes = [jobs.start([*LAUNCH, "--nnodes", "2", "--node_rank", str(node), "--master",
                             master, "--nproc_per_node", str(nproc), str(jobs.RANK_TASKS)],
                            job_token, MINIDP_JOB_SECRET=job_token)
                 for node, nproc in ((1, 2), (0, 1))]
        results = [jobs.finish(node) for node in nodes]
    for result in results:
        assert result.returncode == 0, result.stderr
    assert [report["rank"] for report in jobs.reports(results[0].stdout)] == [1, 2]
    jobs.check_reports(jobs.reports(results[0].stdout + results[1].stdout), 3, "gloo")


def test_console_script_is_installed():
    script = shutil.which("minidp-launch") or shutil.which(
        "minidp-launch", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("minidp-launch is not on PATH: install the package with pip install -e .")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "--nproc_per_node" in result.stdout
