"""python -m minidp.distributed.launch: rank environments, logs, failures, signals, nodes;
blaming the rank that failed first, and a failure on one node stopping every node."""

import logging
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest


import jobs

from minidp.core.distributed.job import PortReservation
from minidp.core.distributed.launch import nodes
from minidp.core.distributed.launch.main import build_parser, make_plan

LAUNCH = [sys.executable, "-m", "minidp.distributed.launch"]


@pytest.mark.parametrize(
    "arguments, match",
    [
        (["--nnodes", "2"], "needs --master"),
        (["--nnodes", "2", "--node_rank", "2", "--master", "127.0.0.1:6170"], "node_rank must be in"),
        (["--nnodes", "2", "--master", "127.0.0.1"], "HOST:PORT"),
        (["--nproc_per_node", "0"], "at least 1"),
        (["--backend", "gloo", "--devices", "0,1"], "drop it for gloo"),
        (["--nnodes", "2", "--master", "127.0.0.1:6170"], "same MINIDP_JOB_SECRET on every node"),
    ],
)
def test_bad_command_lines_are_rejected(arguments, match, monkeypatch):
    monkeypatch.delenv("MINIDP_JOB_SECRET", raising=False)
    args = build_parser().parse_args([*arguments, str(jobs.RANK_TASKS)])
    with pytest.raises(ValueError, match=match):
        make_plan(args)


