"""Sharded data parallelism (minidp/distributed/sharding/): group_sharded_parallel's levels os,
os_g and p_g_os against plain DataParallel on 2 and 3 real gloo ranks, the memory each rank
holds, no_sync, checkpoints between sharded and plain runs, a rank dying mid-step, fleet's
strategy.sharding, and the pure layout function."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import minidp
import minidp.optimizer as optim
from dist_utils import run_workers, run_workers_outcomes
from minidp.distributed.sharding import group_sharded_parallel, save_group_sharded_model
from minidp.distributed.sharding.layout import Piece, block_size, pieces_of, stand_in
from minidp.distributed.sharding.storage import ReleasableBuffer

import sharding_tasks
from sharding_tasks import LEVELS

GLOO = {"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "30000"}
STEPS = 3


@lru_cache(maxsize=None)
def equivalence(world_size: int) -> list:
    return run_workers(sharding_tasks.equivalence_worker, world_size, args=(STEPS,), timeout=120, env=GLOO)


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
@pytest.mark.parametrize("level", LEVELS)
def test_each_level_trains_as_data_parallel(world_size, optimizer, level):
    reports = equivalence(world_size)
    reference = reports[0][f"dp/{optimizer}"]
    for report in reports:  # every rank ends with the same whole parameters
        got = report[f"{level}/{optimizer}"]
        assert max_difference(got, reports[0][f"{level}/{optimizer}"]) == 0
    got = reports[0][f"{level}/{optimizer}"]
    if world_size == 2 or level == "os":
        # os all-reduces as DataParallel does; with 2 ranks a + b == b + a, so the
        # reduce-scatter's sums are DataParallel's too: bit for bit
        assert max_difference(got, reference) == 0
    else:
        # with 3 ranks the reduce-scatter adds the ranks' gradients in another order than the
        # all-reduce's ring for some elements: a float32 rounding apart
        np.testing.assert_allclose(
            np.concatenate([v.ravel() for v in got.values()]),
            np.concatenate([v.ravel() for v in reference.values()]),
            rtol=1e-5,
            atol=1e-6,
        )


@pytest.mark.timeout(150)
@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("level", LEVELS)
def test_each_level_holds_its_share_of_the_memory(world_size, level):
    reports = equivalence(world_size)
    for optimizer in ("momentum", "adam"):
        dp = [r[f"dp/{optimizer}/bytes"] for r in reports]
        mine = [r[f"{level}/{optimizer}/bytes"] for r in reports]
        whole = dp[0]
        # optimizer state: every element's state on exactly one rank
        assert sum(m["state"] for m in mine) == whole["state"]
        assert max(m["state"] for m in mine) <= whole["state"] / world_size + 4 * 16
        if level == "os":
            assert all(m["grads"] == whole["grads"] and m["params"] >= whole["params"] for m in mine)
            continue
        # gradients: only this rank's block of each bucket (padded to the group size)
        assert all(m["grads"] <= whole["grads"] / world_size + 4 * 16 for m in mine)
        if level == "p_g_os":  # parameters too: every layer here is sharded (segment_size=1)
            assert all(m["params"] <= whole["params"] / world_size + 4 * 16 for m in mine)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("world_size", [2, 3])
def test_p_g_os_frees_each_units_parameters_between_its_forward_and_its_backward(world_size):
    for report in equivalence(world_size):
        for optimizer in ("momentum", "adam"):
            counts = report[f"p_g_os/{optimizer}/units"]
            assert counts["units"] == 4  # fc1, fc2, head and the model's own scale
            # only the shard is left after forward; backward gathers a unit again (and the
            # one it reaches next), and releases it once its gradients are ready
            assert counts["after_forward"] == 0
            assert 1 <= counts["most_in_backward"] <= 2
            assert counts["after_backward"] == 0


@pytest.mark.timeout(120)
def test_no_sync_accumulates_as_data_parallel():
    report = run_workers(sharding_tasks.no_sync_worker, 2, timeout=90, env=GLOO)[0]
    for level in LEVELS:
        assert max_difference(report[level], report["dp"]) == 0, level


@pytest.mark.timeout(120)
def test_checkpoints_go_between_sharded_and_plain_runs(tmp_path):
    report = run_workers(sharding_tasks.checkpoint_worker, 2, args=(str(tmp_path),), timeout=90, env=GLOO)[0]
    for level in LEVELS:
        reference = report[f"{level}/reference"]
        for resumed in ("sharded_resumed", "plain_resumed", "wrapped_after_load"):
            assert max_difference(report[f"{level}/{resumed}"], reference) == 0, (level, resumed)
    assert sorted(p.name for p in (tmp_path / "os_g").iterdir()) == ["model.pdmodel", "model.pdopt"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("level", ["os_g", "p_g_os"])
def test_a_rank_killed_mid_step_stops_the_job(level):
    outcomes = run_workers_outcomes(sharding_tasks.killed_worker, 2, args=(level,), timeout=60, env=GLOO)
    assert not outcomes[1].ok and outcomes[1].exitcode == 17
    assert not outcomes[0].ok
    # a RuntimeError: from a wait, or a PeerFailedError (its subclass) from a gather in backward
    assert "rank 1" in outcomes[0].error
    assert "RuntimeError" in outcomes[0].error or "PeerFailedError" in outcomes[0].error


@pytest.mark.timeout(120)
def test_fleet_strategy_sharding_routes_to_group_sharded():
    report = run_workers(sharding_tasks.fleet_worker, 2, args=(2,), timeout=90, env=GLOO)[0]
    assert report["level"] == "os_g"
    assert max_difference(report["fleet"], report["dp"]) == 0


def test_fleet_strategy_reads_paddles_sharding_configs():
    from minidp.distributed import fleet

    strategy = fleet.DistributedStrategy()
    assert strategy.sharding_level(2) is None
    strategy.sharding = True
    assert strategy.sharding_configs["stage"] == 1 and strategy.sharding_level(4) == "os"
    strategy.sharding_configs = {"stage": 3}
    assert strategy.sharding_level(2) == "p_g_os"
    strategy.sharding_configs = {"sharding_degree": 2}
    with pytest.raises(ValueError, match="sharding_degree=3"):
        strategy.sharding_level(3)
    with pytest.raises(ValueError, match="stage must be 1, 2 or 3"):
        strategy.sharding_configs = {"stage": 4}
    with pytest.raises(ValueError, match="unknown keys"):
        strategy.sharding_configs = {"stages": 2}
    hybrid = fleet.DistributedStrategy()
    hybrid.hybrid_configs = {"sharding_degree": 2}
    assert hybrid.sharding_level(2) == "os"


@pytest.mark.parametrize(
    "sizes, ranks, reserved, expected",
    [
        # 12 elements + 1 reserved, 3 ranks: blocks of 5; the second entry straddles blocks 0-1
        ([5, 3, 4], 3, 1, [[Piece(0, 0, 5, 0)], [Piece(1, 0, 3, 0), Piece(2, 0, 2, 3)], [Piece(2, 2, 4, 0)]]),
        # one entry larger than a block, cut in two
        ([10], 2, 0, [[Piece(0, 0, 5, 0)], [Piece(0, 5, 10, 0)]]),
        # fewer elements than ranks: the last rank holds padding only
        ([1, 1], 3, 0, [[Piece(0, 0, 1, 0)], [Piece(1, 0, 1, 0)], []]),
    ],
)
def test_pieces_cover_every_element_once(sizes, ranks, reserved, expected):
    assert [pieces_of(sizes, ranks, r, reserved) for r in range(ranks)] == expected
    assert block_size(sum(sizes) + reserved, ranks) * ranks >= sum(sizes) + reserved


def test_a_releasable_buffer_gives_its_memory_back_while_views_stay_valid():
    import tracemalloc

    buffer = ReleasableBuffer(1 << 18, "float32")  # 1 MiB
    view = buffer.array[10:20].reshape(2, 5)  # what the tape would keep
    tracemalloc.start()
    try:
        buffer.hold()
        buffer.array[...] = 3.0
        held = tracemalloc.get_traced_memory()[0]
        buffer.release()
        released = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert abs(held - released - (1 << 20)) < 1024  # tracemalloc counts it while held
    assert not buffer.held and not view.any()  # the view reads zeros: the pages went back
    buffer.hold()
    buffer.array[...] = 2.0  # a gather writes it again: the same view sees the values
    assert (view == 2.0).all()
    buffer.release()


def test_a_released_parameter_keeps_its_shape_and_refuses_writes():
    held = stand_in(np.ones((3, 4), "float32"))
    assert held.shape == (3, 4) and held.dtype == np.float32 and held.strides == (0, 0)
    with pytest.raises(ValueError):
        held[0, 0] = 1.0


def test_bad_arguments_are_refused():
    model = minidp.nn.Linear(2, 2)
    adam = optim.Adam(parameters=model.parameters())
    with pytest.raises(ValueError, match="level must be one of"):
        group_sharded_parallel(model, adam, "p_g")
    with pytest.raises(TypeError, match="minidp.nn.Layer"):
        group_sharded_parallel("model", adam, "os")
    with pytest.raises(ValueError, match="Lamb needs whole parameters"):
        group_sharded_parallel(model, optim.Lamb(parameters=model.parameters()), "os")
    with pytest.raises(ValueError, match="dp_group"):
        group_sharded_parallel(model, adam, "os", dp_group=object())
    with pytest.raises(ValueError, match="segment_size must be a positive"):
        group_sharded_parallel(model, adam, "p_g_os", segment_size=0)
    with pytest.raises(ValueError, match="ClipGradByNorm"):
        clipped = optim.Adam(parameters=model.parameters(), grad_clip=minidp.nn.ClipGradByNorm(1.0))
        group_sharded_parallel(model, clipped, "os")
    with pytest.raises(ValueError, match="group_sharded_parallel returned"):
        save_group_sharded_model(model, "unused")
