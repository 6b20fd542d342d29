"""init_parallel_env, get_rank and get_world_size (Paddle's ``paddle.distributed.parallel``).

``init_parallel_env`` turns the environment a launcher wrote into the default group:

1. read :class:`ParallelEnv`; a world of one process warns and returns None;
2. choose the backend: ``PADDLE_DISTRI_BACKEND``, or for ``auto`` the rule of
   :func:`~minidp.core.distributed.backends.choose_backend` that the launchers follow too (nccl
   when CuPy sees a GPU, else mpi when an MPI launcher started the process and mpi4py imports,
   else gloo);
3. under nccl, the rank's GPU becomes the current device (``set_device('gpu:N')`` with N the
   first of ``FLAGS_selected_gpus``, else the MPI local rank modulo the GPUs the process sees,
   else 0), so new tensors are CuPy arrays on it; the log says which GPU each rank took. This
   comes before MPI is initialised, since a CUDA-aware MPI may create a context on the device
   current at ``MPI_Init``;
4. under an MPI launcher, share every rank's ``ip:port`` with an MPI all-gather (rank 0's is the
   master endpoint) and hand them to ``env.record_mpi_endpoints``, from which every
   :class:`ParallelEnv` reads them (nothing is written to ``os.environ``);
5. rank 0 hosts the TCPStore at the master endpoint (``MASTER_ADDR``/``MASTER_PORT``, else
   ``PADDLE_MASTER``, else the first of ``PADDLE_TRAINER_ENDPOINTS``) and every rank connects;
6. the backend builds the default process group, with the timeout ``PADDLE_PG_TIMEOUT`` (ms); the
   log line that reports it names the backend and, for gloo, its transport (``shm`` or ``tcp``,
   see :mod:`~minidp.core.distributed.backends.gloo`).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
import warnings
from typing import Dict, List, Optional, Tuple

from .. import backend as array_backend
from . import auth, collective
from .backends import GroupSpec, choose_backend, get_backend_factory, mpi4py_available
from .backends.gloo import transport_choice
from .collective import Group
from .env import ParallelEnv, record_mpi_endpoints
from .store import TCPStore

logger = logging.getLogger("minidp.distributed")

DEFAULT_GROUP_NAME = "default"
BACKENDS_NEEDING_A_STORE = ("gloo", "nccl")
_ENDPOINT_BYTES = 256
MPI_ABORT_GRACE = 0.25  # seconds between printing an uncaught exception and MPI_Abort

_global_parallel_env: Optional[ParallelEnv] = None
_global_stores: Dict[Tuple[str, int], TCPStore] = {}


def _get_global_parallel_env() -> ParallelEnv:
    global _global_parallel_env
    if _global_parallel_env is None:
        _global_parallel_env = ParallelEnv()
    return _global_parallel_env


def _choose_backend(env: ParallelEnv) -> str:
    backend = choose_backend(os.environ.get("PADDLE_DISTRI_BACKEND", "auto"), launched_by_mpi=env.launched_by_mpi)
    if backend == "nccl" and not array_backend.is_compiled_with_cuda():
        raise RuntimeError(
            f"rank {env.rank}: PADDLE_DISTRI_BACKEND=nccl needs CUDA, but CuPy sees no GPU here; "
            "set PADDLE_DISTRI_BACKEND=gloo (or leave it unset) to train on the CPU"
        )
    get_backend_factory(backend)
    return backend


def _master_endpoint(env: ParallelEnv) -> Tuple[str, int]:
    address, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    endpoint = (
        f"{address}:{port}"
        if address and port
        else (os.environ.get("PADDLE_MASTER") or (env.trainer_endpoints[0] if env.trainer_endpoints else ""))
    )
    if not endpoint:
        raise ValueError(
            f"rank {env.rank}: init_parallel_env needs the master endpoint; set MASTER_ADDR and "
            "MASTER_PORT, PADDLE_MASTER or PADDLE_TRAINER_ENDPOINTS, or start the job with "
            "minidp.distributed.spawn / python -m minidp.distributed.launch"
        )
    host, _, port_text = endpoint.strip().rpartition(":")
    if not host or not port_text.isdigit():
        raise ValueError(f"rank {env.rank}: master endpoint {endpoint!r} is not 'host:port'")
    return host, int(port_text)


def _check_environment(env: ParallelEnv) -> None:
    if not env.launched_by_mpi:
        missing = [name for name in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM") if not os.environ.get(name)]
        if missing:
            raise ValueError(
                f"init_parallel_env: environment variable(s) {', '.join(missing)} needed but not "
                "set; start the job with minidp.distributed.spawn, python -m "
                "minidp.distributed.launch or mpirun"
            )
    if not 0 <= env.rank < env.world_size:
        raise ValueError(
            f"init_parallel_env: rank {env.rank} is outside a world of "
            f"{env.world_size} processes; check PADDLE_TRAINER_ID/PADDLE_TRAINERS_NUM"
        )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _share_endpoints_over_mpi(env: ParallelEnv) -> List[str]:
    """Give every rank an ``ip:port``; every rank's, in rank order.

    Uses buffer-based MPI all-gathers of fixed-size byte strings, so nothing is unpickled. Rank
    0's job secret (``MINIDP_JOB_SECRET``, else a fresh one) goes to every rank the same way.
    Ranks on one host use 127.0.0.1; otherwise each rank's host address. Rank 0's endpoint is
    the job's store, which rank 0 starts here on a port the system picks, so no other process
    can take the port between choosing and listening.
    """
    import numpy
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if (comm.Get_rank(), comm.Get_size()) != (env.rank, env.world_size):
        raise RuntimeError(
            f"rank {env.rank}: MPI reports rank {comm.Get_rank()} of {comm.Get_size()} but the "
            f"environment says {env.rank} of {env.world_size}; unset PADDLE_TRAINER_ID/"
            "PADDLE_TRAINERS_NUM under mpirun"
        )

    def all_gather_text(text: str) -> List[str]:
        local = numpy.zeros(_ENDPOINT_BYTES, numpy.uint8)
        encoded = text.encode("utf-8")[:_ENDPOINT_BYTES]
        local[: len(encoded)] = numpy.frombuffer(encoded, numpy.uint8)
        gathered = numpy.empty((comm.Get_size(), _ENDPOINT_BYTES), numpy.uint8)
        comm.Allgather(local, gathered)
        return [row.tobytes().rstrip(b"\0").decode("utf-8") for row in gathered]

    own = (auth.job_secret() or auth.new_job_secret().encode())[:_ENDPOINT_BYTES]
    secret = numpy.zeros(_ENDPOINT_BYTES, numpy.uint8)
    secret[: len(own)] = numpy.frombuffer(own, numpy.uint8)
    comm.Bcast(secret, root=0)  # rank 0's secret is the job's
    auth.use_job_secret(secret.tobytes().rstrip(b"\0"))
    hostname = socket.gethostname()
    single_host = len(set(all_gather_text(hostname))) == 1
    host = "127.0.0.1" if single_host else socket.gethostbyname(hostname)
    if env.rank == 0:
        store = TCPStore(host, 0, is_master=True, timeout=env.pg_timeout / 1000.0)
        _global_stores[(host, store.port)] = store
        port = store.port
    else:
        port = _free_port(host)
    return all_gather_text(f"{host}:{port}")


def _abort_mpi_job_on_uncaught_exception() -> None:
    """Make an uncaught exception on one rank end the whole ``mpirun`` job at once.

    Without this, the failing rank finalises MPI and exits while its peers sit in a collective
    until their timeout, and ``mpirun`` waits for them. The hook prints the traceback as usual,
    then calls ``MPI_Abort``, which makes the MPI launcher stop every rank.
    """
    from mpi4py import MPI

    previous_hook = sys.excepthook

    def abort_after_printing(kind, value, trace) -> None:
        previous_hook(kind, value, trace)
        sys.stderr.flush()
        sys.stdout.flush()
        # MPICH's launcher may act on the abort before it has forwarded what this rank just
        # printed, and then drops it (a lost traceback, seen now and then under load): give it
        # a moment to read the pipes first.
        time.sleep(MPI_ABORT_GRACE)
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = abort_after_printing


def _create_or_get_store(env: ParallelEnv, timeout: float) -> TCPStore:
    """The job's store at the master endpoint, hosted by rank 0; one per process and endpoint."""
    host, port = _master_endpoint(env)
    store = _global_stores.get((host, port))
    if store is None:
        store = TCPStore(host, port, is_master=env.rank == 0, timeout=timeout)
        _global_stores[(host, port)] = store
    store.timeout = timeout
    return store


