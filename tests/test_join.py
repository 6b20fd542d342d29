"""DataParallel.join: uneven inputs across ranks, and the warning for a peer that stopped.

With ``join()``, ranks that train different numbers of batches (2 and 3 ranks) must end with
the parameters one process reaches training, each step, on the union of the batches of the
ranks still training (``divide_by_initial_world_size=False``), or on that union with the
step's gradient scaled by contributors / world size (the default, PyTorch's). Without it, the
rank left waiting warns, naming the peer, and fails at the group timeout.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import minidp
from dist_utils import run_workers
from minidp.distributed.backends.base import stall_warning_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
import join_tasks  # noqa: E402  (lives in tests/scripts)

GLOO = {"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "30000"}


@pytest.mark.parametrize("counts", [join_tasks.UNEVEN, (2, 4, 1), (0, 2)],
                         ids=lambda counts: "batches" + "-".join(map(str, counts)))
@pytest.mark.parametrize("divide_by_initial_world_size", [False, True])
def test_join_matches_training_on_the_union_of_batches(counts, divide_by_initial_world_size):
    results = run_workers(join_tasks.join_worker, len(counts),
                          args=(list(counts), divide_by_initial_world_size), env=GLOO)
    expected = join_tasks.train_reference(counts, divide_by_initial_world_size)
    other = join_tasks.train_reference(counts, not divide_by_initial_world_size)
    for rank, result in enumerate(results):
        assert result.keys() == expected.keys()
        for name, value in expected.items():
            np.testing.assert_allclose(result[name], value, rtol=1e-5, atol=1e-6,
                                       err_msg=f"rank {rank}, {name}")
    assert any(not np.allclose(expected[n], other[n], atol=1e-4) for n in expected), \
        "the two divisions should end apart, or the test cannot tell them apart"


def test_join_with_no_sync_accumulation():
    counts = (1, 3, 2)
    results = run_workers(join_tasks.join_no_sync_worker, len(counts), args=(list(counts), 2),
                          env=GLOO)
    expected = join_tasks.train_reference(counts, False, accumulate=2)
    for rank, result in enumerate(results):
        for name, value in expected.items():
            np.testing.assert_allclose(result[name], value, rtol=1e-5, atol=1e-6,
                                       err_msg=f"rank {rank}, {name}")


def test_join_throw_on_early_termination_raises_on_every_rank():
    messages = run_workers(join_tasks.throw_worker, 2, env=GLOO)
    for message in messages:
        assert "1 of 2 ranks ran out of data" in message
        assert "throw_on_early_termination" in message


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_without_join_the_waiting_rank_warns_naming_the_peer_then_times_out(transport):
    env = {**GLOO, "PADDLE_PG_TIMEOUT": "4000", "MINIDP_STALL_WARNING_SECONDS": "1",
           "MINIDP_TRANSPORT": transport}
    results = run_workers(join_tasks.stalled_worker, 2, env=env)
    waiting = results[0]
    stalls = [w for w in waiting["warnings"] if "has waited" in w]
    assert len(stalls) == 1, waiting["warnings"]
    assert "rank 1" in stalls[0] and "stopped calling collectives" in stalls[0]
    assert "timed out waiting for rank 1" in waiting["error"]
    assert 3.5 < waiting["seconds"] < 8
    assert results[1]["warnings"] == []


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_stall_warning_interval_must_be_a_positive_number(monkeypatch, value):
    monkeypatch.setenv("MINIDP_STALL_WARNING_SECONDS", value)
    with pytest.raises(ValueError, match="MINIDP_STALL_WARNING_SECONDS"):
        stall_warning_seconds()


def test_stall_warning_interval_default_and_override(monkeypatch):
    monkeypatch.delenv("MINIDP_STALL_WARNING_SECONDS", raising=False)
    assert stall_warning_seconds() == 60.0
    monkeypatch.setenv("MINIDP_STALL_WARNING_SECONDS", "2.5")
    assert stall_warning_seconds() == 2.5


def test_join_on_one_process_is_a_plain_block():
    with pytest.warns(UserWarning, match="not initialised"):
        model = minidp.DataParallel(join_tasks.build_model())
    optimizer = minidp.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    with model.join():
        x, y = join_tasks.batch(0, 0)
        loss = ((model(minidp.to_tensor(x)) - minidp.to_tensor(y)) ** 2).mean()
        loss.backward()
        optimizer.step()
    reference = join_tasks.train_reference([1], divide_by_initial_world_size=False)
    for name, value in join_tasks.state(model._layers).items():
        np.testing.assert_allclose(value, reference[name], rtol=1e-6, atol=1e-7)
