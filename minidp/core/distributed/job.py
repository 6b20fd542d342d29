"""The plan of a job: its backend, each local rank's GPU, reserved ports, environments, secret.

One planner serves ``spawn``, ``python -m minidp.distributed.launch`` and the test harness, so
the three agree on what a rank's environment holds:

* Paddle's variables, read by ``ParallelEnv``: ``PADDLE_TRAINER_ID``, ``PADDLE_TRAINERS_NUM``,
  ``PADDLE_CURRENT_ENDPOINT``, ``PADDLE_TRAINER_ENDPOINTS``, ``PADDLE_MASTER`` (the store, hosted
  by rank 0) with ``MASTER_ADDR``/``MASTER_PORT``, ``PADDLE_DISTRI_BACKEND`` and, under nccl,
  ``FLAGS_selected_gpus``;
* torchrun's: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``;
* minidp's: ``MINIDP_JOB_SECRET`` (see :mod:`minidp.core.distributed.auth`) and
  ``MINIDP_FAILURE_DIR``, where a failing rank leaves its structured failure record (see
  :mod:`minidp.core.distributed.failure_record`).

The ports a plan names stay reserved (:class:`PortReservation`) until :meth:`JobPlan.release`;
the store's port listens from the moment it is chosen, and rank 0 takes that very socket over
(``MINIDP_STORE_HANDOVER``), so no process without the job secret can take the port first.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from .. import backend as _backend, timeline
from .backends import choose_backend
from .auth import SECRET_ENV, new_job_secret
from .failure_record import FAILURE_DIR_ENV
from .store import IDLE_POLL_SECONDS, STORE_HANDOVER_ENV

PLANNED_BACKENDS = ("auto", "gloo", "nccl")


class PortReservation:
    """``count`` distinct free TCP ports on ``host``, held until :meth:`release`, and with
    ``store=True`` one more for the job's store (``store_port``).

    Each of the ``count`` ports stays bound (not listening) by a socket with ``SO_REUSEADDR``,
    so that no other process -- another job's launcher, a rank's ephemeral connection, a
    listener on port 0 -- takes it by chance; these ports only name the ranks' endpoints.

    The store's port must not be taken on purpose either: a port bound but not listening can be
    listed and bound again with ``SO_REUSEADDR`` by any user, who could listen there first and
    stop the job. So it listens at once, and the reservation hands that listening socket (over a
    Unix socket in a private directory, named by ``MINIDP_STORE_HANDOVER``) to the first local
    process that asks: rank 0's ``TCPStore``. Connections that arrive before rank 0 takes it
    over wait in its queue. Release the reservation when the job ends.
    """

    def __init__(self, host: str, count: int, store: bool = False) -> None:
        self.host = host
        self._sockets: List[socket.socket] = []
        self._store: Optional[socket.socket] = None
        self._handover: Optional[socket.socket] = None
        self._handover_dir = ""
        self._stopping = threading.Event()
        try:
            for _ in range(count):
                sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
                self._sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((host, 0))
                except OSError as error:
                    raise ValueError(
                        f"cannot bind a port on {host!r} ({error}); give an address of this machine"
                    ) from error
            self.ports: List[int] = [sock.getsockname()[1] for sock in self._sockets]
            self.store_port = 0
            self.handover_path = ""
            if store:
                self._listen_for_the_store()
        except BaseException:
            self.release()
            raise

    def _listen_for_the_store(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._store = socket.create_server((self.host, 0), family=family, backlog=128)
        self.store_port = self._store.getsockname()[1]
        self._handover_dir = tempfile.mkdtemp(prefix="minidp-store-")
        self.handover_path = os.path.join(self._handover_dir, "listener")
        self._handover = socket.socket(socket.AF_UNIX)
        self._handover.bind(self.handover_path)
        self._handover.listen(4)
        self._handover.settimeout(IDLE_POLL_SECONDS)
        threading.Thread(target=self._hand_over, daemon=True, name=f"minidp-store-handover-{self.store_port}").start()

    def _hand_over(self) -> None:
        """Give the store's listening socket to the first process that asks, then stop."""
        handover, listener = self._handover, self._store
        while not self._stopping.is_set():
            try:
                conn, _ = handover.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                try:
                    socket.send_fds(conn, [b"L"], [listener.fileno()])
                except OSError:
                    continue
            listener.close()  # rank 0 holds it now
            return

    def release(self) -> None:
        """Let the ports go (safe to call more than once)."""
        self._stopping.set()
        for sock in [*self._sockets, self._store, self._handover]:
            if sock is not None:
                sock.close()
        self._sockets, self._store, self._handover = [], None, None
        if self._handover_dir:
            shutil.rmtree(self._handover_dir, ignore_errors=True)
            self._handover_dir = ""

    def __enter__(self) -> "PortReservation":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


