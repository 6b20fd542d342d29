"""The rendezvous store against intruders and unlucky clients: each case states its bound.

Intruders (no job secret, the wrong one, a fake store) get nothing and change nothing; silent,
greedy or malformed clients cost the store seconds and bounded memory, and it keeps serving the
job; integers out of range are refused with clear errors; the decoders survive fuzzing.
"""

import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import minidp.core.distributed.store as store_module
from minidp.core.distributed import auth
from minidp.core.distributed.store import MalformedFrame, Request, STORE_CONTEXT, TCPStore, decode_request
from store_clients import handshaken_socket

SECRET = b"job-secret-for-tests"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def master():
    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=10, secret=SECRET)
    yield store
    store.close()


def frame(command: int, body: bytes = b"") -> bytes:
    return struct.pack("!I", len(body) + 1) + bytes([command]) + body


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def test_a_client_without_the_secret_can_neither_read_nor_write(master):
    master.set("addr/1", b"127.0.0.1:5000")
    with pytest.raises(RuntimeError, match="MINIDP_JOB_SECRET"):
        TCPStore("127.0.0.1", master.port, timeout=5, secret=b"guess")
    intruder = socket.create_connection(("127.0.0.1", master.port), timeout=5)
    intruder.recv(auth.CHALLENGE_BYTES)  # the challenge; answer with a request instead
    request = frame(store_module.SET, struct.pack("!I", 6) + b"addr/1" + struct.pack("!I", 4) + b"evil")
    intruder.sendall(request.ljust(auth.CHALLENGE_BYTES + auth.PROOF_BYTES, b"\0"))
    assert closed_by_server(intruder, 5)  # bound: dropped as soon as the proof is read
    intruder.close()
    assert master.get("addr/1") == b"127.0.0.1:5000"


def test_a_client_refuses_a_store_that_does_not_know_the_secret():
    fake = TCPStore("127.0.0.1", 0, is_master=True, timeout=5, secret=b"other job")
    try:
        with pytest.raises(RuntimeError, match="did not accept"):
            TCPStore("127.0.0.1", fake.port, timeout=5, secret=SECRET)
    finally:
        fake.close()


def test_the_handshake_binds_its_context():
    a, b = socket.socketpair()
    errors = []
    listener = threading.Thread(target=lambda: _catch(errors, auth.accept_handshake, a, SECRET, b"gloo/default/0/1", 5))
    listener.start()
    with pytest.raises(auth.AuthenticationError):
        auth.dial_handshake(b, SECRET, b"gloo/default/0/2", 5)  # relayed to another pair
    listener.join(5)
    assert errors and isinstance(errors[0], auth.AuthenticationError)
    a.close()
    b.close()


def _catch(errors, fn, *args):
    try:
        fn(*args)
    except Exception as error:  # recorded for the assertion
        errors.append(error)


def test_a_silent_client_costs_seconds_not_the_group_timeout(master, monkeypatch):
    monkeypatch.setattr(auth, "HANDSHAKE_SECONDS", 0.5)
    silent = socket.create_connection(("127.0.0.1", master.port), timeout=5)
    started = time.monotonic()
    client = TCPStore("127.0.0.1", master.port, timeout=5, secret=SECRET)
    client.set("k", b"v")  # others are served meanwhile
    assert closed_by_server(silent, 5)
    assert time.monotonic() - started < 3  # bound: the handshake limit plus polling
    silent.close()
    client.close()


def test_connections_beyond_the_cap_are_refused_and_the_job_goes_on(master, monkeypatch):
    client = TCPStore("127.0.0.1", master.port, timeout=5, secret=SECRET)
    monkeypatch.setattr(store_module, "MAX_CLIENTS", 3)  # master's client + client + 1
    extra = handshaken_socket(master.port, SECRET)
    refused = socket.create_connection(("127.0.0.1", master.port), timeout=5)
    assert closed_by_server(refused, 5)
    client.set("still", b"served")
    assert master.get("still") == b"served"
    for sock in (extra, refused):
        sock.close()
    client.close()


