"""minidp.distributed on Tensors: init_parallel_env, the collectives, groups, errors."""
import warnings

import numpy as np
import pytest

import minidp
import minidp.distributed as dist
from dist_utils import run_workers


def tensor_collectives_worker():
    group = dist.init_parallel_env()
    rank, size = dist.get_rank(), dist.get_world_size()
    report = {"group": (group.rank, group.world_size, group.ranks, group.backend),
              "initialized": dist.is_initialized(), "rank": rank, "size": size,
              "timeout": group.process_group.timeout}

    x = minidp.to_tensor(np.full([2, 3], rank + 1, "float32"))
    dist.all_reduce(x)
    report["sum"] = x.numpy().tolist()

    y = minidp.to_tensor(np.array([rank, -rank], "int64"))
    dist.all_reduce(y, op=dist.ReduceOp.MIN)
    report["min"] = y.numpy().tolist()

    transposed = minidp.to_tensor(np.arange(6.0).reshape(2, 3) * (rank + 1)).transpose([1, 0])
    dist.all_reduce(transposed, op=dist.ReduceOp.AVG)
    report["avg_of_view"] = transposed.numpy().tolist()

    b = minidp.to_tensor(np.full([4], rank, "float64"))
    dist.broadcast(b, src=size - 1)
    report["broadcast"] = b.numpy().tolist()

    fresh = []
    dist.all_gather(fresh, minidp.to_tensor(np.array([rank * 10.0, rank * 10.0 + 1])))
    report["gather_new"] = [t.numpy().tolist() for t in fresh]

    filled = [minidp.to_tensor(np.zeros([2], "float32")) for _ in range(size)]
    work = dist.all_gather(filled, minidp.to_tensor(np.array([rank, rank], "float32")),
                           sync_op=False)
    work.wait()
    report["gather_filled"] = [t.numpy().tolist() for t in filled]

    out = minidp.to_tensor(np.zeros([2], "float32"))
    parts = [minidp.to_tensor(np.full([2], 100 * k + rank, "float32")) for k in range(size)]
    dist.reduce_scatter(out, parts)
    report["reduce_scatter_list"] = out.numpy().tolist()
    whole = minidp.to_tensor(np.arange(2 * size, dtype="float32"))
    dist.reduce_scatter(out, whole, op=dist.ReduceOp.MAX)
    report["reduce_scatter_tensor"] = out.numpy().tolist()

    works = [dist.all_reduce(minidp.to_tensor(np.ones([1000])), sync_op=False) for _ in range(20)]
    report["async_done"] = all(w.wait() for w in works)

    token = minidp.to_tensor(np.zeros([3], "int32"))
    if rank == 0:
        dist.send(minidp.to_tensor(np.array([7, 8, 9], "int32")), dst=1)
    elif rank == 1:
        dist.recv(token, src=0)
    report["token"] = token.numpy().tolist()
    dist.barrier()
    dist.destroy_process_group()
    report["after_destroy"] = dist.is_initialized()
    return report


@pytest.mark.timeout(60)
def test_collectives_on_tensors_over_three_ranks():
    reports = run_workers(tensor_collectives_worker, 3, timeout=50,
                          env={"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "20000"})
    for rank, r in enumerate(reports):
        assert r["group"] == (rank, 3, [0, 1, 2], "gloo")
        assert r["initialized"] and (r["rank"], r["size"]) == (rank, 3)
        assert r["timeout"] == 20.0
        assert r["sum"] == [[6.0] * 3] * 2
        assert r["min"] == [0, -2]
        assert r["avg_of_view"] == (np.arange(6.0).reshape(2, 3).T * 2).tolist()
        assert r["broadcast"] == [2.0] * 4
        assert r["gather_new"] == [[0.0, 1.0], [10.0, 11.0], [20.0, 21.0]]
        assert r["gather_filled"] == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
        assert r["reduce_scatter_list"] == [300.0 * rank + 3] * 2
        assert r["reduce_scatter_tensor"] == [2.0 * rank, 2.0 * rank + 1]
        assert r["async_done"]
        assert r["after_destroy"] is False
    assert reports[1]["token"] == [7, 8, 9] and reports[2]["token"] == [0, 0, 0]


def subgroup_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    evens = dist.new_group([0, 2])
    everyone = dist.new_group(timeout=5)
    value = minidp.to_tensor(np.array([float(rank + 1)]))
    work = dist.all_reduce(value, group=evens)
    bcast = minidp.to_tensor(np.array([float(rank)]))
    dist.broadcast(bcast, src=2, group=evens)
    total = minidp.to_tensor(np.array([1.0]))
    dist.all_reduce(total, group=everyone)
    result = (evens.rank, dist.get_rank(evens), dist.get_world_size(evens), work is None,
              float(value.numpy()[0]), float(bcast.numpy()[0]), float(total.numpy()[0]),
              everyone.process_group.timeout, dist.get_group(evens.id) is evens)
    dist.destroy_process_group()
    # a second initialisation in the same processes works
    again = dist.init_parallel_env()
    check = minidp.to_tensor(np.array([1.0]))
    dist.all_reduce(check)
    dist.destroy_process_group()
    return result + (again.world_size, float(check.numpy()[0]))


@pytest.mark.timeout(60)
def test_new_group_subsets_and_reinitialisation():
    results = run_workers(subgroup_worker, 3, timeout=50, env={"PADDLE_DISTRI_BACKEND": "gloo"})
    assert results[0] == (0, 0, 2, False, 4.0, 2.0, 3.0, 5.0, True, 3, 3.0)
    assert results[1] == (-1, -1, 2, True, 2.0, 1.0, 3.0, 5.0, True, 3, 3.0)
    assert results[2] == (1, 1, 2, False, 4.0, 2.0, 3.0, 5.0, True, 3, 3.0)


def auto_backend_worker():
    group = dist.init_parallel_env()
    backend = group.backend
    dist.barrier()  # rank 0 hosts the store: it must not exit while rank 1 still uses it
    dist.destroy_process_group()
    return backend


@pytest.mark.timeout(60)
def test_auto_backend_is_gloo_without_gpu_or_mpi_launcher():
    assert run_workers(auto_backend_worker, 2, timeout=50, env={"PADDLE_DISTRI_BACKEND": "auto"}) \
        == ["gloo", "gloo"]


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS",
                 "PADDLE_CURRENT_ENDPOINT", "PADDLE_MASTER", "MASTER_ADDR", "MASTER_PORT",
                 "PADDLE_DISTRI_BACKEND", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


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


def test_collectives_need_initialisation_and_tensors(clean_env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.init_parallel_env()
    with pytest.raises(RuntimeError, match="init_parallel_env"):
        dist.all_reduce(minidp.to_tensor(np.ones(2)))
    with pytest.raises(RuntimeError, match="init_parallel_env"):
        dist.new_group([0])
    with pytest.raises(TypeError, match="group must be a Group"):
        dist.barrier(group="default")
