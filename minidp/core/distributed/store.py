"""TCPStore: the key-value rendezvous every process group bootstraps from.

One process (rank 0 or a launcher) hosts the server; every rank, the host included, talks to it
through a client. Keys are strings, values are bytes; nothing is ever unpickled.

Every connection starts with the job-secret handshake of :mod:`minidp.core.distributed.auth`; a
client that fails it (or stays silent for ``auth.HANDSHAKE_SECONDS``) is dropped and logged, and
the job carries on. The server bounds what clients can make it hold: connections
(``MAX_CLIENTS``), bytes of frames being received at once (``MAX_INFLIGHT_BYTES``, counted as the
bytes arrive, so that a frame merely declared holds nothing; a frame whose bytes stop coming for
``FRAME_STALL_SECONDS`` closes its connection) and bytes stored (``MAX_STORED_BYTES``); it keeps
accepting after running out of file descriptors. A client whose connection failed (a refused
frame, a timed-out request) connects afresh on its next request.

Wire format (all integers big-endian). A request is ``u32 length`` followed by ``length`` bytes:
``u8 command`` and the command's fields, where a string or bytes field is ``u32 size`` + data
and a number is ``i64``. A reply is ``u32 length`` + ``u8 status`` (0 ok, 1 timed out, 2 error)
+ payload. A frame longer than ``MAX_FRAME_BYTES``, an unknown command, a truncated field or a
number out of range closes that one connection; the server and its other clients carry on.
"""

from __future__ import annotations

import atexit
import errno
import logging
import os
import socket
import struct
import threading
import time
import weakref
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from . import auth

logger = logging.getLogger("minidp.distributed")

MAX_FRAME_BYTES = 64 << 20
RECEIVE_STEP_BYTES = 1 << 20
FRAME_COMPLETION_SECONDS = 60.0
"""How long the server may take to send one reply."""
FRAME_STALL_SECONDS = 10.0
"""A request frame whose next bytes do not arrive within this long closes its connection."""
IDLE_POLL_SECONDS = 0.5
STOP_JOIN_SECONDS = 2.0
STOP_REPLY_GRACE_SECONDS = 0.2
EXIT_DRAIN_SECONDS = 5.0
"""At interpreter exit a hosting process waits this long, at most, for the other processes to
disconnect, so that its exit does not cut off a rank still finishing a request."""
MAX_CLIENTS = 4096
MAX_INFLIGHT_BYTES = 256 << 20
MAX_STORED_BYTES = 1 << 30
MAX_WAIT_MS = 30 * 24 * 3600 * 1000
"""The longest wait a request may ask for (30 days); longer ones are malformed."""
ACCEPT_BACKOFF_SECONDS = (0.05, 1.0)
STORE_CONTEXT = b"minidp-store"
STORE_HANDOVER_ENV = "MINIDP_STORE_HANDOVER"
"""Where a master takes over the listening socket that the job's launcher holds on its port
(see ``minidp.core.distributed.job.PortReservation``)."""
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_I64_RANGE = (-(1 << 63), (1 << 63) - 1)

_LEN = struct.Struct("!I")
_I64 = struct.Struct("!q")

SET, GET, ADD, WAIT, CHECK, DELETE, NUM_KEYS = range(1, 8)
OK, TIMED_OUT, ERROR = range(3)


class MalformedFrame(Exception):
    """A request that does not follow the wire format; its connection is closed."""


def _recv_exact(
    sock: socket.socket, size: int, deadline: Optional[float], keep_waiting: Callable[[], bool] = lambda: False
) -> Optional[bytes]:
    """Read exactly ``size`` bytes; None on a clean end of stream before the first byte.

    The socket's own timeout is the polling interval: while nothing has arrived yet and
    ``keep_waiting()`` holds, an expired interval just polls again; once the first byte is in,
    the rest must come before ``deadline`` (by default ``FRAME_STALL_SECONDS`` later). The buffer
    grows with what actually arrives (at most ``RECEIVE_STEP_BYTES`` ahead), so a peer that merely
    declares a large frame costs nothing.
    """
    buffer = bytearray()
    while len(buffer) < size:
        try:
            chunk = sock.recv(min(size - len(buffer), RECEIVE_STEP_BYTES))
        except socket.timeout:
            if not buffer and keep_waiting():
                continue
            if deadline is not None and time.monotonic() < deadline:
                continue
            raise
        if not chunk:
            if not buffer:
                return None
            raise ConnectionError("connection closed in the middle of a frame")
        buffer += chunk
        if deadline is None:
            deadline = time.monotonic() + FRAME_STALL_SECONDS
    return bytes(buffer)


