"""The gloo backend's TCP transport: collectives over a TCP mesh between the ranks.

It carries every collective when ``MINIDP_TRANSPORT=tcp`` (see :mod:`.gloo`, which picks the
transport), and otherwise everything shared memory does not: point to point, ranks on other
hosts, and machines where :mod:`.shm` is not supported.

Set-up: every rank listens on a free port, publishes ``ip:port`` in the store, connects to each
higher rank and accepts each lower one, so every pair shares one TCP connection. Each connection
opens with the job-secret handshake of :mod:`minidp.core.distributed.auth`, bound to the group and
both ranks: a process without the secret cannot join, replay or relay a ring. The ring
(right = rank + 1, left = rank - 1) is a subset of that mesh; ``send``/``recv`` use the
direct connection.

Data moves with no per-element Python and no per-chunk allocation: sockets are non-blocking, and
one loop sends to the right neighbour while it receives from the left (full duplex), straight
from and into the arrays' memory (``send`` / ``recv_into`` on memoryviews). Reductions receive
into a preallocated 1 MiB scratch buffer and fold each chunk into the destination with a NumPy
ufunc (``out=``) as soon as it arrives, so reducing overlaps with the peer's sending.

Algorithms:

- ``all_reduce``: arrays of at most ``SMALL_ALL_REDUCE_BYTES`` travel whole around the ring
  (n - 1 steps, one round trip on two ranks) and each rank reduces all contributions in rank
  order; larger ones use the ring reduce-scatter then all-gather, sending 2(n-1)/n of the data
  over each link. The 2(n-1) ring steps form one stream: a rank forwards each chunk as soon as it
  has arrived and been reduced, so no step waits for the previous one to finish. Both paths give
  bit-identical results on every rank.
- ``broadcast``: a pipelined chain from ``src`` around the ring.
- ``all_gather`` and ``reduce_scatter``: the two halves of the ring all-reduce.
- ``barrier``: a one-byte small all-reduce.

Before each operation a rank swaps its 60-byte fingerprint with its ring neighbours (or the peer
of a send or receive) over the same connections, ahead of the data (see
``base.ThreadedProcessGroup``).
"""

from __future__ import annotations

import logging
import select
import socket
import struct
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy

from .. import auth
from ..failure_record import PeerFailedError
from ..store import connect_with_retry
from .base import Collective, Fingerprint, ReduceOp, ThreadedProcessGroup, divide_by_size

logger = logging.getLogger("minidp.distributed")

CHUNK_BYTES = 1 << 20
SMALL_ALL_REDUCE_BYTES = 64 << 10

_HELLO = struct.Struct("!4sII")
_MAGIC = b"MDPG"

_REDUCERS = {
    ReduceOp.SUM: numpy.add,
    ReduceOp.AVG: numpy.add,
    ReduceOp.MAX: numpy.maximum,
    ReduceOp.MIN: numpy.minimum,
    ReduceOp.PROD: numpy.multiply,
}


class SendPiece(NamedTuple):
    """Bytes to send; with ``gate`` set, they are those of receive piece ``gate`` and follow it."""

    data: numpy.ndarray
    gate: Optional[int] = None


class RecvPiece(NamedTuple):
    """Bytes to receive into ``data``, or to fold into ``reduce_into`` (a typed view of them)."""

    data: numpy.ndarray
    reduce_into: Optional[numpy.ndarray] = None


def _pair_context(prefix: str, dialer: int, listener: int) -> bytes:
    """What a ring connection's handshake binds: the job's group instance and both ranks, so a
    proof can be neither replayed nor relayed to another pair."""
    return f"{prefix}/{dialer}->{listener}".encode()


def _raw(array: numpy.ndarray) -> numpy.ndarray:
    """The bytes of a C-contiguous array as a flat uint8 view (no copy)."""
    return array.reshape(-1).view(numpy.uint8)


