"""TCPStore: the operations, blocking gets, 16 concurrent clients, and malformed frames; and its
robustness: closing stops every server thread, declared sizes cost nothing, the client never
talks to itself and never reads a stale reply, a busy port gets an actionable error."""

import socket
import struct
import threading
import time
import tracemalloc

import pytest

import minidp.core.distributed.store as store_module
from minidp.core.distributed import auth
from minidp.core.distributed.store import MAX_FRAME_BYTES, STORE_CONTEXT, TCPStore
from store_clients import handshaken_socket


@pytest.fixture
def master():
    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
    yield store
    store.close()


def client_of(master, timeout=10):
    return TCPStore("127.0.0.1", master.port, timeout=timeout)


def test_set_get_add_check_delete_and_count(master):
    client = client_of(master)
    master.set("alpha", b"\x00\x01binary")
    client.set("beta", "text")
    assert client.get("alpha") == b"\x00\x01binary"
    assert master.get("beta") == b"text"
    assert client.add("counter", 5) == 5
    assert master.add("counter", -2) == 3
    assert client.get("counter") == b"3"
    assert client.check(["alpha", "beta"]) and not client.check(["alpha", "missing"])
    assert master.num_keys() == 3
    assert client.delete_key("alpha") and not client.delete_key("alpha")
    assert master.num_keys() == 2
    client.close()


def test_get_blocks_until_another_client_sets_the_key(master):
    client = client_of(master)
    setter = threading.Timer(0.2, lambda: master.set("late", b"here"))
    setter.start()
    try:
        assert client.get("late", timeout=10) == b"here"
        client.wait(["late"], timeout=1)
    finally:
        setter.join()
        client.close()


def test_get_and_wait_time_out_with_the_key_named(master):
    with pytest.raises(RuntimeError, match="get\\('never'\\).*timed out after 0.2 s"):
        master.get("never", timeout=0.2)
    with pytest.raises(RuntimeError, match="wait\\(\\['never'\\]\\).*timed out"):
        master.wait(["never"], timeout=0.1)


def test_bad_arguments_are_rejected(master):
    with pytest.raises(TypeError):
        master.set("key", 12)
    with pytest.raises(TypeError):
        master.get("")
    master.set("text", b"not a number")
    with pytest.raises(RuntimeError, match="does not hold an integer"):
        master.add("text", 1)
    with pytest.raises(ValueError):
        TCPStore("127.0.0.1", 0, is_master=False)


def test_sixteen_concurrent_clients(master):
    errors = []
    barrier = threading.Barrier(16)

    def client_work(index):
        try:
            client = client_of(master)
            barrier.wait(10)
            for step in range(25):
                client.add("shared", 1)
                client.set(f"client/{index}/{step}", str(index * step))
            # everyone's last key becomes visible to everyone
            for other in range(16):
                assert client.get(f"client/{other}/24", timeout=10) == str(other * 24).encode()
            client.close()
        except Exception as error:  # reported below with the client's index
            errors.append(f"client {index}: {error!r}")

    threads = [threading.Thread(target=client_work, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert master.get("shared") == b"400"
    assert master.num_keys() == 1 + 16 * 25


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack("!I", MAX_FRAME_BYTES + 1),  # oversized frame
        struct.pack("!I", 0),  # empty frame
        struct.pack("!I", 3) + b"\x63ab",  # unknown command
        struct.pack("!I", 5) + b"\x01\xff\xff\xff\xff",  # field longer than the frame
        struct.pack("!I", 7) + b"\x02\x00\x00\x00\x02\xff\xfe",  # key that is not UTF-8
    ],
    ids=["oversized", "empty", "unknown-command", "truncated-field", "bad-utf8"],
)
def test_malformed_frame_closes_only_that_connection(master, garbage):
    client = client_of(master)
    client.set("before", b"1")
    bad = handshaken_socket(master.port)
    bad.sendall(garbage)
    assert bad.recv(16) == b""  # the server hung up on the bad client
    bad.close()
    client.set("after", b"2")
    assert client.get("before") == b"1" and client_of(master).get("after") == b"2"
    client.close()


def test_client_retries_until_the_master_starts():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    holder = {}
    starter = threading.Timer(
        0.3, lambda: holder.setdefault("master", TCPStore("127.0.0.1", port, is_master=True, timeout=10))
    )
    starter.start()
    try:
        client = TCPStore("127.0.0.1", port, timeout=10)
        starter.join()
        client.set("k", b"v")
        assert holder["master"].get("k") == b"v"
        client.close()
    finally:
        starter.join()
        if "master" in holder:
            holder["master"].close()


def test_client_gives_up_after_its_timeout_with_a_hint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RuntimeError, match="cannot reach the store .* MASTER_ADDR"):
        TCPStore("127.0.0.1", port, timeout=0.3)


def store_threads(before):
    return [t for t in threading.enumerate() if t.is_alive() and t not in before and t.name.startswith("minidp-store")]


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

    monkeypatch.setattr(store_module.socket, "create_connection", first_attempt_connects_to_itself)
    try:
        client = TCPStore("127.0.0.1", master.port, timeout=10)
        client.set("key", b"value")
        assert master.get("key", timeout=1) == b"value"
        assert client.get("key", timeout=1) == b"value"
        assert len(attempts) == 2
        client.close()
    finally:
        master.close()


def test_a_request_that_timed_out_is_not_answered_out_of_step():
    """The late reply goes to the dropped connection; the next request gets a fresh one."""
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
        fresh, _ = listener.accept()
        accepted.append(fresh)
        auth.accept_handshake(fresh, b"", STORE_CONTEXT)
        fresh.recv(1024)
        fresh.sendall(struct.pack("!I", 9) + b"\x00" + struct.pack("!q", 3))

    server = threading.Thread(target=slow_server)
    server.start()
    client = TCPStore("127.0.0.1", port, timeout=0.3)
    try:
        with pytest.raises(RuntimeError, match="failed"):
            client.num_keys()
        assert client.num_keys() == 3
        server.join(5)
    finally:
        client.close()
        for conn in accepted:
            conn.close()
        listener.close()


def test_hosting_on_a_busy_port_says_what_to_do():
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"cannot host the store at 127.0.0.1:{port}.*pick another free port"):
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
