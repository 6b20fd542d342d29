"""How the launchers of a job over several nodes meet and stay in touch.

Node 0's launcher hosts a small store at ``--master``; each launcher publishes its ranks'
endpoints there and reads everyone's (:func:`rendezvous`), then keeps a :class:`NodeLink` for
the job's lifetime. While a launcher waits for the others it says so every ``WAIT_LOG_SECONDS``
(:func:`while_logging`), naming the address it waits at.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable, List, Optional, Tuple, TypeVar

from ..job import PortReservation
from ..store import TCPStore

logger = logging.getLogger("minidp.distributed.launch")

RENDEZVOUS_TIMEOUT_SECONDS = 300.0
WAIT_LOG_SECONDS = 10.0

_T = TypeVar("_T")


def while_logging(what: str, action: Callable[[], _T], timeout: float) -> _T:
    """Run ``action`` (a blocking wait of at most ``timeout`` s); say every ``WAIT_LOG_SECONDS``
    that this launcher is still waiting for ``what``."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True, name="minidp-launch-rendezvous")
    started = time.monotonic()
    thread.start()
    while True:
        thread.join(WAIT_LOG_SECONDS)
        if not thread.is_alive():
            break
        logger.info(
            "still waiting for %s (%.0f s so far, giving up after %.0f s)", what, time.monotonic() - started, timeout
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class NodeLink:
    """The launchers of a several-node job, connected for the job's lifetime.

    Node 0's launcher hosts a small store at ``--master``; every launcher keeps a client. A
    launcher whose ranks fail (or which receives SIGINT/SIGTERM) writes ``failed`` there; a
    watcher thread in every other launcher polls for it and has that launcher stop its ranks, so
    a failure anywhere ends the job everywhere within about ``POLL_SECONDS`` -- ranks waiting to
    reach a peer that will never come would otherwise wait out their whole timeout. A launcher
    that loses its connection to node 0's launcher before that one reported ``finished`` stops
    its ranks too. Node 0 keeps the store up until every other launcher has left (at most
    ``LEAVE_SECONDS``).
    """

    POLL_SECONDS = 0.5
    LEAVE_SECONDS = 10.0
    REQUEST_SECONDS = 30.0

    def __init__(self, store: TCPStore, prefix: str, node_rank: int, nnodes: int) -> None:
        self.store = store
        store.timeout = self.REQUEST_SECONDS  # an unresponsive node 0 is noticed within this
        self.node_rank = node_rank
        self._prefix = prefix
        self._nnodes = nnodes
        self._failed_key = f"{prefix}/failed"
        self._finished_key = f"{prefix}/finished"
        self._stop = threading.Event()
        self._left = False
        self._thread: Optional[threading.Thread] = None

    def _left_key(self, node: int) -> str:
        return f"{self._prefix}/left/{node}"

    def watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        """Start the watcher, which puts ("remote", message) or ("lost", message) in ``events``."""
        self._thread = threading.Thread(target=self._watch, args=(events,), daemon=True, name="minidp-launch-node-link")
        self._thread.start()

    def _watch(self, events: "queue.SimpleQueue[Tuple[str, object]]") -> None:
        while not self._stop.wait(self.POLL_SECONDS):
            try:
                if self.store.check([self._failed_key]):
                    message = self.store.get(self._failed_key, timeout=self.POLL_SECONDS)
                    self._leave()
                    events.put(("remote", message.decode("utf-8", "replace")))
                    return
                if self.node_rank != 0 and self.store.check([self._finished_key]):
                    self._leave()  # node 0 is done; nothing more can come from there
                    return
            except RuntimeError as error:
                if not self._stop.is_set():
                    events.put(("lost", f"lost contact with node 0's launcher ({error})"))
                return

    def report_failure(self, message: str) -> None:
        """Tell the other launchers to stop their ranks (best effort)."""
        try:
            if not self.store.check([self._failed_key]):
                self.store.set(self._failed_key, message)
        except RuntimeError as error:
            logger.warning("could not tell the other nodes that this one failed: %s", error)

    def _leave(self) -> None:
        if self.node_rank != 0 and not self._left:
            self._left = True
            try:
                self.store.set(self._left_key(self.node_rank), b"1")
            except RuntimeError:
                pass  # node 0 already went away

    def close(self, succeeded: bool) -> None:
        """Stop watching; node 0 announces the end and waits (bounded) for the others to leave."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.POLL_SECONDS + 5.0)
        try:
            if self.node_rank == 0:
                if succeeded:
                    self.store.set(self._finished_key, b"1")
                others = [self._left_key(node) for node in range(1, self._nnodes)]
                self.store.wait(others, timeout=self.LEAVE_SECONDS)
            else:
                self._leave()
        except RuntimeError as error:
            logger.info("not every node left in time: %s", error)
        finally:
            self.store.close()


def rendezvous(
    master: Tuple[str, int], node_rank: int, nnodes: int, host: Optional[str], job_id: str, nproc: int, secret: str
) -> Tuple[List[str], str, int, PortReservation, NodeLink]:
    """Meet the other nodes' launchers at ``master``: every rank's endpoint, the ranks' store
    address, this node's first global rank, the reservation of this node's ``nproc`` ports and
    the link between the launchers. ``host`` is this node's address for its ranks (default: the
    one it reaches ``master`` from).

    Each node publishes its ranks' endpoints, node 0 also the store address that its rank 0
    will host, then all read all. The ports this node hands out stay reserved until the job
    ends, so that nothing takes them before the ranks listen there and two launchers on one
    host never hand out the same one.
    """
    master_host, master_port = master
    is_node0 = node_rank == 0
    where = f"{master_host}:{master_port}"
    logger.info("meeting the other nodes' launchers at %s", where)
    store = while_logging(
        f"node 0's launcher at {where}",
        lambda: TCPStore(
            master_host,
            master_port,
            is_master=is_node0,
            timeout=RENDEZVOUS_TIMEOUT_SECONDS,
            secret=secret.encode("utf-8"),
        ),
        RENDEZVOUS_TIMEOUT_SECONDS,
    )
    ports = None
    try:
        host = host or store.local_address
        ports = PortReservation(host, nproc, store=is_node0)
        prefix = f"minidp-launch/{job_id}"
        store.set(f"{prefix}/node/{node_rank}", ",".join(f"{host}:{p}" for p in ports.ports))
        if is_node0:
            store.set(f"{prefix}/store", f"{host}:{ports.store_port}")
        node_keys = [f"{prefix}/node/{node}" for node in range(nnodes)]
        while_logging(
            f"the launchers of all {nnodes} nodes to meet at {where}",
            lambda: store.wait(node_keys),
            RENDEZVOUS_TIMEOUT_SECONDS,
        )
        per_node = [store.get(key).decode().split(",") for key in node_keys]
        rank_store = store.get(f"{prefix}/store").decode()
    except BaseException:
        store.close()
        if ports is not None:
            ports.release()
        raise
    first_rank = sum(len(endpoints) for endpoints in per_node[:node_rank])
    endpoints = [endpoint for endpoints in per_node for endpoint in endpoints]
    return (endpoints, rank_store, first_rank, ports, NodeLink(store, prefix, node_rank, nnodes))
