"""TCPStore: the key-value rendezvous every process group bootstraps from.

One process (rank 0 or a launcher) hosts the server; every rank, the host included, talks to it
through a client. Keys are strings, values are bytes; nothing is ever unpickled.

Wire format (all integers big-endian). A request is ``u32 length`` followed by ``length`` bytes:
``u8 command`` and the command's fields, where a string or bytes field is ``u32 size`` + data
and a number is ``i64``. A reply is ``u32 length`` + ``u8 status`` (0 ok, 1 timed out, 2 error)
+ payload. A frame longer than ``MAX_FRAME_BYTES``, an unknown command or a truncated field
closes that one connection; the server and its other clients carry on.
"""
from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

logger = logging.getLogger("minidp.distributed")

MAX_FRAME_BYTES = 64 << 20
FRAME_COMPLETION_SECONDS = 60.0
IDLE_POLL_SECONDS = 0.5

_LEN = struct.Struct("!I")
_I64 = struct.Struct("!q")

SET, GET, ADD, WAIT, CHECK, DELETE, NUM_KEYS = range(1, 8)
OK, TIMED_OUT, ERROR = range(3)


class MalformedFrame(Exception):
    """A request that does not follow the wire format; its connection is closed."""


def _recv_exact(sock: socket.socket, size: int, deadline: Optional[float],
                keep_waiting: Callable[[], bool] = lambda: False) -> Optional[bytes]:
    """Read exactly ``size`` bytes; None on a clean end of stream before the first byte.

    The socket's own timeout is the polling interval: while nothing has arrived yet and
    ``keep_waiting()`` holds, an expired interval just polls again; once the first byte is in,
    the rest must come before ``deadline``.
    """
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        try:
            count = sock.recv_into(view[received:])
        except socket.timeout:
            if received == 0 and keep_waiting():
                continue
            if deadline is not None and time.monotonic() < deadline:
                continue
            raise
        if count == 0:
            if received == 0:
                return None
            raise ConnectionError("connection closed in the middle of a frame")
        received += count
        if deadline is None:
            deadline = time.monotonic() + FRAME_COMPLETION_SECONDS
    return bytes(buffer)


def _pack_bytes(data: bytes) -> bytes:
    return _LEN.pack(len(data)) + data


