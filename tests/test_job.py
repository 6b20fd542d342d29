"""minidp.core.distributed.job: port reservations, held by spawn's and the launcher's job plans until
the job ends, so nothing else on the machine takes a port in between."""

import socket

import pytest

import jobs

from minidp.core.distributed.job import PortReservation
from minidp.core.distributed.launch.main import build_parser, make_plan
from minidp.core.distributed.spawn import build_environments
from minidp.core.distributed.store import STORE_HANDOVER_ENV, TCPStore


def assert_taken_but_listenable(env, monkeypatch):
    """Nobody else can bind the store's port, yet rank 0 can host its store there."""
    port = int(env["MASTER_PORT"])
    with socket.socket() as intruder:
        with pytest.raises(OSError):
            intruder.bind(("127.0.0.1", port))
    monkeypatch.setenv(STORE_HANDOVER_ENV, env[STORE_HANDOVER_ENV])
    store = TCPStore("127.0.0.1", port, is_master=True, timeout=5)
    store.set("k", b"v")
    store.close()


def assert_free(port):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_spawn_keeps_its_ports_reserved_until_released(monkeypatch):
    plan = build_environments(2, {"backend": "gloo"})
    envs = plan.envs
    try:
        assert_taken_but_listenable(envs[0], monkeypatch)
        for endpoint in envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(","):
            with socket.socket() as intruder, pytest.raises(OSError):
                intruder.bind(("127.0.0.1", int(endpoint.rpartition(":")[2])))
    finally:
        plan.release()
    assert_free(int(envs[0]["MASTER_PORT"]))


def test_launch_keeps_its_ports_reserved_until_the_job_ends(monkeypatch):
    plan = make_plan(build_parser().parse_args(["--nproc_per_node", "2", "--backend", "gloo", str(jobs.RANK_TASKS)]))
    port = int(plan.envs[0]["MASTER_PORT"])
    try:
        assert_taken_but_listenable(plan.envs[0], monkeypatch)
    finally:
        plan.release()
    assert_free(port)


def test_reservations_never_hand_out_a_port_twice():
    with PortReservation("127.0.0.1", 20) as first, PortReservation("127.0.0.1", 20) as second:
        assert len(set(first.ports) | set(second.ports)) == 40


def test_a_process_without_the_secret_cannot_take_the_store_port_first(monkeypatch):
    """Another user binds the planned store port with SO_REUSEADDR and listens before rank 0:
    the port already listens, so that fails, and rank 0 still hosts the job's store there."""
    plan = build_environments(2, {"backend": "gloo"})
    env = plan.envs[0]
    port = int(env["MASTER_PORT"])
    intruder = socket.socket()
    try:
        intruder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError):
            intruder.bind(("127.0.0.1", port))
            intruder.listen()
        secret = env["MINIDP_JOB_SECRET"].encode()
        monkeypatch.setenv(STORE_HANDOVER_ENV, env[STORE_HANDOVER_ENV])
        rank0 = TCPStore("127.0.0.1", port, is_master=True, timeout=5, secret=secret)
        rank1 = TCPStore("127.0.0.1", port, timeout=5, secret=secret)
        rank1.set("ready", b"1")
        assert rank0.get("ready") == b"1"
        rank1.close()
        rank0.close()
    finally:
        intruder.close()
        plan.release()
    assert_free(port)
