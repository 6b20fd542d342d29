"""minidp.distributed.spawn: option checks, rank environments, results, failures, clean-up;
ranks never joined do not hang the parent's exit, unnamed signals are named, and the rank that
the failure records blame is the one reported."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy
import psutil
import pytest


import jobs
import rank_tasks

from minidp.core.distributed.spawn import (
    RankFailedError,
    build_environments,
    select_gpus,
    spawn,
)

RANK_VARIABLES = {
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_MASTER",
    "MASTER_ADDR",
    "MASTER_PORT",
    "PADDLE_DISTRI_BACKEND",
    "MINIDP_JOB_SECRET",
    "MINIDP_FAILURE_DIR",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
}


def assert_all_reaped(context) -> None:
    for process in context.processes:
        assert process.exitcode is not None
        assert not psutil.pid_exists(process.pid)


# ---------------------------------------------------------------------------------------------
# Options, checked before any process starts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"nprocs": 1, "unknown_option": 1}, ValueError, "does not support the option 'unknown_"),
        ({"nprocs": 1, "xpus": "0"}, ValueError, "does not support the option 'xpus'"),
        ({"nprocs": 0}, ValueError, "nprocs must be -1 or a positive int"),
        ({"nprocs": "2"}, TypeError, "nprocs must be an int"),
        ({"nprocs": 2, "backend": "mpi"}, ValueError, "mpirun -n N"),
        ({"nprocs": 2, "backend": "bkcl"}, ValueError, "backend must be one of"),
        ({"nprocs": 2, "backend": "gloo", "gpus": "0,1"}, ValueError, "drop it for gloo"),
        ({"nprocs": 2, "start_method": "thread"}, ValueError, "start_method must be one of"),
        ({"nprocs": 2, "backend": "nccl", "start_method": "fork"}, ValueError, "'fork' cannot start nccl ranks"),
        ({"nprocs": 2, "ips": "10.0.0.1,10.0.0.2"}, ValueError, "minidp.distributed.launch --nnodes"),
        ({"nprocs": 2, "ips": "203.0.113.7"}, ValueError, "cannot bind a port on '203.0.113.7'"),
    ],
)
def test_invalid_options_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        spawn(rank_tasks.report, **kwargs)


def test_func_and_args_are_checked():
    with pytest.raises(TypeError, match="callable"):
        spawn("train", nprocs=1)
    with pytest.raises(TypeError, match="tuple or list"):
        spawn(rank_tasks.report, args=1, nprocs=1)


@pytest.mark.parametrize(
    "option", ["started_port", "node_ip", "use_paddlecloud", "cluster_node_ips", "selected_devices"]
)
def test_deprecated_options_warn(option):
    # nprocs=0 stops spawn right after the option check, so nothing starts.
    with pytest.warns(DeprecationWarning, match=option), pytest.raises(ValueError, match="nprocs"):
        spawn(rank_tasks.report, nprocs=0, **{option: "1"})


def test_selected_devices_still_selects_gpus(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.warns(DeprecationWarning, match="use 'gpus'"), pytest.raises(ValueError, match="selects 1 card"):
        spawn(rank_tasks.report, nprocs=2, backend="nccl", selected_devices="1")


@pytest.mark.parametrize(
    "nprocs, gpus, error, match",
    [
        (2, "0", ValueError, r"gpus selects 1 card\(s\) but 2 processes"),
        (2, "0,5", ValueError, r"GPU card 5 is not among the visible cards \(CUDA_VISIBLE_DEVICES=0,1,2\)"),
        (4, None, RuntimeError, r"only 3 GPU\(s\) are visible"),
    ],
)
def test_gpus_are_checked_against_visible_devices(monkeypatch, nprocs, gpus, error, match):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    with pytest.raises(error, match=match):
        spawn(rank_tasks.report, nprocs=nprocs, backend="nccl", gpus=gpus)


def test_gpus_are_numbered_within_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    assert select_gpus(2, "5,6") == [1, 2]
    assert select_gpus(2, [7, 4]) == [3, 0]
    assert select_gpus(3, None) == [0, 1, 2]
    plan = build_environments(2, {"backend": "auto", "gpus": "6,7"})
    plan.release()
    backend, envs = plan.backend, plan.envs
    assert backend == "nccl"
    assert [env["FLAGS_selected_gpus"] for env in envs] == ["2", "3"]
    assert {env["PADDLE_DISTRI_BACKEND"] for env in envs} == {"nccl"}


def test_rank_environments_use_distinct_free_ports():
    plan = build_environments(3, {"backend": "gloo"})
    plan.release()
    backend, envs = plan.backend, plan.envs
    assert backend == "gloo"
    # rank 0 alone learns where to take over the store's listening socket
    assert [set(env) for env in envs] == [RANK_VARIABLES | {"MINIDP_STORE_HANDOVER"}] + [RANK_VARIABLES] * 2
    endpoints = envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    master = envs[0]["PADDLE_MASTER"]
    assert len(set(endpoints + [master])) == 4
    for rank, env in enumerate(envs):
        assert env["PADDLE_TRAINER_ID"] == str(rank)
        assert env["PADDLE_TRAINERS_NUM"] == "3"
        assert env["PADDLE_CURRENT_ENDPOINT"] == endpoints[rank]
        assert env["PADDLE_MASTER"] == master == f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
        assert env["PADDLE_TRAINER_ENDPOINTS"] == ",".join(endpoints)
        assert env["MINIDP_JOB_SECRET"] == envs[0]["MINIDP_JOB_SECRET"]
        assert env["RANK"] == env["LOCAL_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "3"
    assert len(envs[0]["MINIDP_JOB_SECRET"]) == 64
    other_job = build_environments(2, {"backend": "gloo"})
    other_job.release()
    assert other_job.envs[0]["MINIDP_JOB_SECRET"] != envs[0]["MINIDP_JOB_SECRET"]


def test_default_nprocs_is_the_cpu_count_under_gloo():
    plan = build_environments(-1, {"backend": "gloo"})
    plan.release()
    assert len(plan.envs) == os.cpu_count()


# ---------------------------------------------------------------------------------------------
# Running ranks
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_two_jobs_of_two_and_three_ranks_run_at_once():
    two = spawn(rank_tasks.report, nprocs=2, join=False)
    three = spawn(rank_tasks.report, nprocs=3, join=False, backend="gloo")
    assert two.join() and three.join()
    for context, world_size in ((two, 2), (three, 3)):
        jobs.check_reports([queue.get() for queue in context.return_queues], world_size, "gloo")
        assert all(queue.empty() for queue in context.error_queues)
        assert_all_reaped(context)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_large_return_values_do_not_block(start_method, capsys):
    context = spawn(rank_tasks.large_array, args=(50,), nprocs=2, start_method=start_method, print_config=True)
    for rank, queue in enumerate(context.return_queues):
        array = queue.get()
        assert array.nbytes == 50 << 20
        assert numpy.all(array == rank)
    assert "backend          gloo" in capsys.readouterr().out
    assert_all_reaped(context)


@pytest.mark.timeout(30)
def test_a_failing_rank_stops_the_job_with_its_traceback():
    context = spawn(rank_tasks.report, args=(1,), nprocs=3, join=False)
    with pytest.raises(RankFailedError) as caught:
        context.join()
    error = caught.value
    assert error.rank == 1 and error.exitcode == 1
    assert "rank 1" in str(error)
    assert "ValueError: rank 1 fails on purpose" in str(error)
    assert "rank_tasks.py" in error.child_traceback
    assert "ValueError: rank 1 fails on purpose" in context.error_queues[1].get()
    assert_all_reaped(context)


@pytest.mark.timeout(30)
def test_a_rank_killed_by_a_signal_is_named():
    context = spawn(rank_tasks.kill_rank, args=(0,), nprocs=2, join=False)
    with pytest.raises(RankFailedError, match="rank 0 .* was killed by signal SIGKILL") as caught:
        context.join()
    assert caught.value.exitcode == -signal.SIGKILL
    assert caught.value.child_traceback is None
    assert_all_reaped(context)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_the_failure_shows_where_the_still_running_ranks_are_stuck(tmp_path, start_method):
    """The parent asks the ranks still running for their Python stacks (SIGUSR1, as the launcher
    does) and puts them into the error."""
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    context = spawn(
        rank_tasks.fail_while_rank_one_is_stuck, args=(str(fifo),), nprocs=2, start_method=start_method, join=False
    )
    with pytest.raises(RankFailedError, match="ValueError: rank 0 fails while rank 1 is stuck") as caught:
        context.join()
    assert caught.value.rank == 0
    message = str(caught.value)
    assert "rank 1 was still running; its Python stacks (most recent call first):" in message
    assert re.search(r'File ".*rank_tasks\.py", line \d+ in stuck_in_here', message), message
    assert_all_reaped(context)


PARENT_SCRIPT = f"""
import sys
sys.path.insert(0, {str(jobs.SCRIPTS)!r})
import rank_tasks
from minidp.distributed.spawn import spawn
spawn(rank_tasks.announce_and_sleep, args=(120,), nprocs=2)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_rank_outlives_its_parent(job_token, signum):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT_SCRIPT], env=jobs.job_environment(job_token), stdout=subprocess.PIPE, text=True
    )
    try:
        ready = [parent.stdout.readline().split() for _ in range(2)]
        assert sorted(words[1] for words in ready) == ["0", "1"]
        children = [psutil.Process(int(words[2])) for words in ready]
        parent.send_signal(signum)
        parent.wait(30)
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
        assert jobs.wait_until_gone(job_token) == []
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()


