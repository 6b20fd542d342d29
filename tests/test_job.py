"""minidp.core.distributed.job: port reservations, held by spawn's and the launcher's job plans until
the job ends, so nothing else on the machine takes a port in between."""

import socket

import pytest

import jobs

from minidp.core.distributed.job import PortReservation
from minidp.core.distributed.launch.main import build_parser, make_plan
from minidp.core.distributed.spawn import build_environments
from minidp.core.distributed.store import TCPStore


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
    plan = make_plan(build_parser().parse_args(["--nproc_per_node", "2", "--backend", "gloo", str(jobs.RANK_TASKS)]))
    port = int(plan.envs[0]["MASTER_PORT"])
    try:
        assert_taken_but_listenable(port)
    finally:
        plan.release()
    assert_free(port)


def test_reservations_never_hand_out_a_port_twice():
    with PortReservation("127.0.0.1", 20) as first, PortReservation("127.0.0.1", 20) as second:
        assert len(set(first.ports) | set(second.ports)) == 40
