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