def test_spawn_inside_a_launched_job_runs_as_that_rank(monkeypatch, caplog):
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    with caplog.at_level("WARNING", logger="minidp.distributed"):
        context = spawn(divmod, args=(7, 2), nprocs=2)
    assert context.processes == []
    assert context.join() and context.return_queues[0].get() == (3, 1)
    assert "already is rank 1 of a job of 2" in caplog.text
    with pytest.raises(ValueError, match="does not support the option"):
        spawn(divmod, args=(7, 2), nprocs=2, unknown=1)


NEVER_JOINED = f"""
import sys
sys.path.insert(0, {str(jobs.SCRIPTS)!r})
import rank_tasks
from minidp.distributed.spawn import spawn
if __name__ == "__main__":
    context = spawn(rank_tasks.large_array, args=(20,), nprocs=2, join=False)
    print("exiting without join", flush=True)
"""


@pytest.mark.timeout(60)
def test_exiting_without_join_drains_large_results_instead_of_hanging(job_token, tmp_path):
    script = tmp_path / "never_joined.py"
    script.write_text(NEVER_JOINED)
    started = time.monotonic()
    parent = jobs.start([sys.executable, str(script)], job_token)
    try:
        out, err = parent.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        parent.kill()
        parent.communicate()
        pytest.fail("the parent hung at exit: its ranks were blocked sending their results")
    assert parent.returncode == 0, err
    assert "exiting without join" in out
    assert time.monotonic() - started < 30
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(30)
def test_a_rank_killed_by_a_signal_without_a_name_is_reported():
    signum = signal.SIGRTMIN + 3  # no name in signal.Signals; its default action terminates
    context = spawn(rank_tasks.kill_rank, args=(1, signum), nprocs=2, join=False)
    with pytest.raises(RankFailedError, match=f"rank 1 .* was killed by signal {signum} "):
        context.join()
    assert context.processes[1].exitcode == -signum


