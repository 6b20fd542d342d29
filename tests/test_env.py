"""ParallelEnv: Paddle's variables, their defaults and aliases, and MPI launcher detection."""

import os

import pytest

from minidp.core import backend as array_backend
from minidp.distributed import ParallelEnv
from minidp.core.distributed import env as env_module
from minidp.core.distributed.env import mpi_launch, record_mpi_endpoints

VARIABLES = (
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_PG_TIMEOUT",
    "PADDLE_XCCL_BACKEND",
    "FLAGS_selected_gpus",
    "FLAGS_selected_npus",
    "FLAGS_nccl_nrings",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "PMI_LOCAL_RANK",
    "SLURM_LOCALID",
)


@pytest.fixture
def env(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults_outside_any_launcher(env):
    parallel_env = ParallelEnv()
    assert (parallel_env.rank, parallel_env.world_size, parallel_env.device_id) == (0, 1, 0)
    assert parallel_env.current_endpoint == "" and parallel_env.trainer_endpoints == []
    assert parallel_env.nrings == 1 and parallel_env.pg_timeout == 1_800_000
    assert parallel_env.device_type == "" and not parallel_env.launched_by_mpi
    assert mpi_launch() is None


def test_paddle_variables_and_aliases(env):
    env.setenv("PADDLE_TRAINER_ID", "1")
    env.setenv("PADDLE_TRAINERS_NUM", "4")
    env.setenv("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6171")
    env.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6170,127.0.0.1:6171")
    env.setenv("FLAGS_selected_gpus", "3,2")
    env.setenv("FLAGS_nccl_nrings", "2")
    env.setenv("PADDLE_PG_TIMEOUT", "5000")
    parallel_env = ParallelEnv()
    assert (parallel_env.rank, parallel_env.world_size, parallel_env.device_id) == (1, 4, 3)
    assert (parallel_env.local_rank, parallel_env.nranks, parallel_env.dev_id) == (1, 4, 3)
    assert parallel_env.current_endpoint == "127.0.0.1:6171"
    assert parallel_env.trainer_endpoints == ["127.0.0.1:6170", "127.0.0.1:6171"]
    assert parallel_env.nrings == 2 and parallel_env.pg_timeout == 5000


def test_custom_device_type_reads_its_own_flag(env):
    env.setenv("PADDLE_XCCL_BACKEND", "npu")
    env.setenv("FLAGS_selected_npus", "5")
    env.setenv("FLAGS_selected_gpus", "1")
    parallel_env = ParallelEnv()
    assert parallel_env.device_type == "npu" and parallel_env.device_id == 5


@pytest.mark.parametrize(
    "variables, expected",
    [
        ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}, (2, 4, 0)),
        ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"}, (1, 2, 1)),
        ({"PMI_RANK": "5", "PMI_SIZE": "8", "SLURM_LOCALID": "1"}, (5, 8, 1)),
        ({"PMI_RANK": "3", "PMI_SIZE": "4"}, (3, 4, 3)),
    ],
    ids=["open-mpi", "mpich-hydra", "slurm-pmi2", "pmi-without-local-rank"],
)
def test_mpi_launchers_are_detected(env, variables, expected):
    for name, value in variables.items():
        env.setenv(name, value)
    parallel_env = ParallelEnv()
    assert (parallel_env.rank, parallel_env.world_size, parallel_env.device_id) == expected
    assert parallel_env.launched_by_mpi


def test_paddle_variables_take_precedence_over_the_mpi_launcher(env):
    env.setenv("PMI_RANK", "1")
    env.setenv("PMI_SIZE", "2")
    env.setenv("PADDLE_TRAINER_ID", "0")
    env.setenv("PADDLE_TRAINERS_NUM", "3")
    parallel_env = ParallelEnv()
    assert (parallel_env.rank, parallel_env.world_size) == (0, 3)
    assert not parallel_env.launched_by_mpi


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("PADDLE_TRAINER_ID", "one", "PADDLE_TRAINER_ID='one' must be an integer"),
        ("PADDLE_PG_TIMEOUT", "0", "PADDLE_PG_TIMEOUT must be a positive"),
        ("FLAGS_nccl_nrings", "9", "FLAGS_nccl_nrings must be between 1 and 8"),
        ("FLAGS_selected_gpus", "gpu0", "FLAGS_selected_gpus must list device ids"),
    ],
)
def test_bad_values_name_the_variable(env, name, value, message):
    env.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        ParallelEnv()


def test_endpoints_shared_over_mpi_are_reported_without_touching_the_environment(env):
    env.setattr(env_module, "_mpi_endpoints", [])
    env.setenv("PMI_RANK", "1")
    env.setenv("PMI_SIZE", "2")
    assert ParallelEnv().trainer_endpoints == []
    record_mpi_endpoints(["10.0.0.1:6170", "10.0.0.2:6171"])
    shared = ParallelEnv()
    assert shared.trainer_endpoints == ["10.0.0.1:6170", "10.0.0.2:6171"]
    assert shared.current_endpoint == "10.0.0.2:6171"
    assert "PADDLE_TRAINER_ENDPOINTS" not in os.environ
    env.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1,127.0.0.1:2")
    assert ParallelEnv().trainer_endpoints == ["127.0.0.1:1", "127.0.0.1:2"], "variables win"


@pytest.mark.parametrize("visible, expected", [(1, 0), (2, 1), (4, 1)])
def test_mpi_local_rank_selects_a_device_modulo_the_visible_ones(env, visible, expected):
    """Under mpirun/srun with one visible GPU per rank, local rank 1 must take device 0."""
    env.setenv("OMPI_COMM_WORLD_RANK", "1")
    env.setenv("OMPI_COMM_WORLD_SIZE", "2")
    env.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    env.setattr(array_backend, "cuda_device_count", lambda: visible)
    assert ParallelEnv().device_id == expected
    env.setenv("FLAGS_selected_gpus", "3")  # named explicitly: taken as it is
    assert ParallelEnv().device_id == 3
