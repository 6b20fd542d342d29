"""Launcher and spawn: reserved ports, blaming the rank that failed first, and a failure
on one node stopping every node."""
import json
import os
import signal
import socket
import sys
import time

import pytest


import jobs
import rank_tasks

from minidp.distributed import supervisor as supervisor_module
from minidp.distributed.failure_record import (
    PeerFailedError,
    blamed_rank,
    read_failure_records,
    write_failure_record,
)
from minidp.distributed.job import PortReservation
from minidp.distributed.launch.main import build_parser, make_plan
from minidp.distributed.spawn import RankFailedError, build_environments, spawn
from minidp.distributed.store import TCPStore
from minidp.distributed.supervisor import RankHandle, Supervisor

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
    plan = build_environments(2, {"backend": "gloo"})
    envs = plan.envs
    try:
        assert_taken_but_listenable(int(envs[0]["MASTER_PORT"]))
        for endpoint in envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(","):
            with socket.socket() as intruder, pytest.raises(OSError):
                intruder.bind(("127.0.0.1", int(endpoint.rpartition(":")[2])))
    finally:
        plan.release()
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
    assert "failed after it, most likely because they lost their connections to it" in \
        result.stderr
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


@pytest.mark.timeout(60)
def test_the_rank_blamed_by_the_records_is_blamed_whatever_the_error_text(job_token):
    # Ranks 0 and 2 fail first, with an MPI-style message no regex of the old launcher knew,
    # but their failure records blame rank 1, which fails 0.5 s later.
    result = jobs.finish(jobs.start([*LAUNCH, "--nproc_per_node", "3", str(jobs.RANK_TASKS),
                                     "--blame", "1"], job_token), timeout=45)
    assert result.returncode == 1, result.stderr
    assert "rank 1 (pid" in result.stderr and "exited with code 1" in result.stderr
    assert "last lines of rank 1" in result.stderr
    assert "rank(s) 0, 2 failed after it" in result.stderr
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(60)
def test_spawn_blames_the_rank_the_records_blame():
    context = spawn(rank_tasks.blame, args=(0, 0.5), nprocs=2, join=False)
    with pytest.raises(RankFailedError, match="ValueError: rank 0 fails on purpose") as caught:
        context.join()
    assert caught.value.rank == 0
    assert "Ranks 1 failed too" in str(caught.value)


def test_failure_records_name_the_blamed_peer_through_the_exception_chain(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDP_FAILURE_DIR", str(tmp_path))
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    try:
        try:
            raise PeerFailedError("NCCL error: remote process exited or there was a network "
                                  "error", blamed_rank=5)
        except PeerFailedError:
            raise RuntimeError("all_reduce failed")
    except RuntimeError as error:
        path = write_failure_record(error)
    records = read_failure_records(str(tmp_path))
    assert path == str(tmp_path / "rank-3.json") and list(records) == [3]
    record = records[3]
    assert record.blamed_rank == 5 and record.error == "RuntimeError: all_reduce failed"
    assert abs(record.time - time.time()) < 60 and record.pid == os.getpid()
    assert blamed_rank(ValueError("lost the connection to rank 2")) is None


class FakeRank(RankHandle):
    """A rank without a process: the test sets its exit and whether it obeys signals."""

    def __init__(self, rank, obeys=(signal.SIGTERM, signal.SIGKILL)):
        super().__init__(rank, pid=1000 + rank)
        self.code = None
        self.obeys = obeys
        self.received = []

    @property
    def returncode(self):
        return self.code

    def watch(self, events):
        self.events = events

    def _deliver(self, signum):
        self.received.append(signum)
        if signum in self.obeys:
            self.code = -signum

    def wait(self, timeout):
        return self.code is not None

    def exit(self, code):
        self.code = code
        self.events.put(("exit", self.rank))


def supervised(tmp_path, count, **kwargs):
    supervisor = Supervisor(str(tmp_path))
    ranks = [FakeRank(rank, **kwargs) for rank in range(count)]
    for rank in ranks:
        supervisor.add(rank)
    supervisor.watch()
    return supervisor, ranks


def record(tmp_path, rank, when, blamed=None):
    (tmp_path / f"rank-{rank}.json").write_text(json.dumps(
        {"rank": rank, "pid": 1000 + rank, "time": when, "error": "E: x", "blamed_rank": blamed}))


def test_supervisor_blames_by_records_then_by_time(tmp_path):
    supervisor, ranks = supervised(tmp_path, 4)
    record(tmp_path, 0, 10.0, blamed=2)   # earliest, but blames rank 2, which failed too
    record(tmp_path, 2, 11.0)
    ranks[0].exit(1)
    ranks[2].exit(1)
    ranks[3].exit(-signal.SIGKILL)      # no record: ordered by when its exit was seen (now)
    event = supervisor.wait(5)
    assert event.kind == "failed"
    assert [event.value.culprit.rank] + [r.rank for r in event.value.others] == [2, 3, 0]
    assert event.value.describe() == "rank 2 (pid 1002) exited with code 1"
    supervisor.stop()
    assert ranks[1].received == [signal.SIGTERM]


def test_supervisor_kills_a_rank_that_ignores_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(supervisor_module, "STOP_GRACE_SECONDS", 0.1)
    supervisor, ranks = supervised(tmp_path, 2, obeys=(signal.SIGKILL,))
    supervisor.stop()
    assert [rank.received for rank in ranks] == [[signal.SIGTERM, signal.SIGKILL]] * 2
    assert supervisor.wait(0.1).kind == "finished"
