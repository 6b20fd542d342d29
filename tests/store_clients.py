"""A raw socket to a TCPStore that has passed the job-secret handshake, for wire-level tests."""

import socket

from minidp.core.distributed import auth
from minidp.core.distributed.store import STORE_CONTEXT


def handshaken_socket(port: int, secret: bytes = b"", timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    auth.dial_handshake(sock, secret, STORE_CONTEXT)
    sock.settimeout(timeout)
    return sock
