"""init_parallel_env (minidp.distributed.parallel): the backend it picks, the world of one
process, and the variables it needs, named when missing or wrong."""

import pytest

import minidp
import minidp.distributed as dist
from dist_utils import run_workers


def auto_backend_worker():
    group = dist.init_parallel_env()
    backend = group.backend
    dist.barrier()  # rank 0 hosts the store: it must not exit while rank 1 still uses it
    dist.destroy_process_group()
    return backend


@pytest.mark.timeout(60)
def test_auto_backend_is_gloo_without_gpu_or_mpi_launcher():
    assert run_workers(auto_backend_worker, 2, timeout=50, env={"PADDLE_DISTRI_BACKEND": "auto"}) == ["gloo", "gloo"]


def test_single_process_world_warns_and_returns_none(clean_env):
    with pytest.warns(UserWarning, match="single process"):
        assert dist.init_parallel_env() is None
    assert not dist.is_initialized()
    assert dist.get_rank() == 0 and dist.get_world_size() == 1


def test_missing_variables_are_named(clean_env):
    clean_env.setenv("PADDLE_TRAINERS_NUM", "2")
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID"):
        dist.init_parallel_env()
    clean_env.setenv("PADDLE_TRAINER_ID", "1")
    clean_env.setenv("PADDLE_DISTRI_BACKEND", "gloo")
    with pytest.raises(ValueError, match="MASTER_ADDR and MASTER_PORT, PADDLE_MASTER"):
        dist.init_parallel_env()
    clean_env.setenv("PADDLE_TRAINER_ID", "5")
    with pytest.raises(ValueError, match="rank 5 is outside a world of 2"):
        dist.init_parallel_env()


def test_backend_choice_errors(clean_env):
    clean_env.setenv("PADDLE_TRAINERS_NUM", "2")
    clean_env.setenv("PADDLE_TRAINER_ID", "0")
    clean_env.setenv("PADDLE_DISTRI_BACKEND", "nccl")
    if not minidp.is_compiled_with_cuda():
        with pytest.raises(RuntimeError, match="needs CUDA.*PADDLE_DISTRI_BACKEND=gloo"):
            dist.init_parallel_env()
    clean_env.setenv("PADDLE_DISTRI_BACKEND", "carrier-pigeon")
    with pytest.raises(ValueError, match="unknown communication backend 'carrier-pigeon'"):
        dist.init_parallel_env()


class MpiReached(Exception):
    """Stops init_parallel_env where it would share endpoints over MPI."""


def test_under_mpirun_nccl_selects_the_device_before_initialising_mpi(clean_env, caplog):
    """MPI_Init (importing mpi4py) may create a CUDA context on the current device in a
    CUDA-aware MPI: the rank's own GPU must be current by then, not GPU 0."""
    from minidp.core import backend as array_backend
    from minidp.core.distributed import parallel

    launcher = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}
    for name, value in launcher.items():
        clean_env.setenv(name, value)
    clean_env.setenv("PADDLE_DISTRI_BACKEND", "nccl")
    clean_env.setattr(array_backend, "cuda_device_count", lambda: 2)
    steps = []
    clean_env.setattr(array_backend, "set_device", steps.append)
    clean_env.setattr(parallel, "mpi4py_available", lambda: True)
    clean_env.setattr(parallel, "_abort_mpi_job_on_uncaught_exception", lambda: steps.append("MPI_Init"))

    def share_endpoints(env):
        raise MpiReached

    clean_env.setattr(parallel, "_share_endpoints_over_mpi", share_endpoints)
    with caplog.at_level("INFO", logger="minidp.distributed"), pytest.raises(MpiReached):
        dist.init_parallel_env()
    assert steps == ["gpu:1", "MPI_Init"]
    assert "rank 1 takes gpu:1 of the 2 it sees" in caplog.text
