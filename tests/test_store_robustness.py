"""TCPStore robustness: closing stops every server thread, declared sizes cost nothing, the client
never talks to itself and never reads a stale reply, a busy port gets an actionable error."""
import socket
import struct
import threading
import time
import tracemalloc

import pytest

import minidp.distributed.store as store_module
from minidp.distributed.store import MAX_FRAME_BYTES, TCPStore
from minidp.distributed import auth
from minidp.distributed.store import STORE_CONTEXT
from store_clients import handshaken_socket


def store_threads(before):
    return [t for t in threading.enumerate() if t.is_alive() and t not in before
            and t.name.startswith("minidp-store")]


def test_close_wakes_blocked_gets_and_ends_every_server_thread():
    before = set(threading.enumerate())
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
    client = TCPStore("127.0.0.1", master.port, timeout=10)
    outcome = {}

    def blocked_get():
        started = time.monotonic()
        try:
            client.get("never-set", timeout=60)
        except RuntimeError as error:
            outcome["error"] = str(error)
        outcome["seconds"] = time.monotonic() - started

    getter = threading.Thread(target=blocked_get)
    getter.start()
    time.sleep(0.3)  # the request is now waiting inside the server
    master.close()
    getter.join(10)
    client.close()
    assert not getter.is_alive()
    assert outcome["seconds"] < 5, "the client waited for its 60 s timeout"
    assert "may have exited" in outcome["error"]
    deadline = time.monotonic() + 5
    while store_threads(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store_threads(before) == []


def test_a_declared_large_frame_is_not_allocated_up_front():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
    bad = handshaken_socket(master.port)
    tracemalloc.start()
    try:
        bad.sendall(struct.pack("!I", MAX_FRAME_BYTES) + b"\x01")
        time.sleep(0.5)  # the server thread has read the header and waits for the body
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        bad.close()
        master.close()
    assert peak < 8 << 20, f"the server allocated {peak >> 20} MiB for a frame not sent"


def test_a_self_connected_socket_is_dropped_and_the_connection_retried(monkeypatch):
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
    real_create_connection = socket.create_connection
    attempts = []

    def first_attempt_connects_to_itself(address, timeout=None):
        attempts.append(address)
        if len(attempts) == 1:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.connect(sock.getsockname())  # TCP simultaneous open with itself
            return sock
        return real_create_connection(address, timeout=timeout)

    monkeypatch.setattr(store_module.socket, "create_connection",
                        first_attempt_connects_to_itself)
    try:
        client = TCPStore("127.0.0.1", master.port, timeout=10)
        client.set("key", b"value")
        assert master.get("key", timeout=1) == b"value"
        assert client.get("key", timeout=1) == b"value"
        assert len(attempts) == 2
        client.close()
    finally:
        master.close()


def test_a_request_that_timed_out_leaves_the_client_closed_not_out_of_step():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted = []

    def slow_server():
        conn, _ = listener.accept()
        accepted.append(conn)
        auth.accept_handshake(conn, b"", STORE_CONTEXT)
        conn.recv(1024)
        time.sleep(0.6)  # answers the first request after the client gave up on it
        conn.sendall(struct.pack("!I", 2) + b"\x00\x07")

    server = threading.Thread(target=slow_server)
    server.start()
    client = TCPStore("127.0.0.1", port, timeout=0.3)
    try:
        with pytest.raises(RuntimeError, match="failed"):
            client.num_keys()
        server.join(5)
        with pytest.raises(RuntimeError, match="closed after an earlier failure"):
            client.set("next", b"1")
    finally:
        client.close()
        for conn in accepted:
            conn.close()
        listener.close()


def test_hosting_on_a_busy_port_says_what_to_do():
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"cannot host the store at 127.0.0.1:{port}.*"
                                               "pick another free port"):
            TCPStore("127.0.0.1", port, is_master=True, timeout=1)


def test_no_descriptor_outlives_closed_stores():
    def open_descriptors():
        import os
        return len(os.listdir("/proc/self/fd"))

    before = open_descriptors()
    for _ in range(3):
        master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
        clients = [TCPStore("127.0.0.1", master.port, timeout=10) for _ in range(4)]
        for index, client in enumerate(clients):
            client.set(f"k{index}", b"v")
        for client in clients:
            client.close()
        master.close()
    assert open_descriptors() == before


def test_a_large_reply_survives_a_client_that_is_slow_to_read():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
    value = bytes(range(256)) * (32 << 12)  # 32 MiB: far more than the socket buffers hold
    master.set("big", value)
    key = b"big"
    body = b"\x02" + struct.pack("!I", len(key)) + key + struct.pack("!q", 1000)  # GET
    slow = handshaken_socket(master.port, timeout=10)
    try:
        slow.sendall(struct.pack("!I", len(body)) + body)
        time.sleep(1.5)  # a busy client: the server's send stalls meanwhile
        received = bytearray()
        while len(received) < 4 + 1 + len(value):
            chunk = slow.recv(1 << 20)
            if not chunk:
                break
            received += chunk
    finally:
        slow.close()
        master.close()
    assert len(received) == 5 + len(value), "the server dropped the slow client mid-reply"
    assert received[4] == 0 and received[5:] == value
