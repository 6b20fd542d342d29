"""The dtype of each parameter's update and float32 master weights (``minidp/core/precision.py``,
Paddle's ``multi_precision``): a bfloat16 run with master weights follows a float32 run exactly,
one without them rounds small updates away and warns, the state dtypes follow Paddle, and master
weights survive a state-dict round trip."""

import warnings

import numpy as np
import pytest

import minidp
import minidp.optimizer as optim
from gradcheck import bf16_values
from minidp.core.backend import BFLOAT16 as BF16

rng = np.random.default_rng(0)

OPTIMIZERS = {
    "sgd": lambda ps, mp: optim.SGD(0.01, parameters=ps, multi_precision=mp),
    "momentum": lambda ps, mp: optim.Momentum(0.01, 0.9, parameters=ps, multi_precision=mp),
    "nesterov": lambda ps, mp: optim.Momentum(0.01, 0.9, parameters=ps, use_nesterov=True, multi_precision=mp),
    "adam": lambda ps, mp: optim.Adam(0.01, parameters=ps, multi_precision=mp),
    "adamw": lambda ps, mp: optim.AdamW(0.01, parameters=ps, weight_decay=0.1, multi_precision=mp),
}


def train(make, dtype: str, start: np.ndarray, grads: list, multi_precision: bool):
    param = minidp.Parameter(start.astype(dtype), name="w")
    opt = make([param], multi_precision)
    for grad in grads:
        param.grad = grad.astype(dtype)
        opt.step()
    return param, opt


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_master_weights_follow_a_float32_run_exactly(name):
    start, grads = bf16_values(rng, [6]), [bf16_values(rng, [6]) for _ in range(4)]
    reference, _ = train(OPTIMIZERS[name], "float32", start, grads, False)
    param, opt = train(OPTIMIZERS[name], "bfloat16", start, grads, True)
    master = opt._slots[0].master
    assert master.dtype == np.float32 and param.dtype == BF16
    np.testing.assert_array_equal(master, reference.numpy())
    np.testing.assert_array_equal(param.numpy(), reference.numpy().astype(BF16))
    for value in opt._slots[0].state.values():
        assert not hasattr(value, "dtype") or value.dtype == np.float32


def test_without_master_weights_small_updates_are_rounded_away_with_a_warning():
    start, grads = np.ones(3, np.float32), [np.full(3, 0.1, np.float32)] * 5
    with pytest.warns(UserWarning, match="multi_precision=True"):
        plain, opt = train(OPTIMIZERS["sgd"], "bfloat16", start, grads, False)
    assert opt._slots[0].master is None
    np.testing.assert_array_equal(plain.numpy().astype(np.float32), start)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mastered, _ = train(OPTIMIZERS["sgd"], "bfloat16", start, grads, True)
    assert (mastered.numpy().astype(np.float32) < 1).all()


def test_state_of_sixteen_bit_parameters_follows_paddle():
    start, grads = bf16_values(rng, [4]), [bf16_values(rng, [4])]
    with pytest.warns(UserWarning, match="multi_precision"):
        _, adam = train(OPTIMIZERS["adam"], "bfloat16", start, grads, False)
    assert adam._slots[0].state["moment1"].dtype == np.float32  # Paddle: float32 moments always
    with pytest.warns(UserWarning, match="multi_precision"):
        _, momentum = train(OPTIMIZERS["momentum"], "bfloat16", start, grads, False)
    assert momentum._slots[0].state["velocity"].dtype == BF16
    _, momentum = train(OPTIMIZERS["momentum"], "float16", start, grads, True)
    assert momentum._slots[0].state["velocity"].dtype == np.float32


def test_master_weights_survive_a_state_dict_round_trip():
    start, grads = bf16_values(rng, [4]), [bf16_values(rng, [4]) for _ in range(3)]
    param, opt = train(OPTIMIZERS["adam"], "bfloat16", start, grads[:2], True)
    state = opt.state_dict()
    assert set(state["master_weights"]) == {"w"}
    assert "w_fp32_master_0_moment1_0" in state and "w_moment1_0" not in state
    saved = {key: value for key, value in state.items()}
    saved["master_weights"] = {"w": minidp.to_tensor(state["master_weights"]["w"].numpy())}
    resumed_param = minidp.Parameter(param.numpy().copy(), name="w")
    resumed = optim.Adam(0.01, parameters=[resumed_param], multi_precision=True)
    resumed.set_state_dict(saved)
    for target, optimizer in ((param, opt), (resumed_param, resumed)):
        target.grad = grads[2].astype(BF16)
        optimizer.step()
    np.testing.assert_array_equal(resumed._slots[0].master, opt._slots[0].master)
    np.testing.assert_array_equal(resumed_param.numpy(), param.numpy())