def visible_gpus() -> List[str]:
    """The GPU card ids this process may use: ``CUDA_VISIBLE_DEVICES``, else every device."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if listed:
        return [card.strip() for card in listed.split(",")]
    return [str(index) for index in range(_backend.cuda_device_count())]


def select_gpus(nprocs: int, gpus: Union[None, str, Sequence[Union[int, str]]]) -> List[int]:
    """The device index each of ``nprocs`` local ranks uses, validated against visible cards.

    ``gpus`` names cards as ``CUDA_VISIBLE_DEVICES`` does ("4,5"); the returned indices count
    from the first visible card, which is how CUDA (and ``FLAGS_selected_gpus``) numbers them.
    Without ``gpus``, rank i takes the i-th visible card.
    """
    visible = visible_gpus()
    if gpus is None:
        if len(visible) < nprocs:
            raise RuntimeError(
                f"{nprocs} processes were asked for but only {len(visible)} GPU(s) are visible; "
                "pass a smaller nprocs or make more cards visible through CUDA_VISIBLE_DEVICES"
            )
        return list(range(nprocs))
    if isinstance(gpus, str):
        cards = [card.strip() for card in gpus.split(",") if card.strip()]
    elif isinstance(gpus, (list, tuple)):
        cards = [str(card).strip() for card in gpus]
    else:
        raise TypeError(f"gpus must be a string such as '0,1' or a list of ids, got {gpus!r}")
    if len(cards) != nprocs:
        raise ValueError(
            f"gpus selects {len(cards)} card(s) but {nprocs} processes were asked for; "
            "pass one card per process (make nprocs and gpus agree)"
        )
    for card in cards:
        if card not in visible:
            if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
                seen = f"CUDA_VISIBLE_DEVICES={','.join(visible)}"
            else:
                seen = f"all cards: {','.join(visible)}" if visible else "no GPU is visible"
            raise ValueError(
                f"GPU card {card} is not among the visible cards ({seen}); choose cards from "
                "those, or change CUDA_VISIBLE_DEVICES"
            )
    return [visible.index(card) for card in cards]


def resolve_backend(name: str, gpus_requested: bool) -> str:
    """The backend the ranks will use: ``name`` checked for what a launcher can start, then
    decided by :func:`~minidp.core.distributed.backends.choose_backend` (the rule
    ``init_parallel_env`` follows)."""
    if name == "mpi":
        raise ValueError(
            "the 'mpi' backend's ranks must be started by an MPI launcher; run "
            "`mpirun -n N python your_script.py` instead (use N ranks: mpirun -n N)"
        )
    if name not in PLANNED_BACKENDS:
        raise ValueError(f"backend must be one of {PLANNED_BACKENDS}, got {name!r}")
    if name == "gloo" and gpus_requested:
        raise ValueError("the GPU selection (gpus / --devices) is for the 'nccl' backend; drop it for gloo")
    return choose_backend(name, gpus_requested=gpus_requested)


def job_secret_for_launch(nodes: int = 1) -> str:
    """The secret of a job about to start: ``MINIDP_JOB_SECRET`` if set, else a fresh one.

    Several nodes must share one, which no launcher can hand the others safely, so a job over
    several nodes needs it set (to the same value) on every node.
    """
    secret = os.environ.get(SECRET_ENV, "")
    if secret:
        return secret
    if nodes > 1:
        raise ValueError(
            f"a job over {nodes} nodes needs the same {SECRET_ENV} on every node: set it to a "
            "random value (e.g. python -c 'import secrets; print(secrets.token_hex(32))') "
            "before starting each node's launcher"
        )
    return new_job_secret()


def rank_environment(
    rank: int,
    local_rank: int,
    local_world_size: int,
    endpoints: Sequence[str],
    master: str,
    backend: str,
    device: Optional[int],
    secret: str,
    failure_dir: str,
    handover: str = "",
) -> Dict[str, str]:
    """The environment variables that tell one rank who it is (see the module docstring).

    ``endpoints`` lists every rank's ``host:port`` in rank order; ``master`` is the
    ``host:port`` of the rendezvous store that rank 0 hosts; ``device`` is the GPU index for the
    nccl backend (None on CPU); ``secret`` is the job secret every connection proves;
    ``failure_dir`` is where the rank leaves its failure record; ``handover`` where rank 0 takes
    over the store's listening socket (see :class:`PortReservation`).
    """
    master_host, _, master_port = master.rpartition(":")
    env = {
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_TRAINERS_NUM": str(len(endpoints)),
        "PADDLE_CURRENT_ENDPOINT": endpoints[rank],
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
        "PADDLE_MASTER": master,
        "MASTER_ADDR": master_host,
        "MASTER_PORT": master_port,
        "PADDLE_DISTRI_BACKEND": backend,
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(len(endpoints)),
        "LOCAL_WORLD_SIZE": str(local_world_size),
        SECRET_ENV: secret,
        FAILURE_DIR_ENV: failure_dir,
    }
    if device is not None:
        env["FLAGS_selected_gpus"] = str(device)
    if handover:
        env[STORE_HANDOVER_ENV] = handover
    return env


@dataclass
class JobPlan:
    """What one node starts: the backend and one environment per local rank.

    It holds what must live as long as the job: the reservation of the ports the environments
    name and the directory of failure records; :meth:`release` frees both.
    """

    backend: str
    envs: List[Dict[str, str]]
    ports: Optional[PortReservation] = None
    failure_dir: str = ""

    def release(self) -> None:
        """The job is over: free the ports and remove the failure records (idempotent). The
        first call also merges the ranks' timelines when ``MINIDP_TIMELINE`` is set."""
        if self.ports is not None:
            self.ports.release()
            self.ports = None
        if self.failure_dir:
            timeline.merge_from_environment()
            shutil.rmtree(self.failure_dir, ignore_errors=True)
            self.failure_dir = ""


