"""The job secret, and the handshake by which both ends of a connection prove they know it.

Every listener of a job (the rendezvous store; the gloo ring's set-up listener) greets each
connection with this handshake before it reads anything else, so a process that can reach the
port but was not given the job's secret can neither read nor change anything.

The secret comes from ``MINIDP_JOB_SECRET``: ``spawn`` and the launcher make a fresh one per job
and hand it to their ranks; for a job started by hand (or across hosts) set the same value on
every rank; under bare ``mpirun`` rank 0 makes one and shares it over MPI. Without a secret the
handshake still runs, keyed by the empty string: that keeps the protocol the same but protects
nothing, and the store says so in its log.

The handshake is mutual, over fresh random challenges (so nothing can be replayed), and bound to
a ``context`` naming what the connection is for (for gloo, the group and both ranks, so nothing
can be relayed to another pair):

1. listener -> dialer: 32 random bytes ``a``;
2. dialer -> listener: 32 random bytes ``b`` and ``HMAC(secret, "dial" | context | a | b)``;
3. listener -> dialer: ``HMAC(secret, "listen" | context | a | b)``.

Each side checks the other's proof in constant time and drops the connection on a mismatch. The
handshake authenticates; it does not encrypt: across hosts, use a private network or a tunnel.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
import time

SECRET_ENV = "MINIDP_JOB_SECRET"
CHALLENGE_BYTES = 32
PROOF_BYTES = hashlib.sha256().digest_size
HANDSHAKE_SECONDS = 10.0
"""How long a peer may take to answer the handshake: a silent client costs seconds, not the
group timeout."""


class AuthenticationError(ConnectionError):
    """The peer did not prove that it knows the job's secret (or did not answer in time)."""


_shared_secret = b""


def job_secret() -> bytes:
    """The job's secret: the one shared over MPI (see :func:`use_job_secret`), else
    ``MINIDP_JOB_SECRET`` (empty when the job has none)."""
    return _shared_secret or os.environ.get(SECRET_ENV, "").encode("utf-8")


def use_job_secret(secret: bytes) -> None:
    """Make ``secret`` this process's job secret (under ``mpirun``, rank 0's, shared over MPI)."""
    global _shared_secret
    _shared_secret = bytes(secret)


def new_job_secret() -> str:
    """A fresh random secret for one job (hex text, fit for an environment variable)."""
    return secrets.token_hex(32)


def _proof(secret: bytes, role: bytes, context: bytes, a: bytes, b: bytes) -> bytes:
    return hmac.new(secret, b"\0".join((role, context, a, b)), hashlib.sha256).digest()


def _receive(sock: socket.socket, size: int, deadline: float, step: str) -> bytes:
    data = bytearray()
    while len(data) < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AuthenticationError(f"no answer to the handshake ({step}) within {HANDSHAKE_SECONDS:g} s")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(size - len(data))
        except socket.timeout:
            continue
        if not chunk:
            raise AuthenticationError(f"the peer closed the connection during the handshake ({step})")
        data += chunk
    return bytes(data)


def _send(sock: socket.socket, data: bytes, deadline: float) -> None:
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    sock.sendall(data)


def accept_handshake(sock: socket.socket, secret: bytes, context: bytes, seconds: float = HANDSHAKE_SECONDS) -> None:
    """The listener's side: challenge the dialer, check its proof, prove ourselves.

    Raises :class:`AuthenticationError` (or ``OSError``) when the dialer fails; the caller drops
    the connection. The socket's timeout is changed.
    """
    deadline = time.monotonic() + seconds
    a = secrets.token_bytes(CHALLENGE_BYTES)
    _send(sock, a, deadline)
    answer = _receive(sock, CHALLENGE_BYTES + PROOF_BYTES, deadline, "proof")
    b, proof = answer[:CHALLENGE_BYTES], answer[CHALLENGE_BYTES:]
    if not hmac.compare_digest(proof, _proof(secret, b"dial", context, a, b)):
        raise AuthenticationError(
            "wrong proof of the job secret (a process from another job, "
            "or one started without this job's MINIDP_JOB_SECRET)"
        )
    _send(sock, _proof(secret, b"listen", context, a, b), deadline)


def dial_handshake(sock: socket.socket, secret: bytes, context: bytes, seconds: float = HANDSHAKE_SECONDS) -> None:
    """The dialer's side: answer the listener's challenge and check the listener's proof."""
    deadline = time.monotonic() + seconds
    a = _receive(sock, CHALLENGE_BYTES, deadline, "challenge")
    b = secrets.token_bytes(CHALLENGE_BYTES)
    _send(sock, b + _proof(secret, b"dial", context, a, b), deadline)
    proof = _receive(sock, PROOF_BYTES, deadline, "listener's proof")
    if not hmac.compare_digest(proof, _proof(secret, b"listen", context, a, b)):
        raise AuthenticationError(
            "the listener does not know the job secret: it is not this job's (check the address and MINIDP_JOB_SECRET)"
        )