class _Reader:
    """Walks the fields of one request body; any overrun means the frame is malformed."""

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._offset = 0

    def take(self, size: int) -> bytes:
        end = self._offset + size
        if end > len(self._body):
            raise MalformedFrame("field runs past the end of the frame")
        chunk = self._body[self._offset:end]
        self._offset = end
        return chunk

    def bytes_field(self) -> bytes:
        return self.take(_LEN.unpack(self.take(4))[0])

    def key(self) -> str:
        try:
            return self.bytes_field().decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedFrame("key is not UTF-8") from None

    def i64(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def keys(self) -> List[str]:
        return [self.key() for _ in range(_LEN.unpack(self.take(4))[0])]

    def finish(self) -> None:
        if self._offset != len(self._body):
            raise MalformedFrame("trailing bytes after the last field")


class _StoreServer:
    """The server side: a dict guarded by a condition, one thread per connected client."""

    def __init__(self, host: str, port: int) -> None:
        self._data: Dict[str, bytes] = {}
        self._changed = threading.Condition()
        self._stopping = False
        self._clients: List[socket.socket] = []
        self._listener = socket.create_server((host, port), backlog=128)
        self._listener.settimeout(IDLE_POLL_SECONDS)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"minidp-store-{self.port}")
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(IDLE_POLL_SECONDS)
            with self._changed:
                self._clients.append(conn)
            threading.Thread(target=self._serve_client, args=(conn,), daemon=True,
                             name="minidp-store-client").start()

    def _serve_client(self, conn: socket.socket) -> None:
        peer = "unknown"
        try:
            peer = "%s:%s" % conn.getpeername()[:2]
            while not self._stopping:
                header = _recv_exact(conn, 4, None, lambda: not self._stopping)
                if header is None:
                    return
                length = _LEN.unpack(header)[0]
                if not 1 <= length <= MAX_FRAME_BYTES:
                    raise MalformedFrame(f"frame length {length} outside 1..{MAX_FRAME_BYTES}")
                body = _recv_exact(conn, length, time.monotonic() + FRAME_COMPLETION_SECONDS)
                if body is None:
                    raise MalformedFrame("connection closed before the frame body")
                status, payload = self._handle(_Reader(body))
                conn.sendall(_LEN.pack(len(payload) + 1) + bytes([status]) + payload)
        except MalformedFrame as error:
            logger.warning("TCPStore server: closing connection from %s: %s", peer, error)
        except (OSError, ConnectionError):
            pass
        finally:
            with self._changed:
                if conn in self._clients:
                    self._clients.remove(conn)
            conn.close()

    def _handle(self, reader: _Reader) -> Tuple[int, bytes]:
        command = reader.take(1)[0]
        if command == SET:
            key, value = reader.key(), reader.bytes_field()
            reader.finish()
            with self._changed:
                self._data[key] = value
                self._changed.notify_all()
            return OK, b""
        if command == GET:
            key, timeout_ms = reader.key(), reader.i64()
            reader.finish()
            with self._changed:
                if not self._changed.wait_for(lambda: key in self._data, timeout_ms / 1000):
                    return TIMED_OUT, b""
                return OK, self._data[key]
        if command == ADD:
            key, amount = reader.key(), reader.i64()
            reader.finish()
            with self._changed:
                current = self._data.get(key, b"0")
                try:
                    value = int(current.decode("ascii")) + amount
                except (UnicodeDecodeError, ValueError):
                    return ERROR, f"key {key!r} does not hold an integer".encode()
                self._data[key] = str(value).encode("ascii")
                self._changed.notify_all()
            return OK, _I64.pack(value)
        if command == WAIT:
            timeout_ms, keys = reader.i64(), reader.keys()
            reader.finish()
            with self._changed:
                present = self._changed.wait_for(lambda: all(k in self._data for k in keys),
                                                 timeout_ms / 1000)
            return (OK, b"") if present else (TIMED_OUT, b"")
        if command == CHECK:
            keys = reader.keys()
            reader.finish()
            with self._changed:
                return OK, bytes([all(k in self._data for k in keys)])
        if command == DELETE:
            key = reader.key()
            reader.finish()
            with self._changed:
                return OK, bytes([self._data.pop(key, None) is not None])
        if command == NUM_KEYS:
            reader.finish()
            with self._changed:
                return OK, _I64.pack(len(self._data))
        raise MalformedFrame(f"unknown command {command}")

    def stop(self) -> None:
        self._stopping = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept at once
        except OSError:
            pass
        self._listener.close()
        with self._changed:
            clients = list(self._clients)
            self._changed.notify_all()
        for conn in clients:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(2 * IDLE_POLL_SECONDS)