def connect_with_retry(
    host: str, port: int, deadline: float, give_up: Callable[[OSError], BaseException]
) -> socket.socket:
    """A TCP connection to ``host:port``, retried with back-off until ``deadline``.

    Refused or unreachable attempts are retried (the peer may still be starting); a connection
    of the socket to itself -- which TCP allows when nothing listens on a local port in the
    ephemeral range -- is dropped and retried too. At ``deadline`` the exception
    ``give_up(last_error)`` is raised. The socket returned has ``TCP_NODELAY`` set and the
    blocking timeout the last attempt used.
    """
    delay = 0.01
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        except OSError as error:
            last_error: OSError = error
        else:
            if sock.getsockname() != sock.getpeername():
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            sock.close()
            last_error = ConnectionRefusedError(f"nothing listens at {host}:{port} yet")
        if time.monotonic() + delay > deadline:
            raise give_up(last_error) from last_error
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


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
        chunk = self._body[self._offset : end]
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

    def wait_ms(self) -> int:
        millis = self.i64()
        if not 0 <= millis <= MAX_WAIT_MS:
            raise MalformedFrame(f"wait of {millis} ms outside 0..{MAX_WAIT_MS}")
        return millis

    def finish(self) -> None:
        if self._offset != len(self._body):
            raise MalformedFrame("trailing bytes after the last field")


class Request(NamedTuple):
    """One decoded request: the command and its fields (``key``, ``value``, ``keys``,
    ``number``: the wait in ms for GET/WAIT, the amount for ADD)."""

    command: int
    key: str = ""
    value: bytes = b""
    keys: Tuple[str, ...] = ()
    number: int = 0


def decode_request(body: bytes) -> Request:
    """Parse one request body; raise :class:`MalformedFrame` for anything off the wire format."""
    reader = _Reader(body)
    command = reader.take(1)[0]
    if command == SET:
        request = Request(SET, key=reader.key(), value=reader.bytes_field())
    elif command == GET:
        request = Request(GET, key=reader.key(), number=reader.wait_ms())
    elif command == ADD:
        request = Request(ADD, key=reader.key(), number=reader.i64())
    elif command == WAIT:
        millis = reader.wait_ms()
        request = Request(WAIT, keys=tuple(reader.keys()), number=millis)
    elif command == CHECK:
        request = Request(CHECK, keys=tuple(reader.keys()))
    elif command == DELETE:
        request = Request(DELETE, key=reader.key())
    elif command == NUM_KEYS:
        request = Request(NUM_KEYS)
    else:
        raise MalformedFrame(f"unknown command {command}")
    reader.finish()
    return request


def _take_over_listener(port: int) -> Optional[socket.socket]:
    """The socket already listening on ``port`` that this job's launcher hands over, if any.

    The launcher (or ``spawn``) listens on the store's port from the moment it picks it, so
    that no other process can take the port before rank 0 serves there; it passes that socket
    over the Unix socket named by ``STORE_HANDOVER_ENV``. None when there is none for ``port``.
    """
    path = os.environ.pop(STORE_HANDOVER_ENV, "")
    if not path or port == 0:
        return None
    try:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(auth.HANDSHAKE_SECONDS)
            conn.connect(path)
            _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    except OSError as error:
        logger.warning(
            "TCPStore: could not take over the listening socket at %s (%s); binding port %d", path, error, port
        )
        return None
    if not fds:
        return None
    listener = socket.socket(fileno=fds[0])
    if listener.getsockname()[1] != port:
        listener.close()
        return None
    return listener


