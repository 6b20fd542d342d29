"""fleet.init / distributed_model / distributed_optimizer (minidp/distributed/fleet/fleet_base.py):
the collective fleet API of Paddle's data-parallel docs, on 2 real gloo ranks."""

import numpy as np
import pytest

import fleet_tasks
import minidp
import minidp.nn as nn
from dist_utils import run_workers
from minidp.distributed import fleet
from minidp.distributed.fleet import fleet_base


@pytest.mark.timeout(120)
def test_fleet_trains_data_parallel_on_two_ranks():
    results = run_workers(fleet_tasks.fleet_step, 2, args=(2,), timeout=90, env={"PADDLE_DISTRI_BACKEND": "gloo"})
    assert [(r["index"], r["num"], r["first"]) for r in results] == [(0, 2, True), (1, 2, False)]
    assert all(r["wrapped"] == "DataParallel" and r["same_optimizer"] == "SGD" for r in results)
    assert results[0]["bucket"] == 2 * 1024 * 1024
    expected = fleet_tasks.expected_update(results[0]["initial"])
    for r in results:
        np.testing.assert_allclose(r["updated"], expected, rtol=1e-6)


def test_single_process_fleet_returns_the_model_itself(clean_env, monkeypatch):
    monkeypatch.setattr(fleet_base, "_strategy", None)
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="fleet.init"):
        fleet.distributed_model(model)
    fleet.init(is_collective=True)
    assert fleet.distributed_model(model) is model
    optimizer = minidp.optimizer.SGD(parameters=model.parameters())
    assert fleet.distributed_optimizer(optimizer) is optimizer
    assert (fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()) == (0, 1, True)
    fleet.barrier_worker()


def test_what_minidp_does_not_do_is_refused(monkeypatch):
    monkeypatch.setattr(fleet_base, "_strategy", None)
    with pytest.raises(ValueError, match="is_collective=True"):
        fleet.init()
    strategy = fleet.DistributedStrategy()
    with pytest.raises(ValueError, match="data parallel only"):
        strategy.hybrid_configs = {"dp_degree": 1, "mp_degree": 2}
    with pytest.raises(ValueError, match="unknown keys"):
        strategy.hybrid_configs = {"ep_degree": 2}
    with pytest.raises(ValueError, match="amp"):
        strategy.amp = True
    strategy.amp = False
    with pytest.raises(TypeError, match="DistributedStrategy"):
        fleet.init(is_collective=True, strategy={"dp_degree": 2})