def new_failure_dir() -> str:
    """A fresh private directory for one job's failure records."""
    return tempfile.mkdtemp(prefix="minidp-job-")


def plan_node(
    backend: str,
    devices: Sequence[Optional[int]],
    endpoints: Sequence[str],
    master: str,
    first_rank: int,
    secret: str,
    ports: Optional[PortReservation] = None,
) -> JobPlan:
    """The plan of one node whose ranks are ``first_rank ...`` of the job's ``endpoints``.

    ``devices`` holds one entry (GPU index or None) per local rank; ``ports`` is the reservation
    behind this node's endpoints, kept until the plan is released.
    """
    failure_dir = new_failure_dir()
    local = len(devices)
    handover = ports.handover_path if ports is not None and first_rank == 0 else ""
    envs = [
        rank_environment(
            first_rank + index,
            index,
            local,
            endpoints,
            master,
            backend,
            devices[index],
            secret,
            failure_dir,
            handover if first_rank + index == 0 else "",
        )
        for index in range(local)
    ]
    return JobPlan(backend, envs, ports, failure_dir)


def plan_local_job(
    nprocs: int,
    backend: str,
    devices: Optional[Sequence[Optional[int]]] = None,
    host: str = "127.0.0.1",
    secret: Optional[str] = None,
) -> JobPlan:
    """The plan of a job of ``nprocs`` ranks on this machine, all reachable at ``host``.

    Reserves one port per rank and one for the store; ``devices`` defaults to no GPU;
    ``secret`` to :func:`job_secret_for_launch`.
    """
    devices = list(devices) if devices is not None else [None] * nprocs
    ports = PortReservation(host, nprocs, store=True)
    endpoints = [f"{host}:{port}" for port in ports.ports]
    master = f"{host}:{ports.store_port}"
    return plan_node(
        backend, devices, endpoints, master, 0, secret if secret is not None else job_secret_for_launch(), ports
    )
