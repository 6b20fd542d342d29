"""TCPStore: the operations, blocking gets, 16 concurrent clients, and malformed frames."""
import socket
import struct
import threading

import pytest

from minidp.distributed.store import MAX_FRAME_BYTES, TCPStore
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


@pytest.mark.parametrize("garbage", [
    struct.pack("!I", MAX_FRAME_BYTES + 1),           # oversized frame
    struct.pack("!I", 0),                             # empty frame
    struct.pack("!I", 3) + b"\x63ab",                 # unknown command
    struct.pack("!I", 5) + b"\x01\xff\xff\xff\xff",   # field longer than the frame
    struct.pack("!I", 7) + b"\x02\x00\x00\x00\x02\xff\xfe" ,  # key that is not UTF-8
], ids=["oversized", "empty", "unknown-command", "truncated-field", "bad-utf8"])
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
    starter = threading.Timer(0.3, lambda: holder.setdefault(
        "master", TCPStore("127.0.0.1", port, is_master=True, timeout=10)))
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