@pytest.mark.timeout(60)
def test_spawn_blames_the_rank_the_records_blame():
    context = spawn(rank_tasks.blame, args=(0, 0.5), nprocs=2, join=False)
    with pytest.raises(RankFailedError, match="ValueError: rank 0 fails on purpose") as caught:
        context.join()
    assert caught.value.rank == 0
    assert "rank 1 failed after it lost its connection to rank 0" in str(caught.value)


INTERRUPTED = f"""
import sys
sys.path.insert(0, {str(jobs.SCRIPTS)!r})
import rank_tasks
from minidp.distributed.spawn import spawn
if __name__ == "__main__":
    try:
        spawn(rank_tasks.announce_and_sleep, args=(120,), nprocs=2)
    except KeyboardInterrupt:
        print("parent interrupted", flush=True)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("presses", [1, 3])
def test_ctrl_c_prints_one_line_per_rank_and_a_closing_summary(job_token, tmp_path, presses):
    # Ctrl-C reaches the parent and every rank (one process group, as on a terminal); pressed
    # again at once, the later interrupts land while the first is being handled.
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        env=jobs.job_environment(job_token),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        ready = sorted(parent.stdout.readline().split()[:2] for _ in range(2))
        assert ready == [["ready", "0"], ["ready", "1"]]
        for _ in range(presses):
            os.killpg(parent.pid, signal.SIGINT)
            time.sleep(0.002)
        out, err = parent.communicate(timeout=30)
    finally:
        parent.kill()
        parent.communicate()
    assert "parent interrupted" in out
    assert "Traceback" not in err, err
    for rank in (0, 1):
        assert f"rank {rank} interrupted (KeyboardInterrupt) at " in err
        assert f"rank {rank} (pid " in err.split("spawn: interrupted; stopped the ranks:")[1]
    assert len(err.strip().splitlines()) == 3, err
    assert jobs.wait_until_gone(job_token) == []