def init_parallel_env() -> Optional[Group]:
    """Initialise the default group from the environment; see the module docstring.

    Returns the default :class:`Group` (the existing one when called again), or None with a
    warning when the world holds a single process.
    """
    global _global_parallel_env
    env = _global_parallel_env = ParallelEnv()
    if env.world_size < 2:
        warnings.warn(
            "init_parallel_env: the world holds a single process, so there is nothing "
            "to initialise; launch with spawn, minidp.distributed.launch or mpirun"
        )
        return None
    if collective.is_initialized():
        return collective.get_group()
    _check_environment(env)
    backend = _choose_backend(env)
    if backend == "nccl":  # before MPI_Init, which may make a CUDA context on the current device
        array_backend.set_device(f"gpu:{env.device_id}")
        logger.info(
            "rank %d takes gpu:%d of the %d it sees (CUDA_VISIBLE_DEVICES=%s)",
            env.rank,
            env.device_id,
            array_backend.cuda_device_count(),
            os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
        )
    if env.launched_by_mpi and mpi4py_available():
        _abort_mpi_job_on_uncaught_exception()
        record_mpi_endpoints(_share_endpoints_over_mpi(env))
        env = _global_parallel_env = ParallelEnv()
    timeout = env.pg_timeout / 1000.0
    store = None
    if backend in BACKENDS_NEEDING_A_STORE:
        store = _create_or_get_store(env, timeout)
    ranks = tuple(range(env.world_size))
    spec = GroupSpec(name=DEFAULT_GROUP_NAME, global_ranks=ranks, global_rank=env.rank, timeout=timeout, store=store)
    pg = get_backend_factory(backend)(spec)
    group = Group(env.rank, collective.DEFAULT_GROUP_ID, ranks, pg, DEFAULT_GROUP_NAME)
    collective._register_default_group(group, store, backend, timeout)
    over = f" over {transport_choice()}" if backend == "gloo" else ""
    logger.info("init_parallel_env done: %d ranks, backend %s%s, timeout %g s", env.world_size, backend, over, timeout)
    return group


def get_rank(group: Optional[Group] = None) -> int:
    """This process's rank in ``group`` (-1 when not a member), or in the job when None."""
    if group is not None:
        return group.rank
    return _get_global_parallel_env().rank


def get_world_size(group: Optional[Group] = None) -> int:
    """Number of processes in ``group``, or in the job when None."""
    if group is not None:
        return group.world_size
    if collective.is_initialized():
        return collective.get_group().world_size
    return _get_global_parallel_env().world_size