def test_missing_script_is_a_usage_error(tmp_path):
    result = subprocess.run([*LAUNCH, str(tmp_path / "absent.py")], capture_output=True, text=True, timeout=60)
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
    logged = jobs.start(
        [
            *LAUNCH,
            "--nproc_per_node",
            "2",
            "--backend",
            "gloo",
            "--log_dir",
            str(tmp_path),
            "--job_id",
            "first",
            str(jobs.RANK_TASKS),
        ],
        job_token,
    )
    echoed = jobs.start([*LAUNCH, "--nproc_per_node", "3", str(jobs.RANK_TASKS)], job_token)
    logged_result, echoed_result = jobs.finish(logged), jobs.finish(echoed)
    assert logged_result.returncode == 0, logged_result.stderr
    assert echoed_result.returncode == 0, echoed_result.stderr

    # Without --log_dir every rank's lines reach the terminal, prefixed with the rank.
    found = jobs.reports(echoed_result.stdout)
    jobs.check_reports(found, 3, "gloo")
    for report in found:
        assert f"[rank {report['rank']}] RESULT " in echoed_result.stdout
        assert report["omp_num_threads"] == "1"
        assert report["torchrun"]["LOCAL_WORLD_SIZE"] == "3"
    assert echoed_result.stderr.count("setting OMP_NUM_THREADS=1") == 1

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
    result = jobs.finish(
        jobs.start(
            [*LAUNCH, "--nproc_per_node", "3", "--log_dir", str(tmp_path), str(jobs.RANK_TASKS), "--fail-rank", "1"],
            job_token,
        )
    )
    assert result.returncode == 1
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "last lines of rank 1" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in (tmp_path / "default.workerlog.1").read_text()
    # The traceback starts in the rank's own script, not in the launcher's rank runner.
    assert "rank_tasks.py" in result.stderr and "run_rank.py" not in result.stderr
    assert jobs.job_processes(job_token) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_signals_reach_every_rank(job_token, signum):
    launcher = jobs.start([*LAUNCH, "--nproc_per_node", "2", str(jobs.RANK_TASKS), "--sleep", "120"], job_token)
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
        nodes = [
            jobs.start(
                [
                    *LAUNCH,
                    "--nnodes",
                    "2",
                    "--node_rank",
                    str(node),
                    "--master",
                    master,
                    "--nproc_per_node",
                    str(nproc),
                    str(jobs.RANK_TASKS),
                ],
                job_token,
                MINIDP_JOB_SECRET=job_token,
            )
            for node, nproc in ((1, 2), (0, 1))
        ]
        results = [jobs.finish(node) for node in nodes]
    for result in results:
        assert result.returncode == 0, result.stderr
    assert [report["rank"] for report in jobs.reports(results[0].stdout)] == [1, 2]
    assert [report["torchrun"] for report in jobs.reports(results[0].stdout)] == [
        {"RANK": str(rank), "LOCAL_RANK": str(rank - 1), "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "2"} for rank in (1, 2)
    ]
    jobs.check_reports(jobs.reports(results[0].stdout + results[1].stdout), 3, "gloo")


def test_console_script_is_installed():
    script = shutil.which("minidp-launch") or shutil.which("minidp-launch", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("minidp-launch is not on PATH: install the package with pip install -e .")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "--nproc_per_node" in result.stdout


# ---------------------------------------------------------------------------------------------
# Checks made before any rank starts, torchrun's conventions, the launcher's own errors
# ---------------------------------------------------------------------------------------------


def test_help_lists_the_environment_variables():
    text = build_parser().format_help()
    for name in (
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "MINIDP_JOB_SECRET",
        "OMP_NUM_THREADS",
        "PADDLE_MASTER",
        "MINIDP_LAUNCHER_TTY",
        "-m, --module",
    ):
        assert name in text


def test_too_many_ranks_for_the_open_file_limit_are_refused():
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    args = build_parser().parse_args(["--nproc_per_node", str(soft), str(jobs.RANK_TASKS)])
    with pytest.raises(ValueError, match=rf"needs about \d+ open files but the limit is {soft}"):
        make_plan(args)


def test_an_unresolvable_master_fails_at_once(monkeypatch):
    monkeypatch.setenv("MINIDP_JOB_SECRET", "s")
    args = build_parser().parse_args(["--nnodes", "2", "--master", "no-such-host.invalid:6170", str(jobs.RANK_TASKS)])
    started = time.monotonic()
    with pytest.raises(ValueError, match="'no-such-host.invalid' does not resolve"):
        make_plan(args)
    assert time.monotonic() - started < 10


def test_an_unwritable_log_dir_is_a_clear_error_not_a_traceback(job_token, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = jobs.finish(jobs.start([*LAUNCH, "--log_dir", str(blocker / "logs"), str(jobs.RANK_TASKS)], job_token))
    assert result.returncode == 1
    assert "cannot run the job" in result.stderr and "logs" in result.stderr
    assert "Traceback" not in result.stderr
    assert jobs.wait_until_gone(job_token) == []


def test_waiting_for_other_launchers_is_logged(monkeypatch, caplog):
    monkeypatch.setattr(nodes, "WAIT_LOG_SECONDS", 0.05)
    with caplog.at_level(logging.INFO, logger="minidp.distributed.launch"):
        assert nodes.while_logging("node 0's launcher at 10.0.0.1:6170", lambda: time.sleep(0.3) or 7, 300) == 7
    assert "still waiting for node 0's launcher at 10.0.0.1:6170" in caplog.text


@pytest.mark.timeout(60)
def test_a_module_calling_spawn_runs_as_the_launched_ranks(job_token):
    # `-m rank_tasks --spawn` calls spawn(report, nprocs=2) under __main__, as the README's
    # first script does: each launched rank runs report itself, so the job has 2 ranks, not 4.
    result = jobs.finish(
        jobs.start(
            [*LAUNCH, "--nproc_per_node", "2", "-m", "rank_tasks", "--spawn"],
            job_token,
            PYTHONPATH=os.pathsep.join([str(jobs.REPO), str(jobs.SCRIPTS)]),
            OMP_NUM_THREADS="3",
        )
    )
    assert result.returncode == 0, result.stderr
    found = jobs.reports(result.stdout)
    jobs.check_reports(found, 2, "gloo")
    assert result.stdout.count("already is rank") == 2
    for report in found:
        rank = str(report["rank"])
        assert report["torchrun"] == {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
        assert report["omp_num_threads"] == "3"
    assert "OMP_NUM_THREADS=1" not in result.stderr
    assert jobs.wait_until_gone(job_token) == []


def run_on_a_terminal(token, *arguments):
    """Run the launcher with its stdout on a pseudo-terminal; return what the terminal got."""
    reader, writer = pty.openpty()
    launcher = subprocess.Popen(
        [*LAUNCH, *arguments], env=jobs.job_environment(token), stdout=writer, stderr=subprocess.PIPE, text=True
    )
    os.close(writer)
    received = b""
    try:
        while True:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            received += chunk
        assert launcher.wait(30) == 0, launcher.stderr.read()
    finally:
        os.close(reader)
        launcher.kill()
        launcher.communicate()
    return received.decode()


@pytest.mark.timeout(60)
def test_rank0_progress_line_reaches_the_launchers_terminal(job_token):
    text = run_on_a_terminal(job_token, "--nproc_per_node", "2", str(jobs.RANK_TASKS), "--progress", "3")
    # Each update is drawn as it comes, on a line cleared first...
    for step in (1, 2, 3):
        assert f"\r\x1b[K[rank 0] step {step}/3" in text
    # ...and whole lines of the other rank are never cut by it.
    for step in (1, 2, 3):
        assert re.search(rf"(^|\n|\x1b\[K)\[rank 1\] line {step} of rank 1\r\n", text), text
    assert "[rank 0] done 0\r\n" in text and "[rank 1] done 1\r\n" in text
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_progress_updates_stay_out_of_the_log_file(job_token, tmp_path):
    text = run_on_a_terminal(
        job_token, "--nproc_per_node", "2", "--log_dir", str(tmp_path), str(jobs.RANK_TASKS), "--progress", "2"
    )
    assert "\r\x1b[K[rank 0] step 2/2" in text
    assert (tmp_path / "default.workerlog.0").read_text() == "step 2/2\ndone 0\n"
    assert (tmp_path / "default.workerlog.1").read_text() == ("line 1 of rank 1\nline 2 of rank 1\ndone 1\n")


# ---------------------------------------------------------------------------------------------
# Blaming the rank that failed first; a failure on one node stops every node
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_the_rank_that_failed_first_is_blamed_even_when_it_exits_last(job_token, tmp_path):
    # Rank 1 raises, closes its connections, and exits 1.5 s later: ranks 0 and 2 lose their
    # connections to it and exit first. The launcher must still name rank 1.
    started = time.monotonic()
    result = jobs.finish(
        jobs.start(
            [
                *LAUNCH,
                "--nproc_per_node",
                "3",
                "--log_dir",
                str(tmp_path),
                str(jobs.RANK_TASKS),
                "--fail-rank",
                "1",
                "--linger",
                "1.5",
            ],
            job_token,
        ),
        timeout=45,
    )
    assert result.returncode == 1, result.stderr
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "last lines of rank 1" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in result.stderr
    for peer in (0, 2):
        assert f"rank {peer} failed after it lost its connection to rank 1" in result.stderr
    assert time.monotonic() - started < 30
    assert jobs.wait_until_gone(job_token) == []


def two_nodes(token, node0_args, node1_args, master_port):
    master = f"127.0.0.1:{master_port}"
    return [
        jobs.start(
            [
                *LAUNCH,
                "--nnodes",
                "2",
                "--node_rank",
                str(node),
                "--master",
                master,
                "--nproc_per_node",
                "1",
                str(jobs.RANK_TASKS),
                *node_args,
            ],
            token,
            MINIDP_JOB_SECRET=token,
        )
        for node, node_args in ((1, node1_args), (0, node0_args))
    ]


@pytest.mark.timeout(60)
def test_a_failing_node_stops_the_other_nodes(job_token):
    with PortReservation("127.0.0.1", 1) as master:
        node1, node0 = two_nodes(job_token, ["--exit-code", "3"], ["--sleep", "120"], master.ports[0])
        started = time.monotonic()
        result0, result1 = jobs.finish(node0, timeout=30), jobs.finish(node1, timeout=30)
    assert result0.returncode == 3, result0.stderr
    assert result1.returncode == 1, result1.stderr
    assert "the job failed on node 0: rank 0" in result1.stderr
    assert "exited with code 3" in result1.stderr
    assert time.monotonic() - started < 20
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_a_vanished_node0_launcher_stops_the_other_nodes(job_token):
    with PortReservation("127.0.0.1", 1) as master:
        node1, node0 = two_nodes(job_token, ["--sleep", "120"], ["--sleep", "120"], master.ports[0])
        try:
            ready = [node.stdout.readline() for node in (node0, node1)]
            assert all("ready" in line for line in ready), ready
            node0.send_signal(signal.SIGKILL)
            result1 = jobs.finish(node1, timeout=30)
        finally:
            node0.kill()
            node0.communicate()
    assert result1.returncode == 1, result1.stderr
    assert "lost contact with node 0's launcher" in result1.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_the_rank_blamed_by_the_records_is_blamed_whatever_the_error_text(job_token):
    # Ranks 0 and 2 fail first, with an MPI-style message no regex of the old launcher knew,
    # but their failure records blame rank 1, which fails 0.5 s later.
    result = jobs.finish(
        jobs.start([*LAUNCH, "--nproc_per_node", "3", str(jobs.RANK_TASKS), "--blame", "1"], job_token), timeout=45
    )
    assert result.returncode == 1, result.stderr
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "rank 1's output, its error included, is above" in result.stderr
    for peer in (0, 2):
        assert f"rank {peer} failed after it lost its connection to rank 1 (its failure record: " in result.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_ranks_failing_with_their_own_errors_are_not_blamed_on_the_first(job_token):
    # Every rank raises its own error and blames no peer: the summary shows each rank's own
    # error instead of guessing that they lost their connections to the first.
    result = jobs.finish(
        jobs.start([*LAUNCH, "--nproc_per_node", "2", str(jobs.RANK_TASKS), "--all-fail"], job_token), timeout=45
    )
    assert result.returncode == 1, result.stderr
    assert "lost" not in result.stderr
    first = 0 if "rank 0 (pid" in result.stderr.split("stopping the other ranks")[0] else 1
    other = 1 - first
    assert f"rank {other} (pid " in result.stderr
    assert f"failed with its own error: ValueError: rank {other} fails on its own" in result.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_a_traceback_already_on_the_terminal_is_not_repeated(job_token):
    result = jobs.finish(
        jobs.start([*LAUNCH, "--nproc_per_node", "2", str(jobs.RANK_TASKS), "--fail-rank", "1"], job_token), timeout=45
    )
    assert result.returncode == 1, result.stderr
    both = result.stdout + result.stderr
    assert both.count("ValueError: rank 1 fails on purpose") == 1, both
    assert "[rank 1] ValueError: rank 1 fails on purpose" in result.stdout
    assert "rank 1's output, its error included, is above (lines prefixed [rank 1])" in result.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("presses", [0, 3])
def test_ctrl_c_prints_one_line_per_rank_and_a_closing_summary(job_token, presses):
    """SIGINT to the launcher alone (``presses`` 0), or Ctrl-C pressed three times at once on a
    terminal (every process of the group gets each)."""
    command = [*LAUNCH, "--nproc_per_node", "2", str(jobs.RANK_TASKS), "--sleep", "120"]
    launcher = jobs.start(command, job_token, own_group=True)
    try:
        ready = sorted(launcher.stdout.readline().split()[:3] for _ in range(2))
        assert ready == [["[rank", "0]", "ready"], ["[rank", "1]", "ready"]]
        if presses == 0:
            launcher.send_signal(signal.SIGINT)
        for _ in range(presses):
            os.killpg(launcher.pid, signal.SIGINT)
            time.sleep(0.002)
        result = jobs.finish(launcher, timeout=30)
    finally:
        launcher.kill()
        launcher.communicate()
    assert result.returncode == 128 + signal.SIGINT
    both = result.stdout + result.stderr
    assert "Traceback" not in both, both
    for rank in (0, 1):
        assert f"[rank {rank}] rank {rank} interrupted (KeyboardInterrupt) at " in result.stdout
    assert re.search(r"stopped on signal SIGINT: rank 0 \(pid \d+\) exited with code 130; rank 1 ", result.stderr)
    assert jobs.wait_until_gone(job_token) == []


STUCK_RANK = """
import os, sys, time

def stuck_in_here(fifo):
    with open(fifo, "w") as ready:
        ready.write("x")
    time.sleep(60)

fifo = sys.argv[1]
if os.environ["PADDLE_TRAINER_ID"] == "1":
    stuck_in_here(fifo)
with open(fifo) as ready:
    ready.read()
raise ValueError("rank 0 fails while rank 1 is stuck")
"""


@pytest.mark.timeout(60)
def test_the_summary_shows_where_the_still_running_ranks_are_stuck(job_token, tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(STUCK_RANK)
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    result = jobs.finish(jobs.start([*LAUNCH, "--nproc_per_node", "2", str(script), str(fifo)], job_token), timeout=45)
    assert result.returncode == 1, result.stderr
    assert "rank 1 was still running; its Python stacks (most recent call first):" in result.stderr
    assert re.search(r'File ".*stuck\.py", line \d+ in stuck_in_here', result.stderr), result.stderr
    assert jobs.wait_until_gone(job_token) == []
