"""ParallelEnv: who this process is in the job, read from the environment.

Launchers (``minidp.distributed.spawn``, ``python -m minidp.distributed.launch``) write Paddle's
variables: ``PADDLE_TRAINER_ID``, ``PADDLE_TRAINERS_NUM``, ``PADDLE_CURRENT_ENDPOINT``,
``PADDLE_TRAINER_ENDPOINTS``, ``FLAGS_selected_gpus``, ``PADDLE_PG_TIMEOUT`` (milliseconds).
A process started by an MPI launcher (``mpirun``/``mpiexec`` of Open MPI, MPICH or Intel MPI,
or Slurm's ``srun --mpi=pmi2``) gets its rank, world size and local rank from the launcher's own
variables instead, so a bare ``mpirun -n 2 python train.py`` needs no other set-up; Paddle's
variables, when present, take precedence. Such a launcher announces no endpoints:
``init_parallel_env`` shares them over MPI and hands them to :func:`record_mpi_endpoints`, and
every ``ParallelEnv`` made afterwards in the process reports them. They are kept here, not
written to ``os.environ``, so they never leak into the environment of child processes.
"""

from __future__ import annotations

import os
from typing import List, NamedTuple, Optional, Sequence, Tuple

from .. import backend as array_backend

# 30 minutes, as Paddle's PADDLE_PG_TIMEOUT and PyTorch's default for gloo (PyTorch uses 10 for
# NCCL): long enough for a slow first step or checkpoint on one rank; a peer that stopped calling
# collectives is reported long before (MINIDP_STALL_WARNING_SECONDS, backends/base.py).
DEFAULT_PG_TIMEOUT_MS = 1_800_000

# Every rank's ``ip:port`` as init_parallel_env shared them over MPI (empty until then).
_mpi_endpoints: List[str] = []


class MpiLaunch(NamedTuple):
    """Rank, world size and rank within the node, as an MPI launcher announced them."""

    rank: int
    size: int
    local_rank: int


# (rank variable, size variable, local-rank variables in order of preference)
_MPI_LAUNCHER_VARIABLES: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", ("OMPI_COMM_WORLD_LOCAL_RANK",)),
    ("PMI_RANK", "PMI_SIZE", ("MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID")),
)


def read_int(name: str, default: int) -> int:
    """Integer environment variable ``name``, or ``default`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} must be an integer") from None


def local_device(local_rank: int) -> int:
    """The GPU of the rank ``local_rank`` of a node: that index modulo the devices this process
    sees. Under mpirun or srun each rank may see only its own GPU (``CUDA_VISIBLE_DEVICES`` set
    per rank), where every rank must take device 0; with no device visible, the local rank."""
    visible = array_backend.cuda_device_count()
    return local_rank % visible if visible else local_rank


def record_mpi_endpoints(endpoints: Sequence[str]) -> None:
    """Remember every rank's ``ip:port`` (rank order) as shared over MPI by init_parallel_env."""
    _mpi_endpoints[:] = endpoints


def mpi_launch() -> Optional[MpiLaunch]:
    """What the MPI launcher that started this process says, or None when there is none."""
    for rank_name, size_name, local_names in _MPI_LAUNCHER_VARIABLES:
        if os.environ.get(rank_name) and os.environ.get(size_name):
            rank = read_int(rank_name, 0)
            local_name = next((n for n in local_names if os.environ.get(n)), None)
            local_rank = read_int(local_name, 0) if local_name else rank
            return MpiLaunch(rank, read_int(size_name, 1), local_rank)
    return None