def test_stored_bytes_are_capped_with_a_clear_error(master, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STORED_BYTES", 1000)
    master.set("small", b"x" * 100)
    with pytest.raises(RuntimeError, match="MAX_STORED_BYTES"):
        master.set("big", b"x" * 2000)
    master.set("small", b"y" * 800)  # replacing a value counts only the difference
    assert master.get("small") == b"y" * 800
    assert master.delete_key("small")
    master.set("big", b"x" * 900)


def test_frames_beyond_the_in_flight_budget_close_only_that_connection(master, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_INFLIGHT_BYTES", 1 << 20)
    greedy = handshaken_socket(master.port, SECRET)
    try:
        greedy.sendall(struct.pack("!I", 2 << 20) + b"\x01" * (2 << 20))
    except OSError:
        pass  # the server closed it while the bytes were still going out
    assert closed_by_server(greedy, 5)
    greedy.close()
    master.set("after", b"ok")


def test_declared_lengths_hold_no_budget_and_stalled_frames_time_out(master, monkeypatch):
    """Four clients that send only a 64 MiB length prefix: the others are served at once, and
    the stalled ones are dropped after FRAME_STALL_SECONDS."""
    monkeypatch.setattr(store_module, "FRAME_STALL_SECONDS", 1.0)
    stalled = [handshaken_socket(master.port, SECRET) for _ in range(4)]
    for sock in stalled:
        sock.sendall(struct.pack("!I", store_module.MAX_FRAME_BYTES) + b"\x01")
    client = TCPStore("127.0.0.1", master.port, timeout=5, secret=SECRET)
    client.set("served", b"yes" * 1000)
    assert master.get("served", timeout=1) == b"yes" * 1000
    assert all(closed_by_server(sock, 5) for sock in stalled)
    for sock in stalled:
        sock.close()
    client.close()


def test_a_refused_client_connects_afresh_on_its_next_request(master, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_INFLIGHT_BYTES", 1 << 20)
    client = TCPStore("127.0.0.1", master.port, timeout=5, secret=SECRET)
    with pytest.raises(RuntimeError, match="failed"):
        client.set("big", b"x" * (3 << 20))
    client.set("small", b"ok")
    assert master.get("small") == b"ok"
    client.close()
    with pytest.raises(RuntimeError, match="this client is closed"):
        client.num_keys()


def test_integers_out_of_range_are_refused(master):
    sock = handshaken_socket(master.port, SECRET)
    sock.sendall(frame(store_module.GET, struct.pack("!I", 1) + b"k" + struct.pack("!q", 2**63 - 1)))
    assert closed_by_server(sock, 5)  # a malformed wait, not a traceback in rank 0
    sock.close()
    master.add("counter", 2**63 - 1)
    with pytest.raises(RuntimeError, match="overflow"):
        master.add("counter", 1)
    with pytest.raises(TypeError, match="int"):
        master.add("counter", True)
    with pytest.raises(ValueError, match="64-bit"):
        master.add("counter", 2**63)
    with pytest.raises(ValueError, match="timeout"):
        master.get("counter", timeout=1e300)
    assert master.add("counter", 0) == 2**63 - 1


def test_the_store_keeps_accepting_after_running_out_of_descriptors():
    """In a child process with a low descriptor limit: exhaust it, free it, connect again."""
    script = f"""
import resource, socket, sys, time
sys.path.insert(0, {str(ROOT)!r})
from minidp.core.distributed.store import TCPStore
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10, secret=b"s")
hogs = []
try:
    while True:
        hogs.append(socket.create_connection(("127.0.0.1", master.port), timeout=2))
except OSError:
    pass
time.sleep(0.5)  # the accept loop meets EMFILE and backs off
for sock in hogs:
    sock.close()
client = TCPStore("127.0.0.1", master.port, timeout=10, secret=b"s")
client.set("alive", b"yes")
print(len(hogs), master.get("alive").decode())
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    opened, answer = result.stdout.split()
    assert int(opened) > 10 and answer == "yes"


_fields = st.one_of(st.binary(max_size=12), st.integers(0, 255).map(lambda n: bytes([n])))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 9), st.lists(_fields, max_size=6))
def test_fuzz_the_request_decoder(command, parts):
    """Any body either decodes into a request or is malformed; nothing else escapes."""
    body = bytes([command]) + b"".join(struct.pack("!I", len(p)) + p if i % 2 == 0 else p for i, p in enumerate(parts))
    try:
        request = decode_request(body)
    except MalformedFrame:
        return
    assert isinstance(request, Request) and request.command == command
    assert 0 <= request.number <= store_module.MAX_WAIT_MS or request.command == store_module.ADD


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=96))
def test_fuzz_the_handshake(garbage):
    """Whatever a dialer sends, the listener refuses it with AuthenticationError only."""
    a, b = socket.socketpair()
    try:
        b.sendall(garbage)
        b.shutdown(socket.SHUT_WR)
        with pytest.raises(auth.AuthenticationError):
            auth.accept_handshake(a, SECRET, STORE_CONTEXT, 2)
    finally:
        a.close()
        b.close()


def test_a_ring_connection_without_the_secret_is_dropped_and_the_group_forms(monkeypatch):
    """An intruder dials a rank's set-up listener first: it is dropped (logged), the real peer
    still connects, and an all-reduce gives the right sum."""
    from minidp.core.distributed.backends.tcp import GlooProcessGroup

    monkeypatch.setenv("MINIDP_JOB_SECRET", SECRET.decode())
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10, secret=SECRET)
    results, intruded = {}, threading.Event()

    def intrude():
        address = master.get("gloo/ring/1/addr/1", timeout=10).decode()
        host, _, port = address.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(struct.pack("!4sII", b"MDPG", 0, 2))
            sock.recv(auth.CHALLENGE_BYTES)
            sock.sendall(b"\0" * (auth.CHALLENGE_BYTES + auth.PROOF_BYTES))
            intruded.set()
            closed_by_server(sock, 5)

    def rank(r):
        if r == 0:
            intruded.wait(10)  # rank 0 dials only after the intruder was refused
        store = TCPStore("127.0.0.1", master.port, timeout=10, secret=SECRET)
        group = GlooProcessGroup(store, r, 2, name="ring", timeout=10)
        data = np.full(4, float(r + 1))
        group.all_reduce(data)
        results[r] = data
        group.shutdown()
        store.close()

    threads = [threading.Thread(target=intrude)] + [threading.Thread(target=rank, args=(r,)) for r in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    master.close()
    assert intruded.is_set()
    assert [results[r].tolist() for r in (0, 1)] == [[3.0] * 4, [3.0] * 4]