def _split_points(count: int, parts: int) -> List[int]:
    """Element offsets cutting ``count`` elements into ``parts`` nearly equal blocks."""
    return [(count * i) // parts for i in range(parts + 1)]


class GlooProcessGroup(ThreadedProcessGroup):
    """Process group over TCP; see the module docstring for the algorithms."""

    backend_name = "gloo"
    gathers_in_place = True  # _all_gather writes the own row first, then only the others

    def __init__(
        self, store: Any, rank: int, size: int, *, name: str, timeout: float, global_ranks: Optional[List[int]] = None
    ) -> None:
        super().__init__(rank, size, name=name, timeout=timeout, global_ranks=global_ranks)
        self._scratch = numpy.empty(CHUNK_BYTES, numpy.uint8)
        self._fingerprints_in = numpy.empty((2, Fingerprint.SIZE), numpy.uint8)
        self._staging = numpy.empty(0, numpy.uint8)
        self._peers: Dict[int, socket.socket] = {}
        if size > 1:
            self._peers = self._connect_mesh(store)
        logger.info("gloo group '%s' ready (rank %d of %d)", name, rank, size)

    # --- set-up ----------------------------------------------------------------------------
    def _connect_mesh(self, store: Any) -> Dict[int, socket.socket]:
        deadline = time.monotonic() + self.timeout
        instance = store.add(f"gloo/{self.name}/instances/{self.rank}", 1)
        prefix = f"gloo/{self.name}/{instance}"
        secret = auth.job_secret()
        host = store.local_address
        peers: Dict[int, socket.socket] = {}
        with socket.create_server((host, 0), backlog=self.size + 8) as listener:
            store.set(f"{prefix}/addr/{self.rank}", f"{host}:{listener.getsockname()[1]}")
            try:
                for peer in range(self.rank + 1, self.size):
                    try:
                        address = store.get(f"{prefix}/addr/{peer}", timeout=max(0.0, deadline - time.monotonic()))
                    except RuntimeError as error:
                        raise RuntimeError(
                            f"{self.describe('connect')}: {self.describe_rank(peer)} did not "
                            f"publish its address ({error})"
                        ) from error
                    peers[peer] = self._dial(address.decode(), peer, deadline)
                    peers[peer].sendall(_HELLO.pack(_MAGIC, self.rank, self.size))
                    self._prove(peers[peer], secret, _pair_context(prefix, self.rank, peer), peer)
                self._accept(listener, prefix, secret, deadline, peers)
            except BaseException:
                for sock in peers.values():
                    sock.close()
                raise
        for sock in peers.values():
            self._tune(sock)
        return peers

    def _dial(self, address: str, peer: int, deadline: float) -> socket.socket:
        host, _, port = address.rpartition(":")

        def give_up(error: OSError) -> RuntimeError:
            return PeerFailedError(
                f"{self.describe('connect')}: cannot connect to {self.describe_rank(peer)} at "
                f"{address} ({error}); check that it is running and that this host can reach it",
                self.global_ranks[peer],
            )

        return connect_with_retry(host, int(port), deadline, give_up)

    def _prove(self, sock: socket.socket, secret: bytes, context: bytes, peer: int) -> None:
        """The dialer's half of the job-secret handshake with ``peer``."""
        try:
            auth.dial_handshake(sock, secret, context, auth.HANDSHAKE_SECONDS)
        except (auth.AuthenticationError, OSError) as error:
            raise RuntimeError(
                f"{self.describe('connect')}: {self.describe_rank(peer)} refused this rank's "
                f"proof of the job secret ({error}); every rank needs the same "
                f"{auth.SECRET_ENV}"
            ) from error

    def _accept(
        self, listener: socket.socket, prefix: str, secret: bytes, deadline: float, connected: Dict[int, socket.socket]
    ) -> None:
        """Accept every lower rank into ``connected``; a connection with a wrong greeting or
        without the job secret's proof is dropped (and logged), and the group goes on waiting for
        the real peer.

        Connections are served together: each must send its greeting within
        ``auth.HANDSHAKE_SECONDS`` and is dropped otherwise, so a client that connects and says
        nothing costs seconds, and never holds up a real peer that connects after it (whose own
        handshake gives up after that long). The error at the group timeout names what was
        dropped meanwhile."""
        pending: Dict[int, Tuple[socket.socket, str, float, bytearray]] = {}
        dropped: List[str] = []

        def drop(fd: int, reason: str) -> None:
            conn, origin, _, _ = pending.pop(fd)
            logger.warning("gloo group '%s' dropped a connection from %s with %s", self.name, origin, reason)
            dropped.append(f"{origin} ({reason})")
            conn.close()

        try:
            while len(connected) < self.size - 1:
                now = time.monotonic()
                for fd, (_, _, greet_by, _) in list(pending.items()):
                    if now >= greet_by:
                        drop(fd, f"no greeting within {auth.HANDSHAKE_SECONDS:g} s")
                if now >= deadline:
                    for fd in list(pending):
                        drop(fd, "no greeting")
                    missing = [self.describe_rank(p) for p in range(self.rank) if p not in connected]
                    meanwhile = f"; dropped meanwhile: {', '.join(dropped)}" if dropped else ""
                    raise RuntimeError(
                        f"{self.describe('connect')}: {', '.join(missing)} did not connect within "
                        f"{self.timeout:g} s{meanwhile}; check that every rank creates the same groups"
                    )
                poller = select.poll()
                poller.register(listener, select.POLLIN)
                for fd in pending:
                    poller.register(fd, select.POLLIN)
                until = min([deadline] + [greet_by for _, _, greet_by, _ in pending.values()])
                for fd, _ in poller.poll(max(1, int((until - now) * 1000) + 1)):
                    if fd == listener.fileno():
                        conn, address = listener.accept()
                        conn.setblocking(False)
                        origin = "%s:%d" % address[:2]
                        pending[conn.fileno()] = (conn, origin, time.monotonic() + auth.HANDSHAKE_SECONDS, bytearray())
                        continue
                    conn, origin, _, hello = pending[fd]
                    try:
                        chunk = conn.recv(_HELLO.size - len(hello))
                    except BlockingIOError:
                        continue
                    except OSError as error:
                        chunk, reason = b"", f"an error before its greeting ({error})"
                    else:
                        reason = "no greeting (it closed the connection)"
                    if not chunk:
                        drop(fd, reason)
                        continue
                    hello += chunk
                    if len(hello) < _HELLO.size:
                        continue
                    magic, peer, size = _HELLO.unpack(hello)
                    if (magic, size) != (_MAGIC, self.size) or not peer < self.rank or peer in connected:
                        drop(fd, "a bad greeting")
                        continue
                    conn.setblocking(True)
                    try:
                        auth.accept_handshake(
                            conn, secret, _pair_context(prefix, peer, self.rank), auth.HANDSHAKE_SECONDS
                        )
                    except (auth.AuthenticationError, OSError) as error:
                        drop(fd, f"no proof of the job secret ({error})")
                        continue
                    del pending[fd]
                    connected[peer] = conn
        finally:
            for conn, _, _, _ in pending.values():
                conn.close()

    @staticmethod
    def _tune(sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)

    # --- the transfer loop ----------------------------------------------------------------
    def _transfer(
        self,
        op: str,
        deadline: float,
        send_to: int,
        sends: Sequence[SendPiece],
        recv_from: int,
        recvs: Sequence[RecvPiece],
        ufunc: Any = None,
    ) -> None:
        """Stream ``sends`` to ``send_to`` while receiving ``recvs`` from ``recv_from``.

        Pieces go in order over one connection each way. A send piece whose ``gate`` is the
        index of a receive piece holds the bytes that piece receives, and is sent only as far as
        that piece is complete: this is how a ring forwards what it has just received (and
        reduced) without waiting for the whole step. A receive piece with ``reduce_into`` lands
        chunk by chunk in the scratch buffer and is folded into ``reduce_into`` with ``ufunc``.
        """
        send_views = [memoryview(piece.data) for piece in sends]
        recv_views = [memoryview(piece.data) for piece in recvs]
        scratch_view = memoryview(self._scratch)
        send_sock = self._peers[send_to] if sends else None
        recv_sock = self._peers[recv_from] if recvs else None
        completed = [0] * len(recvs)
        send_index = send_offset = recv_index = received = 0
        while True:
            while send_index < len(sends) and send_offset == sends[send_index].data.nbytes:
                send_index, send_offset = send_index + 1, 0
            while recv_index < len(recvs) and completed[recv_index] == recvs[recv_index].data.nbytes:
                recv_index, received = recv_index + 1, 0
            if send_index == len(sends) and recv_index == len(recvs):
                return
            moved = can_send = False
            if send_index < len(sends):
                gate = sends[send_index].gate
                limit = sends[send_index].data.nbytes if gate is None else completed[gate]
                if send_offset < limit:
                    can_send = True
                    try:
                        count = send_sock.send(send_views[send_index][send_offset:limit])
                    except BlockingIOError:
                        count = 0
                    except OSError as error:
                        raise self._lost(op, send_to, error) from error
                    send_offset += count
                    moved = count > 0
            if recv_index < len(recvs):
                piece, done = recvs[recv_index], completed[recv_index]
                if piece.reduce_into is None:
                    target = recv_views[recv_index][received:]
                else:
                    chunk_end = min(done + CHUNK_BYTES, piece.data.nbytes)
                    target = scratch_view[received - done : chunk_end - done]
                try:
                    count = recv_sock.recv_into(target)
                except BlockingIOError:
                    count = -1
                except OSError as error:
                    raise self._lost(op, recv_from, error) from error
                if count == 0:
                    raise self._lost(op, recv_from, ConnectionError("connection closed by peer"))
                if count > 0:
                    received += count
                    moved = True
                    if piece.reduce_into is None:
                        completed[recv_index] = received
                    elif received == chunk_end:
                        item = piece.reduce_into.itemsize
                        destination = piece.reduce_into[done // item : chunk_end // item]
                        incoming = self._scratch[: chunk_end - done].view(destination.dtype)
                        ufunc(destination, incoming, out=destination)
                        completed[recv_index] = chunk_end
            if not moved:
                self._wait_ready(
                    op,
                    deadline,
                    send_sock if can_send else None,
                    send_to,
                    recv_sock if recv_index < len(recvs) else None,
                    recv_from,
                )

    def _wait_ready(
        self,
        op: str,
        deadline: float,
        send_sock: Optional[socket.socket],
        send_to: int,
        recv_sock: Optional[socket.socket],
        recv_from: int,
    ) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            peer, action = (recv_from, "send its data") if recv_sock else (send_to, "take data")
            raise PeerFailedError(
                f"{self.describe(op)}: timed out waiting for {self.describe_rank(peer)} to "
                f"{action} (group timeout {self.timeout:g} s); check that every rank issues the "
                "same collectives in the same order, or raise the timeout (PADDLE_PG_TIMEOUT in ms)",
                self.global_ranks[peer],
            )
        poller = select.poll()
        if send_sock is not None and send_sock is recv_sock:
            poller.register(send_sock, select.POLLOUT | select.POLLIN)
        else:
            if send_sock is not None:
                poller.register(send_sock, select.POLLOUT)
            if recv_sock is not None:
                poller.register(recv_sock, select.POLLIN)
        until_warning = self._note_waiting(op, recv_from if recv_sock else send_to, deadline)
        poller.poll(max(1, int(min(remaining, until_warning) * 1000) + 1))

    def _lost(self, op: str, peer: int, error: BaseException) -> RuntimeError:
        return PeerFailedError(
            f"{self.describe(op)}: lost the connection to {self.describe_rank(peer)} ({error}); "
            "that rank probably exited or crashed, see its log",
            self.global_ranks[peer],
        )

    def _staging_bytes(self, nbytes: int) -> numpy.ndarray:
        """A reusable uint8 buffer of at least ``nbytes`` (grown, never shrunk)."""
        if self._staging.nbytes < nbytes:
            self._staging = numpy.empty(nbytes, numpy.uint8)
        return self._staging[:nbytes]

    # --- the ring ---------------------------------------------------------------------------
    def _ring(
        self, op: str, deadline: float, flat: numpy.ndarray, points: List[int], ufunc: Any = None, gather: bool = True
    ) -> None:
        """Pipelined ring over the blocks ``flat[points[b]:points[b+1]]``, in place.

        With ``ufunc``: n - 1 reduce-scatter steps leave block ``rank`` fully reduced; with
        ``gather``: n - 1 all-gather steps then hand every rank every block. The blocks are cut
        into chunks of at most ``CHUNK_BYTES`` and the stream runs chunk by chunk through all
        steps (chunk 0 of every step, then chunk 1, ...): each chunk is forwarded as soon as it
        has arrived and been reduced, while it is still in cache. No step waits for the previous
        one to finish, and every piece a rank waits for precedes it in its neighbour's stream, so
        the stream cannot deadlock.
        """
        n, r = self.size, self.rank
        raw = flat.view(numpy.uint8)
        item = flat.itemsize
        steps = []
        if ufunc is not None:
            steps += [((r - s - 1) % n, (r - s - 2) % n, True) for s in range(n - 1)]
        if gather:
            steps += [((r - s) % n, (r - s - 1) % n, False) for s in range(n - 1)]
        chunk = CHUNK_BYTES // item
        largest = max(points[b + 1] - points[b] for b in range(n))
        sends, recvs = [], []
        for k in range(-(-largest // chunk)):
            for step, (out_block, in_block, reduce) in enumerate(steps):
                out_lo = min(points[out_block] + k * chunk, points[out_block + 1])
                out_hi = min(out_lo + chunk, points[out_block + 1])
                in_lo = min(points[in_block] + k * chunk, points[in_block + 1])
                in_hi = min(in_lo + chunk, points[in_block + 1])
                sends.append(SendPiece(raw[out_lo * item : out_hi * item], None if step == 0 else len(recvs) - 1))
                recvs.append(RecvPiece(raw[in_lo * item : in_hi * item], flat[in_lo:in_hi] if reduce else None))
        self._transfer(op, deadline, (r + 1) % n, sends, (r - 1) % n, recvs, ufunc)

    # --- fingerprints -----------------------------------------------------------------------
    def _exchange_fingerprints(self, call: Collective, mine: bytes) -> List[Tuple[int, bytes]]:
        """Swap fingerprints with the peer of a send or receive, or with both ring neighbours:
        a mismatch anywhere in the ring lies between two neighbours, and both of them see it."""
        if call.op in ("send", "recv"):
            exchanges = [(call.root, call.root)]
        elif self.size == 1:
            return []
        else:
            right, left = (self.rank + 1) % self.size, (self.rank - 1) % self.size
            exchanges = [(right, left)] if right == left else [(right, left), (left, right)]
        deadline = time.monotonic() + call.timeout
        outgoing = SendPiece(numpy.frombuffer(mine, numpy.uint8))
        received = []
        for (send_to, recv_from), incoming in zip(exchanges, self._fingerprints_in):
            self._transfer(call.op, deadline, send_to, [outgoing], recv_from, [RecvPiece(incoming)])
            received.append((recv_from, incoming.tobytes()))
        return received

    # --- collectives ------------------------------------------------------------------------
    def _all_reduce(self, array: numpy.ndarray, op: ReduceOp) -> None:
        if self.size > 1 and array.size:
            deadline = time.monotonic() + self.timeout
            flat = array.reshape(-1)
            if array.nbytes <= SMALL_ALL_REDUCE_BYTES:
                self._small_all_reduce("all_reduce", deadline, flat, _REDUCERS[op])
            else:
                self._ring("all_reduce", deadline, flat, _split_points(flat.size, self.size), _REDUCERS[op])
        if op == ReduceOp.AVG:
            divide_by_size(array, self.size)

    def _small_all_reduce(self, op: str, deadline: float, flat: numpy.ndarray, ufunc: Any) -> None:
        """Gather every rank's whole array, then reduce them in rank order on each rank."""
        staging = self._staging_bytes(self.size * flat.nbytes).view(flat.dtype)
        staging[self.rank * flat.size : (self.rank + 1) * flat.size] = flat
        self._ring(op, deadline, staging, [i * flat.size for i in range(self.size + 1)])
        ufunc.reduce(staging.reshape(self.size, flat.size), axis=0, dtype=flat.dtype, out=flat)

    def _broadcast(self, array: numpy.ndarray, src: int) -> None:
        if self.size == 1 or array.size == 0:
            return
        n = self.size
        position = (self.rank - src) % n
        raw = _raw(array)
        sends = [SendPiece(raw, None if position == 0 else 0)] if position < n - 1 else []
        recvs = [RecvPiece(raw)] if position > 0 else []
        self._transfer(
            "broadcast", time.monotonic() + self.timeout, (self.rank + 1) % n, sends, (self.rank - 1) % n, recvs
        )

    def _all_gather(self, out_array: numpy.ndarray, array: numpy.ndarray) -> None:
        count = array.size
        flat = out_array.reshape(-1)
        flat[self.rank * count : (self.rank + 1) * count] = array.reshape(-1)
        if self.size > 1 and count:
            self._ring("all_gather", time.monotonic() + self.timeout, flat, [i * count for i in range(self.size + 1)])

    def _reduce_scatter(self, out_array: numpy.ndarray, in_array: numpy.ndarray, op: ReduceOp) -> None:
        block = out_array.size
        work = in_array.reshape(-1).copy()
        if self.size > 1 and block:
            self._ring(
                "reduce_scatter",
                time.monotonic() + self.timeout,
                work,
                [i * block for i in range(self.size + 1)],
                _REDUCERS[op],
                gather=False,
            )
        out_array.reshape(-1)[...] = work[self.rank * block : (self.rank + 1) * block]
        if op == ReduceOp.AVG:
            divide_by_size(out_array, self.size)

    def _barrier(self, timeout: float) -> None:
        if self.size > 1:
            self._small_all_reduce("barrier", time.monotonic() + timeout, numpy.zeros(1, numpy.uint8), numpy.maximum)

    def _send(self, array: numpy.ndarray, dst: int) -> None:
        self._transfer("send", time.monotonic() + self.timeout, dst, [SendPiece(_raw(array))], -1, [])

    def _recv(self, array: numpy.ndarray, src: int) -> None:
        self._transfer("recv", time.monotonic() + self.timeout, -1, [], src, [RecvPiece(_raw(array))])

    def _close(self) -> None:
        for sock in self._peers.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
