"""minidp.amp.GradScaler against Paddle 3.3.1's scale sequences (tests/fixtures/paddle_amp.json,
recorded by tools/record_paddle_amp.py), and on 2 real ranks where only one overflows."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import minidp
from dist_utils import run_workers

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_amp.json").read_text())
SCALER = FIXTURE["scaler"]


def _enter_float16_auto_cast():
    """GradScaler.scale reads the dtype of the last auto_cast entered, as Paddle's does."""
    with minidp.amp.auto_cast(dtype="float16"):
        pass


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("case", sorted(SCALER["cases"]))
def test_scale_sequence_skips_and_state_dict_match_paddle(case):
    recorded = SCALER["cases"][case]
    _enter_float16_auto_cast()
    minidp.seed(0)
    layer = minidp.nn.Linear(3, 2)
    opt = minidp.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = minidp.amp.GradScaler(**recorded["kwargs"])
    x = minidp.to_tensor(np.arange(6, dtype="float32").reshape(2, 3) / 6)
    scales, found, updated = [], [], []
    printed = io.StringIO()
    for step in range(SCALER["steps"]):
        before = layer.weight.numpy().copy()
        loss = layer(x).mean()
        if step in SCALER["inf_steps"]:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        with contextlib.redirect_stdout(printed):
            scaler.update()
        opt.clear_grad()
        scales.append(float(scaler._scale.numpy()[0]))
        found.append(bool(scaler._cache_found_inf))
        updated.append(not np.array_equal(before, layer.weight.numpy()))
    assert scales == recorded["scales"]
    assert found == recorded["found_inf"]
    assert updated == recorded["updated"]
    assert printed.getvalue().splitlines() == recorded["printed"]
    state = scaler.state_dict()
    assert state["scale"].dtype == np.float32 and state["scale"].shape == (1,)
    assert {**state, "scale": state["scale"].tolist()} == recorded["state_dict"]
    restored = minidp.amp.GradScaler()
    restored.load_state_dict(state)
    assert restored.state_dict()["scale"].tolist() == recorded["state_dict"]["scale"]
    assert restored.get_incr_every_n_steps() == recorded["kwargs"].get("incr_every_n_steps", 2000)


def test_unscale_then_step_divides_gradients_once_and_minimize_updates():
    _enter_float16_auto_cast()
    layer = minidp.nn.Linear(2, 1)
    opt = minidp.optimizer.SGD(learning_rate=0.0, parameters=layer.parameters())
    scaler = minidp.amp.GradScaler(init_loss_scaling=8.0, incr_every_n_steps=1)
    scaler.scale(layer(minidp.ones([1, 2])).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.ones((2, 1)))
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step"):
        scaler.step(opt)
    scaler.update()
    assert scaler.state_dict()["scale"].tolist() == [16.0]
    opt.clear_grad()
    scaled = scaler.scale(layer(minidp.ones([1, 2])).sum())
    scaled.backward()
    scaler.minimize(opt, scaled)
    assert scaler.state_dict()["scale"].tolist() == [32.0]


def test_settings_disabled_scaler_and_bad_arguments():
    scaler = minidp.amp.GradScaler(init_loss_scaling=1024, incr_ratio=3.0, decr_ratio=0.25)
    assert scaler.is_enable() and scaler.is_use_dynamic_loss_scaling()
    assert (scaler.get_init_loss_scaling(), scaler.get_incr_ratio(), scaler.get_decr_ratio()) == (1024, 3.0, 0.25)
    scaler.set_init_loss_scaling(64)
    scaler.set_decr_every_n_nan_or_inf(3)
    assert scaler.state_dict()["scale"].tolist() == [64.0] and scaler.get_decr_every_n_nan_or_inf() == 3
    with pytest.raises(ValueError, match="incr_ratio"):
        scaler.set_incr_ratio(1.0)
    with pytest.raises(ValueError, match="decr_ratio"):
        minidp.amp.GradScaler(decr_ratio=1.5)
    with pytest.raises(TypeError, match="var"):
        scaler.scale(3.0)
    off = minidp.amp.GradScaler(enable=False)
    loss = minidp.ones([])
    assert off.scale(loss) is loss and off.state_dict() == {} == FIXTURE["cpu"]["scaler_state_dict"]
    with pytest.raises(RuntimeError, match="empty"):
        minidp.amp.GradScaler().load_state_dict({})


def test_scale_turns_dynamic_scaling_off_after_a_bfloat16_auto_cast():
    with minidp.amp.auto_cast(dtype="bfloat16"):
        pass
    scaler = minidp.amp.GradScaler()
    loss = minidp.ones([])
    with pytest.warns(UserWarning, match="bfloat16"):
        assert scaler.scale(loss) is loss
    assert not scaler.is_enable() and scaler.get_init_loss_scaling() == 1.0
    _enter_float16_auto_cast()


def _rank_overflows():
    """One rank's batch overflows float16; both must skip that step and scale down alike, with
    DataParallel and with a separate model per rank (where only the found-inf all-reduce agrees)."""
    import minidp.distributed as dist

    dist.init_parallel_env()
    return {mode: _train(dist.get_rank(), mode == "data_parallel") for mode in ("data_parallel", "separate_models")}


def _train(rank, use_data_parallel):
    import numpy as np

    import minidp

    minidp.seed(1)
    layer = minidp.nn.Linear(2, 1)
    model = minidp.DataParallel(layer) if use_data_parallel else layer
    opt = minidp.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = minidp.amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2)
    history = []
    for step in range(4):
        big = 1e5 if (step == 1 and rank == 1) else 1.0
        x = minidp.to_tensor(np.full((2, 2), big, dtype="float32"))
        with minidp.amp.auto_cast(dtype="float16"):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.clear_grad()
        history.append((bool(scaler._cache_found_inf), float(scaler._scale.numpy()[0])))
    return history, layer.weight.numpy().tolist()


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_agree_on_found_inf(world_size):
    ranks = run_workers(_rank_overflows, world_size, timeout=60)
    for mode in ("data_parallel", "separate_models"):
        history = ranks[0][mode][0]
        assert all(rank[mode][0] == history for rank in ranks), mode
        assert [found for found, _ in history] == [False, True, False, False], mode
        assert [scale for _, scale in history] == [1024.0, 512.0, 512.0, 1024.0], mode
    assert all(rank["data_parallel"][1] == ranks[0]["data_parallel"][1] for rank in ranks)