class ParallelEnv:
    """Rank, world size, device and endpoints of this process (Paddle's ``ParallelEnv``).

    Values are read once, when the object is made. ``local_rank``, ``nranks`` and ``dev_id`` are
    the old names of ``rank``, ``world_size`` and ``device_id``. ``nrings`` is accepted and
    validated for compatibility with Paddle only: minidp opens one NCCL communicator per group
    and leaves the number of rings (channels) to NCCL.
    """

    def __init__(self) -> None:
        launch = mpi_launch()
        has_paddle_rank = bool(os.environ.get("PADDLE_TRAINER_ID"))
        self._rank = read_int("PADDLE_TRAINER_ID", launch.rank if launch else 0)
        self._world_size = read_int("PADDLE_TRAINERS_NUM", launch.size if launch else 1)
        self._launched_by_mpi = launch is not None and not has_paddle_rank
        self._device_type = os.environ.get("PADDLE_XCCL_BACKEND", "").strip()
        self._pg_timeout = read_int("PADDLE_PG_TIMEOUT", DEFAULT_PG_TIMEOUT_MS)
        if self._pg_timeout <= 0:
            raise ValueError(f"PADDLE_PG_TIMEOUT must be a positive number of milliseconds, got {self._pg_timeout}")
        devices_variable = f"FLAGS_selected_{self._device_type}s" if self._device_type else "FLAGS_selected_gpus"
        selected = os.environ.get(devices_variable, "").split(",")[0].strip()
        if selected:
            if not selected.isdigit():
                raise ValueError(
                    f"{devices_variable} must list device ids such as '0,1', got {os.environ[devices_variable]!r}"
                )
            self._device_id = int(selected)
        elif self._launched_by_mpi:
            self._device_id = local_device(launch.local_rank)
        else:
            self._device_id = 0
        endpoints = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "").strip()
        self._trainer_endpoints = [e.strip() for e in endpoints.split(",") if e.strip()]
        self._current_endpoint = os.environ.get("PADDLE_CURRENT_ENDPOINT", "").strip()
        if self._launched_by_mpi and not endpoints and len(_mpi_endpoints) == self._world_size:
            self._trainer_endpoints = list(_mpi_endpoints)
            self._current_endpoint = self._current_endpoint or _mpi_endpoints[self._rank]
        self._nrings = read_int("FLAGS_nccl_nrings", 1)
        if not 0 < self._nrings < 9:
            raise ValueError(f"FLAGS_nccl_nrings must be between 1 and 8, got {self._nrings}")

    @property
    def rank(self) -> int:
        """Rank of this trainer: ``PADDLE_TRAINER_ID``, else the MPI launcher's rank, else 0."""
        return self._rank

    @property
    def world_size(self) -> int:
        """Number of trainers: ``PADDLE_TRAINERS_NUM``, else the MPI world size, else 1."""
        return self._world_size

    @property
    def device_id(self) -> int:
        """GPU of this trainer: first of ``FLAGS_selected_gpus``, else the MPI local rank modulo
        the visible devices (:func:`local_device`), else 0."""
        return self._device_id

    @property
    def device_type(self) -> str:
        """Custom device type from ``PADDLE_XCCL_BACKEND`` ("" when unset)."""
        return self._device_type

    @property
    def current_endpoint(self) -> str:
        """``ip:port`` of this trainer, from ``PADDLE_CURRENT_ENDPOINT``, else as shared over MPI
        ("" when neither)."""
        return self._current_endpoint

    @property
    def trainer_endpoints(self) -> List[str]:
        """Every trainer's ``ip:port`` in rank order, from ``PADDLE_TRAINER_ENDPOINTS``, else as
        shared over MPI."""
        return list(self._trainer_endpoints)

    @property
    def nrings(self) -> int:
        """``FLAGS_nccl_nrings`` (1 to 8, default 1): accepted for compatibility with Paddle, where
        it sets the number of NCCL communicators per group; minidp uses one and lets NCCL choose
        its channels (``NCCL_MIN_NCHANNELS``/``NCCL_MAX_NCHANNELS`` tune them)."""
        return self._nrings

    @property
    def pg_timeout(self) -> int:
        """Process-group timeout in milliseconds, from ``PADDLE_PG_TIMEOUT`` (default 30 min)."""
        return self._pg_timeout

    @property
    def launched_by_mpi(self) -> bool:
        """True when rank and world size come from an MPI launcher, not Paddle's variables."""
        return self._launched_by_mpi

    local_rank = rank
    nranks = world_size
    dev_id = device_id

    def __repr__(self) -> str:
        return (
            f"ParallelEnv(rank={self.rank}, world_size={self.world_size}, "
            f"device_id={self.device_id}, current_endpoint={self.current_endpoint!r})"
        )