class _StoreServer:
    """The server side: a dict guarded by a condition, one thread per connected client.

    Blocking requests (``get``, ``wait``) wait on the condition; :meth:`stop` wakes them, so
    every thread of the server ends when the store is closed.
    """

    def __init__(self, host: str, port: int, secret: bytes) -> None:
        self._secret = secret
        self._data: Dict[str, bytes] = {}
        self._stored_bytes = 0
        self._inflight_bytes = 0
        self._changed = threading.Condition()
        self._stopping = False
        self._clients: Dict[socket.socket, threading.Thread] = {}
        handed_over = _take_over_listener(port)
        try:
            self._listener = handed_over or socket.create_server((host, port), backlog=128)
        except OSError as error:
            raise RuntimeError(
                f"TCPStore: cannot host the store at {host}:{port} ({error}); another process "
                "(an earlier job still running?) may hold that port: pick another free port "
                "for MASTER_PORT / PADDLE_MASTER, or stop that process"
            ) from error
        self._listener.settimeout(IDLE_POLL_SECONDS)
        self.port = self._listener.getsockname()[1]
        if not secret:
            logger.warning(
                "TCPStore at %s:%d runs without a job secret: any process that can reach it can "
                "read and change this job's keys. Set %s (spawn and the launcher do).",
                host,
                self.port,
                auth.SECRET_ENV,
            )
        self._thread = threading.Thread(target=self._accept_loop, daemon=True, name=f"minidp-store-{self.port}")
        self._thread.start()

    def _accept_loop(self) -> None:
        backoff = ACCEPT_BACKOFF_SECONDS[0]
        while not self._stopping:
            try:
                conn, peer = self._listener.accept()
            except socket.timeout:
                continue
            except OSError as error:
                if self._stopping or error.errno in (errno.EBADF, errno.EINVAL):
                    return
                logger.warning("TCPStore server: accept failed (%s); retrying in %.2f s", error, backoff)
                time.sleep(backoff)
                if error.errno in _OUT_OF_DESCRIPTORS:
                    backoff = min(backoff * 2, ACCEPT_BACKOFF_SECONDS[1])
                continue
            backoff = ACCEPT_BACKOFF_SECONDS[0]
            with self._changed:
                refuse = self._stopping or len(self._clients) >= MAX_CLIENTS
                if not refuse:
                    thread = threading.Thread(
                        target=self._serve_client, args=(conn,), daemon=True, name=f"minidp-store-client-{self.port}"
                    )
                    self._clients[conn] = thread
            if refuse:
                if not self._stopping:
                    logger.warning(
                        "TCPStore server: refusing %s:%s, already %d connections (MAX_CLIENTS)",
                        peer[0],
                        peer[1],
                        MAX_CLIENTS,
                    )
                conn.close()
                continue
            thread.start()

    def _serve_client(self, conn: socket.socket) -> None:
        peer = "unknown"
        try:
            peer = "%s:%s" % conn.getpeername()[:2]
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            auth.accept_handshake(conn, self._secret, STORE_CONTEXT, auth.HANDSHAKE_SECONDS)
            conn.settimeout(IDLE_POLL_SECONDS)
            while not self._stopping:
                header = _recv_exact(conn, 4, None, lambda: not self._stopping)
                if header is None:
                    return
                length = _LEN.unpack(header)[0]
                if not 1 <= length <= MAX_FRAME_BYTES:
                    raise MalformedFrame(f"frame length {length} outside 1..{MAX_FRAME_BYTES}")
                request = decode_request(self._receive_body(conn, length))
                status, payload = self._execute(request)
                if self._stopping and status == TIMED_OUT:
                    return  # a wait cut short by stop(): the client learns the store is gone
                # a large value may take a busy client longer than the polling interval to take
                conn.settimeout(FRAME_COMPLETION_SECONDS)
                conn.sendall(_LEN.pack(len(payload) + 1) + bytes([status]) + payload)
                conn.settimeout(IDLE_POLL_SECONDS)
        except auth.AuthenticationError as error:
            logger.warning("TCPStore server: refused connection from %s: %s", peer, error)
        except MalformedFrame as error:
            logger.warning("TCPStore server: closing connection from %s: %s", peer, error)
        except (OSError, ConnectionError):
            pass
        finally:
            with self._changed:
                self._clients.pop(conn, None)
                self._changed.notify_all()  # wakes wait_for_clients
            conn.close()

    def wait_for_clients(self, remaining: int, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until no more than ``remaining`` connections are open."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._clients) <= remaining, timeout)

    def _receive_body(self, conn: socket.socket, length: int) -> bytes:
        """A frame body, within the server-wide budget of bytes being received at once.

        The budget is taken as the bytes arrive (each ``recv`` waits for data first, then
        reserves what it may read), so a client that only declares a large frame holds nothing
        of it; one whose bytes stop coming for ``FRAME_STALL_SECONDS`` is dropped.
        """
        body = bytearray()
        held = 0
        stalled_since = time.monotonic()
        try:
            while len(body) < length:
                try:
                    ready = conn.recv(1, socket.MSG_PEEK)
                except socket.timeout:
                    if self._stopping or time.monotonic() - stalled_since > FRAME_STALL_SECONDS:
                        raise MalformedFrame(
                            f"no byte of a {length}-byte frame arrived for {FRAME_STALL_SECONDS:g} s "
                            f"({len(body)} received)"
                        ) from None
                    continue
                if not ready:
                    raise MalformedFrame(f"connection closed after {len(body)} of a {length}-byte frame")
                step = min(length - len(body), RECEIVE_STEP_BYTES)
                with self._changed:
                    if self._inflight_bytes + step > MAX_INFLIGHT_BYTES:
                        raise MalformedFrame(
                            f"receiving a {length}-byte frame would take the bytes being received at "
                            f"once past {MAX_INFLIGHT_BYTES} (MAX_INFLIGHT_BYTES)"
                        )
                    self._inflight_bytes += step
                    held += step
                chunk = conn.recv(step)
                with self._changed:
                    self._inflight_bytes -= step - len(chunk)
                    held -= step - len(chunk)
                body += chunk
                stalled_since = time.monotonic()
        finally:
            with self._changed:
                self._inflight_bytes -= held
        return bytes(body)

    def _put(self, key: str, value: bytes) -> Optional[bytes]:
        """Store ``value`` under ``key`` (lock held); an error payload when the store is full."""
        old = self._data.get(key)
        grown = len(value) - (len(old) if old is not None else -len(key))
        if self._stored_bytes + grown > MAX_STORED_BYTES:
            return (
                f"storing {len(value)} bytes under {key!r} would take the store past "
                f"{MAX_STORED_BYTES} bytes (MAX_STORED_BYTES)"
            ).encode()
        self._data[key] = value
        self._stored_bytes += grown
        self._changed.notify_all()
        return None

    def _execute(self, request: Request) -> Tuple[int, bytes]:
        command, key = request.command, request.key
        with self._changed:
            if command == SET:
                error = self._put(key, request.value)
                return (ERROR, error) if error else (OK, b"")
            if command == GET:
                self._changed.wait_for(lambda: self._stopping or key in self._data, request.number / 1000)
                return (OK, self._data[key]) if key in self._data else (TIMED_OUT, b"")
            if command == ADD:
                try:
                    value = int(self._data.get(key, b"0").decode("ascii")) + request.number
                except (UnicodeDecodeError, ValueError):
                    return ERROR, f"key {key!r} does not hold an integer".encode()
                if not _I64_RANGE[0] <= value <= _I64_RANGE[1]:
                    return ERROR, f"add({key!r}) would overflow a 64-bit integer".encode()
                error = self._put(key, str(value).encode("ascii"))
                return (ERROR, error) if error else (OK, _I64.pack(value))
            if command == WAIT:
                keys = request.keys
                self._changed.wait_for(
                    lambda: self._stopping or all(k in self._data for k in keys), request.number / 1000
                )
                return (OK, b"") if all(k in self._data for k in keys) else (TIMED_OUT, b"")
            if command == CHECK:
                return OK, bytes([all(k in self._data for k in request.keys)])
            if command == DELETE:
                old = self._data.pop(key, None)
                if old is not None:
                    self._stored_bytes -= len(key) + len(old)
                return OK, bytes([old is not None])
            return OK, _I64.pack(len(self._data))

    def stop(self) -> None:
        """Close the listener and every connection; wait (bounded) for the threads to end."""
        with self._changed:
            self._stopping = True
            clients = dict(self._clients)
            self._changed.notify_all()  # wakes blocked get/wait requests
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept at once
        except OSError:
            pass
        self._listener.close()
        # Replies already computed (a wait that was satisfied just before the stop) still go out:
        # the client threads get a moment to send them and leave before their sockets are cut.
        grace = time.monotonic() + STOP_REPLY_GRACE_SECONDS
        for thread in clients.values():
            if thread is not threading.current_thread():
                thread.join(max(0.0, grace - time.monotonic()))
        for conn, thread in clients.items():
            if thread.is_alive():
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for thread in [self._thread, *clients.values()]:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


class TCPStore:
    """A client of the rendezvous store, which also hosts the server when ``is_master``.

    ``TCPStore(host, port, is_master=False, timeout=900.0, secret=None)``: ``timeout`` (seconds)
    bounds the connection attempts (retried with back-off while the master starts) and is the
    default for blocking ``get`` and ``wait``. A master given ``port=0`` binds a free port, found
    in ``store.port``. ``secret`` (bytes) is the job secret both ends prove they know; by default
    the one in ``MINIDP_JOB_SECRET`` (see :mod:`minidp.core.distributed.auth`).
    """

    def __init__(
        self, host: str, port: int, is_master: bool = False, timeout: float = 900.0, secret: Optional[bytes] = None
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"TCPStore timeout must be positive, got {timeout!r}")
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore port must be an int in 0..65535, got {port!r}")
        if port == 0 and not is_master:
            raise ValueError("a TCPStore client needs the master's port; only a master may use 0")
        self.host = host
        self.timeout = float(timeout)
        self._secret = auth.job_secret() if secret is None else bytes(secret)
        self._server = _StoreServer(host, port, self._secret) if is_master else None
        self.port = self._server.port if self._server else port
        self._lock = threading.Lock()
        self._closed = False
        self._failed_because = ""
        try:
            self._sock: Optional[socket.socket] = self._connect(time.monotonic() + self.timeout)
        except BaseException:
            if self._server is not None:
                self._server.stop()
            raise
        if self._server is not None:
            atexit.register(_drain_at_exit, weakref.ref(self))

    def _connect(self, deadline: float) -> socket.socket:
        """A connection to the store that has passed the handshake, tried until ``deadline``."""
        seconds = max(0.0, deadline - time.monotonic())

        def give_up(error: OSError) -> RuntimeError:
            return RuntimeError(
                f"TCPStore: cannot reach the store at {self.host}:{self.port} within "
                f"{seconds:g} s ({error}){self._failed_because}; check that the master (rank 0) is "
                "running and MASTER_ADDR/MASTER_PORT (or PADDLE_MASTER) point at it"
            )

        while True:
            sock = connect_with_retry(self.host, self.port, deadline, give_up)
            started = time.monotonic()
            try:
                auth.dial_handshake(sock, self._secret, STORE_CONTEXT, auth.HANDSHAKE_SECONDS)
                return sock
            except (auth.AuthenticationError, OSError) as error:
                sock.close()
                # A listener that stayed silent is one whose master has not taken it over yet
                # (the launcher listens on the store's port before rank 0 starts): try again.
                silent = time.monotonic() - started >= auth.HANDSHAKE_SECONDS
                if not (silent and time.monotonic() < deadline):
                    raise RuntimeError(
                        f"TCPStore: the store at {self.host}:{self.port} did not accept this process "
                        f"({error}); every process of a job needs the same {auth.SECRET_ENV} (spawn "
                        "and the launcher set it; set it yourself for ranks you start by hand)"
                    ) from error

    @property
    def local_address(self) -> str:
        """The IP address this client uses to reach the store: an address peers can reach too."""
        return self._sock.getsockname()[0]

    def _request(self, command: int, body: bytes, what: str, wait_seconds: float = 0.0) -> Tuple[int, bytes]:
        frame = bytes([command]) + body
        limit = self.timeout + wait_seconds
        with self._lock:
            if self._closed:
                raise RuntimeError(
                    f"TCPStore {what}: this client is closed; create a new TCPStore to talk to the store"
                )
            if self._sock is None:
                # The last request failed and its connection was dropped: a store that is still
                # there answers a fresh one; one that went away is noticed within seconds.
                self._sock = self._connect(time.monotonic() + min(self.timeout, auth.HANDSHAKE_SECONDS))
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
                # A reply may still be on its way: later requests would read it as theirs.
                self._sock.close()
                self._sock = None
                self._failed_because = f", after an earlier failure ({what}: {error})"
                raise RuntimeError(
                    f"TCPStore {what} at {self.host}:{self.port} failed: {error}; the store host "
                    "(rank 0) may have exited"
                ) from error
        if reply[0] == ERROR:
            raise RuntimeError(f"TCPStore {what}: {reply[1:].decode('utf-8', 'replace')}")
        return reply[0], reply[1:]

    def _timeout_ms(self, timeout: Optional[float]) -> Tuple[float, int]:
        seconds = self.timeout if timeout is None else float(timeout)
        if not 0 <= seconds * 1000 <= MAX_WAIT_MS:
            raise ValueError(f"timeout must be between 0 and {MAX_WAIT_MS // 1000} seconds, got {timeout!r}")
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
        status, payload = self._request(GET, self._key(key) + _I64.pack(millis), f"get({key!r})", seconds)
        if status == TIMED_OUT:
            raise RuntimeError(
                f"TCPStore get({key!r}) at {self.host}:{self.port} timed out after {seconds:g} s; "
                "a rank that should have set it has not arrived (raise PADDLE_PG_TIMEOUT if it "
                "is merely slow)"
            )
        return payload

    def add(self, key: str, amount: int = 1) -> int:
        """Atomically add ``amount`` to the integer under ``key`` (0 if absent); return the sum."""
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise TypeError(f"add: amount must be an int, got {type(amount).__name__}")
        if not _I64_RANGE[0] <= amount <= _I64_RANGE[1]:
            raise ValueError(f"add: amount {amount} does not fit in a 64-bit integer")
        _, payload = self._request(ADD, self._key(key) + _I64.pack(amount), f"add({key!r})")
        return _I64.unpack(payload)[0]

    def wait(self, keys: Iterable[str], timeout: Optional[float] = None) -> None:
        """Return once every key exists; raise ``RuntimeError`` after ``timeout`` seconds."""
        keys = list(keys)
        seconds, millis = self._timeout_ms(timeout)
        body = _I64.pack(millis) + _LEN.pack(len(keys)) + b"".join(self._key(k) for k in keys)
        status, _ = self._request(WAIT, body, f"wait({keys!r})", seconds)
        if status == TIMED_OUT:
            raise RuntimeError(f"TCPStore wait({keys!r}) at {self.host}:{self.port} timed out after {seconds:g} s")

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
            self._closed = True
            if self._sock is not None:
                self._sock.close()
                self._sock = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    def _drain(self) -> None:
        """Wait (bounded) for the other processes to leave, then stop the server."""
        if self._server is not None:
            self._server.wait_for_clients(1 if self._sock is not None else 0, EXIT_DRAIN_SECONDS)
        self.close()

    def __repr__(self) -> str:
        role = "master" if self._server else "client"
        return f"<TCPStore {role} {self.host}:{self.port}>"


def _drain_at_exit(reference: "weakref.ref[TCPStore]") -> None:
    store = reference()
    if store is not None:
        store._drain()
