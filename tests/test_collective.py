"""minidp.distributed's collectives (``collective.py`` and its neighbours ``rooted``,
``all_to_all``, ``object_collectives``, ``p2p`` and ``stream``) on Tensors in real processes:
the collectives, groups and errors, then Paddle's documented examples of the collectives,
objects, point-to-point and stream functions, on 2 and 3 gloo ranks and on 2 mpi ranks under
mpiexec.

One job per world size runs every example (worker code in ``scripts/collective_examples.py``);
the tests here compute what each rank must have seen. On two ranks the inputs are the
documented ones, and the expectations below equal the documented outputs.
"""

import json
import math
import warnings
from functools import lru_cache

import numpy as np
import pytest

import minidp
import minidp.distributed as dist
from dist_utils import run_mpiexec, run_workers

import collective_examples


def tensor_collectives_worker():
    group = dist.init_parallel_env()
    rank, size = dist.get_rank(), dist.get_world_size()
    report = {
        "group": (group.rank, group.world_size, group.ranks, group.backend),
        "initialized": dist.is_initialized(),
        "rank": rank,
        "size": size,
        "timeout": group.process_group.timeout,
    }

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
    work = dist.all_gather(filled, minidp.to_tensor(np.array([rank, rank], "float32")), sync_op=False)
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
    reports = run_workers(
        tensor_collectives_worker, 3, timeout=50, env={"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "20000"}
    )
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
    result = (
        evens.rank,
        dist.get_rank(evens),
        dist.get_world_size(evens),
        work is None,
        float(value.numpy()[0]),
        float(bcast.numpy()[0]),
        float(total.numpy()[0]),
        everyone.process_group.timeout,
        dist.get_group(evens.id) is evens,
    )
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


def test_collectives_need_initialisation_and_tensors(clean_env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.init_parallel_env()
    with pytest.raises(RuntimeError, match="single-process run"):
        dist.all_reduce(minidp.to_tensor(np.ones(2)))
    with pytest.raises(RuntimeError, match="single-process run"):
        dist.new_group([0])
    with pytest.raises(TypeError, match="group must be a Group"):
        dist.barrier(group="default")


# ---------------------------------------------------------------------------------------------
# Paddle's documented examples
# ---------------------------------------------------------------------------------------------

REDUCERS = {"SUM": np.add, "MAX": np.maximum, "MIN": np.minimum, "PROD": np.multiply}


def plain(report):
    """The report as the JSON the mpi runs write (tuples become lists), for one way to compare."""
    return json.loads(json.dumps(report, default=repr))


@lru_cache(maxsize=None)
def gloo_reports(world_size):
    reports = run_workers(
        collective_examples.examples_worker,
        world_size,
        timeout=150,
        env={"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "20000"},
    )
    return tuple(plain(r) for r in reports)


def reduce_expected(values, op, dtype):
    """What reducing ``values`` (one array per rank) with ``op`` gives, as Paddle computes it."""
    stacked = np.array(values, dtype)
    if op == "AVG":
        total = stacked.sum(axis=0)
        return (total / len(values) if dtype == "float64" else np.trunc(total / len(values)).astype(dtype)).tolist()
    return REDUCERS[op].reduce(stacked, axis=0).tolist()


def block(source, k, n):
    return (np.arange(1, 7) + 6 * (source * n + k)).reshape(2, 3).tolist()


def check_doc_examples(r, rank, n):
    ones_to_three = [[1, 2, 3], [1, 2, 3]]
    if rank == 0:
        assert r["reduce"] == [[4 + n - 1, 5 + 2 * (n - 1), 6 + 3 * (n - 1)]] * 2
    else:
        assert r["reduce"] == ones_to_three
    assert r["scatter"] == [[1 + 3 * rank, 2 + 3 * rank, 3 + 3 * rank], [4, 5, 6] if rank == 1 else [10, 11, 12]]
    every = [[1 + 3 * j, 2 + 3 * j, 3 + 3 * j] for j in range(n)]
    assert r["gather"] == (every if rank == 0 else [])
    assert r["alltoall"] == [block(j, rank, n) for j in range(n)]
    if n == 2:
        assert r["alltoall_unequal"] == (
            [[[1, 2, 3], [4, 5, 6]], [[8, 9], [10, 11], [12, 13]]] if rank == 0 else [[7], [[14, 15, 16, 17]]]
        )
    else:
        assert r["alltoall_unequal"] == [np.full([j + 1, rank + 1], 10 * j + rank).tolist() for j in range(n)]
    assert r["alltoall_single"] == [j * n + rank for j in range(n)]
    assert r["alltoall_in_place"] == [r["alltoall_single"], r["alltoall"]]
    assert r["alltoall_single_split"] == [[float(j)] * n for j in range(n) for _ in range(rank + 1)]
    assert r["all_gather_object"] == [{"foo": [1, 2, 3]}] + [{"bar": [4, 5, 6]}] * (n - 1)
    assert r["all_gather_object_appends"] == ["kept", *range(n)]
    assert r["broadcast_object_list"] == [{"bar": [4, 5, 6]}]
    assert r["scatter_object_list"] == [{"bar": [1 + 3 * rank, 2 + 3 * rank, 3 + 3 * rank]}]
    assert r["send_object_list"] == ["hello", {"key": 100}, [1, 2, 3]]
    assert r["isend_irecv"] == [[True] * (n - 1 if rank == 0 else 1), [7, 8, 9]]
    left = (rank - 1) % n
    assert r["batch_isend_irecv"] == [[True, True], [left, left + 1]]
    assert r["wait"] is None
    assert r["is_available"] is True and r["parallel_mode"] == 0
    assert r["get_group"] == [True, list(range(n)), n - 1]
    if rank == n - 1:
        assert r["object_list_in_group"] == [["to", n - 1], None]


def check_stream_examples(r, rank, n):
    data = [[[4, 5, 6], [4, 5, 6]]] + [[[1, 2, 3], [1, 2, 3]]] * (n - 1)
    assert r["stream.all_gather"] == data
    assert r["stream.all_gather_tensor"] == [row for rows in data for row in rows]
    assert r["stream.all_reduce"] == [[4 + n - 1, 5 + 2 * (n - 1), 6 + 3 * (n - 1)]] * 2
    assert r["stream.alltoall"] == [row for j in range(n) for row in block(j, rank, n)]
    assert r["stream.alltoall_single"] == [j * n + rank for j in range(n)]
    assert r["stream.alltoall_single_split"] == [[float(j)] * n for j in range(n) for _ in range(rank + 1)]
    assert r["stream.broadcast"] == [[1, 2, 3], [1, 2, 3]]
    assert r["stream.reduce"] == (r["stream.all_reduce"] if rank == 0 else [[1, 2, 3]] * 2)
    expected = [sum(4 * j + 2 * rank for j in range(n)), sum(4 * j + 2 * rank + 1 for j in range(n))]
    assert r["stream.reduce_scatter"] == expected
    assert r["reduce_scatter_tensor"] == expected
    assert r["stream.send_recv"] == [[4, 5, 6], [4, 5, 6]]
    assert r["stream.scatter"] == r["scatter_tensor"] == [1 + 3 * rank, 2 + 3 * rank, 3 + 3 * rank]
    every = [[1 + 3 * j, 2 + 3 * j, 3 + 3 * j] for j in range(n)]
    assert r["stream.gather"] == (every if rank == 0 else [])
    assert r["stream.use_calc_stream_async"].startswith(
        "ValueError: stream.all_reduce: use_calc_stream=True needs sync_op=True"
    )


def check_reduce_ops(r, rank, n):
    for op in ("SUM", "MAX", "MIN", "PROD", "AVG"):
        for dtype in ("float64", "int64"):
            values = [[j + 1, -(j + 2), 3 * j - 1] for j in range(n)]
            completed, got = r[f"reduce.{op}.{dtype}"]
            assert completed is True
            assert got == (
                reduce_expected(values, op, dtype) if rank == n - 1 else np.array(values[rank], dtype).tolist()
            ), (op, dtype)
            blocks = [[j + rank + 1, -(j * rank) - 1] for j in range(n)]
            assert r[f"reduce_scatter.{op}.{dtype}"] == reduce_expected(blocks, op, dtype)


def check_exchanges(r, rank, n):
    low, high, seconds = r["ring_large"]
    assert low == high == float((rank - 1) % n)
    assert r["batch_all_peers"] == list(range(n))
    got_bits, want_bits = r["scatter_bits"]
    assert got_bits == want_bits
    completed, gathered = r["async_gather"]
    assert completed is True
    assert gathered == ([[float(j), -float(j)] for j in range(n)] if rank == n - 1 else [[0.0, 0.0]] * n)
    assert r["async_all_reduce"] == [float(sum(range(n)))]
    for j, row in enumerate(r["rich_objects"]):
        assert row == [
            [1, "a", None],
            "00ff",
            [1.5, math.inf],
            [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
            "float32",
            "float16",
            2.5,
            [1.0, 2.0],
            False,
            2**80,
            j,
        ]


def check_errors(r, rank, n):
    errors = r["errors"]
    assert errors["reduce_dst_out_of_range"].startswith(f"ValueError: dst={n} is not a member")
    assert errors["broadcast_src_negative"].startswith("ValueError: src=-1 is not a member")
    assert errors["scatter_src_not_int"] == "TypeError: src must be an int job rank, got str"
    assert errors["all_gather_wrong_length"].startswith(f"ValueError: all_gather tensor_list must hold {n} tensors")
    assert errors["reduce_scatter_mismatched"].startswith(
        f"ValueError: reduce_scatter tensor_list[{n - 1}] has shape [2] and dtype int64"
    )
    assert errors["alltoall_wrong_length"].startswith(f"ValueError: alltoall in_tensor_list must hold {n} tensors")
    assert errors["alltoall_mixed_dtypes"].startswith(f"ValueError: alltoall in_tensor_list[{n - 1}] has dtype int64")
    assert "add up to" in errors["alltoall_single_bad_split"]
    assert errors["p2pop_bad_op"].startswith(
        "ValueError: P2POp op must be minidp.distributed.isend or minidp.distributed.irecv"
    )
    assert errors["batch_empty"].startswith("ValueError: batch_isend_irecv needs a non-empty list")
    assert errors["object_list_not_list"] == ("TypeError: all_gather_object: object_list must be a list, got tuple")
    assert errors["send_object_list_empty"].startswith(
        "ValueError: send_object_list: object_list must be a non-empty list"
    )
    assert errors["send_object_list_both_dst"] == ("ValueError: send_object_list: pass dst or dst_in_group, not both")
    assert r["scatter_wrong_length"].startswith("ValueError: scatter tensor_list must hold 1 tensor")
    assert r["gather_wrong_shape"].startswith("ValueError: gather gather_list[0] has shape [2]")
    assert r["scatter_no_list"].startswith("ValueError: scatter: the src rank must pass tensor_list")
    if rank == 0:
        assert r["unsendable_object"].startswith("TypeError: cannot send an object of type builtins.set")
        assert "set_object_serializer('pickle')" in r["unsendable_object"]
        assert r["pickle_refused"] == r["length_mismatch"] == "no error"
        assert r["timeout"].startswith("PeerFailedError: ") and "timed out waiting for rank 1" in r["timeout"]
        assert 1.5 < r["timeout_seconds"] < 10
    else:
        assert r["unsendable_object"] == (
            "RuntimeError: all_gather_object: rank 0 could not encode its objects (see the error on that rank)"
        )
        assert r["pickle_refused"].startswith("ValueError: rank 0 sent a pickled object, which this rank refuses")
        assert r["length_mismatch"].startswith(
            "ValueError: broadcast_object_list: rank 0 sent 2 objects but object_list here has 1 entries"
        )
    assert r["pickle_opt_in"] == [1, 2]


CHECKS = [check_doc_examples, check_stream_examples, check_reduce_ops, check_exchanges, check_errors]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__[len("check_") :])
def test_paddle_examples_on_gloo(world_size, check):
    reports = gloo_reports(world_size)
    for rank, report in enumerate(reports):
        assert (report["rank"], report["world_size"]) == (rank, world_size)
        check(report, rank, world_size)
        assert report["get_backend"] == "GLOO"
        assert report["destroy"] == [True, False]


def test_two_rank_outputs_are_the_documented_ones():
    """The documented printouts of Paddle's examples, literally (2 ranks)."""
    first, second = gloo_reports(2)
    assert first["reduce"] == [[5, 7, 9], [5, 7, 9]] and second["reduce"] == [[1, 2, 3], [1, 2, 3]]
    assert first["scatter"] == [[1, 2, 3], [10, 11, 12]]
    assert second["scatter"] == [[4, 5, 6], [4, 5, 6]]
    assert first["gather"] == [[1, 2, 3], [4, 5, 6]] and second["gather"] == []
    assert first["alltoall"] == [[[1, 2, 3], [4, 5, 6]], [[13, 14, 15], [16, 17, 18]]]
    assert second["alltoall"] == [[[7, 8, 9], [10, 11, 12]], [[19, 20, 21], [22, 23, 24]]]
    assert first["alltoall_single"] == [0, 2] and second["alltoall_single"] == [1, 3]
    assert first["alltoall_single_split"] == [[0.0, 0.0], [1.0, 1.0]]
    assert second["alltoall_single_split"] == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    assert first["all_gather_object"] == [{"foo": [1, 2, 3]}, {"bar": [4, 5, 6]}]
    assert first["scatter_object_list"] == [{"bar": [1, 2, 3]}]
    assert second["scatter_object_list"] == [{"bar": [4, 5, 6]}]
    assert first["batch_isend_irecv"][1] == [1, 2] and second["batch_isend_irecv"][1] == [0, 1]
    assert first["stream.reduce_scatter"] == [4, 6] and second["stream.reduce_scatter"] == [8, 10]


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_paddle_examples_on_two_mpi_ranks(tmp_path):
    run_mpiexec(collective_examples.__file__, [str(tmp_path)], timeout=200, env={"PADDLE_PG_TIMEOUT": "20000"})
    for rank in range(2):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert report["get_backend"] == "MPI"
        for check in CHECKS:
            check(report, rank, 2)