class TCPStore:
    """A client of the rendezvous store, which also hosts the server when ``is_master``.

    ``TCPStore(host, port, is_master=False, timeout=900.0)``: ``timeout`` (seconds) bounds the
    connection attempts (retried with back-off while the master starts) and is the default for
    blocking ``get`` and ``wait``. A master given ``port=0`` binds a free port, found in
    ``store.port``.
    """

    def __init__(self, host: str, port: int, is_master: bool = False,
                 timeout: float = 900.0) -> None:
        if not timeout > 0:
            raise ValueError(f"TCPStore timeout must be positive, got {timeout!r}")
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore port must be an int in 0..65535, got {port!r}")
        if port == 0 and not is_master:
            raise ValueError("a TCPStore client needs the master's port; only a master may use 0")
        self.host = host
        self.timeout = float(timeout)
        self._server = _StoreServer(host, port) if is_master else None
        self.port = self._server.port if self._server else port
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection(
                    (self.host, self.port), timeout=max(0.1, min(5.0, deadline - time.monotonic())))
            except OSError as error:
                if time.monotonic() + delay > deadline:
                    raise RuntimeError(
                        f"TCPStore: cannot reach the store at {self.host}:{self.port} within "
                        f"{self.timeout:g} s ({error}); check that the master (rank 0) is running "
                        "and MASTER_ADDR/MASTER_PORT (or PADDLE_MASTER) point at it"
                    ) from error
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock

    @property
    def local_address(self) -> str:
        """The IP address this client uses to reach the store: an address peers can reach too."""
        return self._sock.getsockname()[0]

    def _request(self, command: int, body: bytes, what: str,
                 wait_seconds: float = 0.0) -> Tuple[int, bytes]:
        frame = bytes([command]) + body
        limit = self.timeout + wait_seconds
        with self._lock:
            if self._sock is None:
                raise RuntimeError(f"TCPStore {what}: the store client is closed")
            try:
                self._sock.settimeout(limit)
                self._sock.sendall(_LEN.pack(len(frame)) + frame)
                header = _recv_exact(self._sock, 4, time.monotonic() + limit)
                if header is None:
                    raise ConnectionError("the store closed the connection")
                reply = _recv_exact(self._sock, _LEN.unpack(header)[0], time.monotonic() + limit)
                if not reply:
                    raise ConnectionError("the store sent an empty reply")
            except (OSError, ConnectionError) as error:
                raise RuntimeError(
                    f"TCPStore {what} at {self.host}:{self.port} failed: {error}; the store host "
                    "(rank 0) may have exited"
                ) from error
        if reply[0] == ERROR:
            raise RuntimeError(f"TCPStore {what}: {reply[1:].decode('utf-8', 'replace')}")
        return reply[0], reply[1:]

    def _timeout_ms(self, timeout: Optional[float]) -> Tuple[float, int]:
        seconds = self.timeout if timeout is None else float(timeout)
        if seconds < 0:
            raise ValueError(f"timeout must be non-negative, got {timeout!r}")
        return seconds, int(seconds * 1000)

    @staticmethod
    def _key(key: str) -> bytes:
        if not isinstance(key, str) or not key:
            raise TypeError(f"store keys are non-empty strings, got {key!r}")
        return _pack_bytes(key.encode("utf-8"))

    def set(self, key: str, value: Union[bytes, bytearray, memoryview, str]) -> None:
        """Store ``value`` (bytes; a str is UTF-8 encoded) under ``key``, waking waiters."""
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"store values are bytes or str, got {type(value).__name__}")
        self._request(SET, self._key(key) + _pack_bytes(bytes(value)), f"set({key!r})")

    def get(self, key: str, timeout: Optional[float] = None) -> bytes:
        """The value of ``key``, waiting up to ``timeout`` seconds for another process to set it."""
        seconds, millis = self._timeout_ms(timeout)
        status, payload = self._request(GET, self._key(key) + _I64.pack(millis),
                                        f"get({key!r})", seconds)
        if status == TIMED_OUT:
            raise RuntimeError(
                f"TCPStore get({key!r}) at {self.host}:{self.port} timed out after {seconds:g} s; "
                "a rank that should have set it has not arrived (raise PADDLE_PG_TIMEOUT if it "
                "is merely slow)"
            )
        return payload

    def add(self, key: str, amount: int = 1) -> int:
        """Atomically add ``amount`` to the integer under ``key`` (0 if absent); return the sum."""
        _, payload = self._request(ADD, self._key(key) + _I64.pack(int(amount)), f"add({key!r})")
        return _I64.unpack(payload)[0]

    def wait(self, keys: Iterable[str], timeout: Optional[float] = None) -> None:
        """Return once every key exists; raise ``RuntimeError`` after ``timeout`` seconds."""
        keys = list(keys)
        seconds, millis = self._timeout_ms(timeout)
        body = _I64.pack(millis) + _LEN.pack(len(keys)) + b"".join(self._key(k) for k in keys)
        status, _ = self._request(WAIT, body, f"wait({keys!r})", seconds)
        if status == TIMED_OUT:
            raise RuntimeError(
                f"TCPStore wait({keys!r}) at {self.host}:{self.port} timed out after {seconds:g} s"
            )

    def check(self, keys: Iterable[str]) -> bool:
        """True when every key exists (never blocks)."""
        keys = list(keys)
        body = _LEN.pack(len(keys)) + b"".join(self._key(k) for k in keys)
        return bool(self._request(CHECK, body, f"check({keys!r})")[1][0])

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        return bool(self._request(DELETE, self._key(key), f"delete_key({key!r})")[1][0])

    def num_keys(self) -> int:
        """How many keys the store holds."""
        return _I64.unpack(self._request(NUM_KEYS, b"", "num_keys()")[1])[0]

    def close(self) -> None:
        """Close this client, and stop the server when this process hosts it."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __repr__(self) -> str:
        role = "master" if self._server else "client"
        return f"<TCPStore {role} {self.host}:{self.port}>"
