"""Launcher and spawn: reserved ports, blaming the rank that failed first, and a failure
on one node stopping every node."""
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))

import jobs  # noqa: E402  (lives in tests/scripts)
from jobs import job_token  # noqa: E402,F401  (pytest fixture)
from minidp.distributed.launch.main import build_parser, make_plan  # noqa: E402
from minidp.distributed.spawn import PortReservation, build_environments  # noqa: E402
from minidp.distributed.store import TCPStore  # noqa: E402

LAUNCH = [sys.executable, "-m", "minidp.distributed.launch"]


def assert_taken_but_listenable(port):
    """Nobody else can bind ``port``, yet a rank can host its store there."""
    with socket.socket() as intruder:
        with pytest.raises(OSError):
            intruder.bind(("127.0.0.1", port))
    store = TCPStore("127.0.0.1", port, is_master=True, timeout=5)
    store.set("k", b"v")
    store.close()


def assert_free(port):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_spawn_keeps_its_ports_reserved_until_released():
    _, envs, ports = build_environments(2, {"backend": "gloo"})
    try:
        assert_taken_but_listenable(int(envs[0]["MASTER_PORT"]))
        for endpoint in envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(","):
            with socket.socket() as intruder, pytest.raises(OSError):
                intruder.bind(("127.0.0.1", int(endpoint.rpartition(":")[2])))
    finally:
        ports.release()
    assert_free(int(envs[0]["MASTER_PORT"]))


def test_launch_keeps_its_ports_reserved_until_the_job_ends():
    plan = make_plan(build_parser().parse_args(["--nproc_per_node", "2", "--backend", "gloo",
                                                str(jobs.RANK_TASKS)]))
    port = int(plan.envs[0]["MASTER_PORT"])
    try:
        assert_taken_but_listenable(port)
    finally:
        plan.release()
    assert_free(port)


def test_reservations_never_hand_out_a_port_twice():
    with PortReservation("127.0.0.1", 20) as first, PortReservation("127.0.0.1", 20) as second:
        assert len(set(first.ports) | set(second.ports)) == 40


@pytest.mark.timeout(60)
def test_the_rank_that_failed_first_is_blamed_even_when_it_exits_last(job_token, tmp_path):
    # Rank 1 raises, closes its connections, and exits 1.5 s later: ranks 0 and 2 lose their
    # connections to it and exit first. The launcher must still name rank 1.
    started = time.monotonic()
    result = jobs.finish(jobs.start([*LAUNCH, "--nproc_per_node", "3", "--log_dir", str(tmp_path),
                                     str(jobs.RANK_TASKS), "--fail-rank", "1", "--linger", "1.5"],
                                    job_token), timeout=45)
    assert result.returncode == 1, result.stderr
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "last lines of rank 1" in result.stderr
    assert "ValueError: rank 1 fails on purpose" in result.stderr
    assert "failed after it" in result.stderr
    assert time.monotonic() - started < 30
    assert jobs.wait_until_gone(job_token) == []


def two_nodes(token, node0_args, node1_args, master_port):
    master = f"127.0.0.1:{master_port}"
    return [jobs.start([*LAUNCH, "--nnodes", "2", "--node_rank", str(node), "--master", master,
                        "--nproc_per_node", "1", str(jobs.RANK_TASKS), *node_args], token,
                       MINIDP_JOB_SECRET=token)
            for node, node_args in ((1, node1_args), (0, node0_args))]


@pytest.mark.timeout(60)
def test_a_failing_node_stops_the_other_nodes(job_token):
    with PortReservation("127.0.0.1", 1) as master:
        node1, node0 = two_nodes(job_token, ["--exit-code", "3"], ["--sleep", "120"],
                                 master.ports[0])
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
        node1, node0 = two_nodes(job_token, ["--sleep", "120"], ["--sleep", "120"],
                                 master.ports[0])
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
