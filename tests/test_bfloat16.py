"""bfloat16 as a Tensor dtype: creation, casts, arithmetic, a Linear layer, and optimizers with
float32 master weights (Paddle's ``multi_precision``). On the CPU the dtype is ml_dtypes'."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import minidp
import minidp.optimizer as optim

BF16 = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(0)


def bf16_values(shape) -> np.ndarray:
    """Random float32 values that bfloat16 holds exactly."""
    return rng.standard_normal(shape).astype(BF16).astype(np.float32)


def test_bfloat16_is_a_dtype_of_every_creation_function():
    assert minidp.bfloat16 == BF16
    made = [minidp.to_tensor([1.0, 2.5], dtype="bfloat16"), minidp.to_tensor([1.0], dtype=minidp.bfloat16),
            minidp.to_tensor([1.0], dtype="paddle.bfloat16"), minidp.zeros([2], "bfloat16"),
            minidp.ones([2], "bfloat16"), minidp.full([2], 3.0, "bfloat16"), minidp.randn([2], "bfloat16"),
            minidp.arange(0, 3, 1, "bfloat16"), minidp.zeros_like(minidp.ones([2]), "bfloat16")]
    for tensor in made:
        assert tensor.dtype == BF16, tensor
    assert minidp.to_tensor([1.0, 2.5], dtype="bfloat16").numpy().astype(np.float32).tolist() == [1.0, 2.5]


def test_astype_rounds_to_nearest_even_and_widens_exactly():
    values = np.array([1.0, 1.00390625, 1.005859375, -3.3, 1e-3], np.float32)
    narrow = minidp.to_tensor(values).astype("bfloat16")
    assert narrow.dtype == BF16
    np.testing.assert_array_equal(narrow.numpy(), values.astype(BF16))
    wide = narrow.astype("float32")
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide.numpy(), values.astype(BF16).astype(np.float32))


def test_astype_to_and_from_bfloat16_passes_gradients():
    x = minidp.to_tensor(bf16_values([3]), stop_gradient=False)
    (x.astype("bfloat16") * 2.0).astype("float32").sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("op", [
    lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
    lambda x, y: x * 0.3, lambda x, y: 0.3 * x, lambda x, y: x + 1.5, lambda x, y: 2.0 / y, lambda x, y: -x,
    lambda x, y: minidp.tanh(x), lambda x, y: minidp.exp(x), lambda x, y: x.sum(), lambda x, y: x @ y.T,
], ids=["add", "sub", "mul", "div", "mul-float", "rmul-float", "add-float", "rdiv-float", "neg", "tanh",
        "exp", "sum", "matmul"])
def test_arithmetic_stays_bfloat16_and_equals_float32_rounded(op):
    a, b = bf16_values([3, 4]), bf16_values([3, 4]) + 4
    got = op(minidp.to_tensor(a, dtype="bfloat16"), minidp.to_tensor(b, dtype="bfloat16"))
    assert got.dtype == BF16
    wanted = op(minidp.to_tensor(a), minidp.to_tensor(b)).numpy()
    # one bfloat16 rounding of the result, or of the largest term a reduction adds
    scale = max(np.abs(wanted).max(), 1.0)
    np.testing.assert_allclose(got.numpy().astype(np.float32), wanted, rtol=2**-8, atol=2**-7 * scale)


def test_mixing_bfloat16_with_float32_tensors_promotes_elementwise_and_asks_matmul_for_a_cast():
    """Paddle 3.3.1 adds them in float32 and refuses the matmul."""
    assert (minidp.ones([2], "bfloat16") + minidp.ones([2], "float32")).dtype == np.float32
    with pytest.raises(TypeError, match="astype"):
        minidp.matmul(minidp.ones([2, 2], "bfloat16"), minidp.ones([2, 2], "float32"))


def test_linear_forward_and_backward_in_bfloat16_match_float32():
    minidp.seed(3)
    reference = minidp.nn.Linear(16, 8)
    layer = minidp.nn.Linear(16, 8)
    layer.set_state_dict(reference.state_dict())
    layer.to(dtype="bfloat16")
    assert all(p.dtype == BF16 for p in layer.parameters())
    reference.weight.set_value(layer.weight.numpy().astype(np.float32))
    reference.bias.set_value(layer.bias.numpy().astype(np.float32))
    x = bf16_values([5, 16])
    out = layer(minidp.to_tensor(x, dtype="bfloat16"))
    wanted = reference(minidp.to_tensor(x))
    assert out.dtype == BF16
    np.testing.assert_allclose(out.numpy().astype(np.float32), wanted.numpy(), rtol=2**-7, atol=2**-7)
    out.mean().backward()
    wanted.mean().backward()
    for mine, theirs in zip(layer.parameters(), reference.parameters()):
        assert mine.grad.dtype == BF16
        np.testing.assert_allclose(mine.grad.numpy().astype(np.float32), theirs.grad.numpy(),
                                   rtol=2**-7, atol=2**-9)
    layer.to(dtype="float32")
    assert all(p.dtype == np.float32 for p in layer.parameters())


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
    start, grads = bf16_values([6]), [bf16_values([6]) for _ in range(4)]
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
    start, grads = bf16_values([4]), [bf16_values([4])]
    with pytest.warns(UserWarning, match="multi_precision"):
        _, adam = train(OPTIMIZERS["adam"], "bfloat16", start, grads, False)
    assert adam._slots[0].state["moment1"].dtype == np.float32  # Paddle: float32 moments always
    with pytest.warns(UserWarning, match="multi_precision"):
        _, momentum = train(OPTIMIZERS["momentum"], "bfloat16", start, grads, False)
    assert momentum._slots[0].state["velocity"].dtype == BF16
    _, momentum = train(OPTIMIZERS["momentum"], "float16", start, grads, True)
    assert momentum._slots[0].state["velocity"].dtype == np.float32


def test_master_weights_survive_a_state_dict_round_trip():
    start, grads = bf16_values([4]), [bf16_values([4]) for _ in range(3)]
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


def test_bfloat16_tensors_and_optimizer_state_survive_save_and_load(tmp_path):
    layer = minidp.nn.Linear(3, 2)
    layer.to(dtype="bfloat16")
    opt = optim.Adam(0.01, parameters=layer.parameters(), multi_precision=True)
    layer(minidp.ones([2, 3], "bfloat16")).sum().backward()
    opt.step()
    minidp.save({"model": layer.state_dict(), "opt": opt.state_dict(),
                 "array": np.ones(2, BF16), "scalar": BF16.type(1.5)}, str(tmp_path / "ckpt"))
    loaded = minidp.load(str(tmp_path / "ckpt"))
    for name, value in layer.state_dict().items():
        assert loaded["model"][name].dtype == BF16
        assert loaded["model"][name].numpy().tobytes() == value.numpy().tobytes()
    masters = loaded["opt"]["master_weights"]
    assert {name: m.dtype for name, m in masters.items()} == {p.name: np.float32 for p in layer.parameters()}
    assert loaded["array"].dtype == BF16 and loaded["scalar"] == 1.5 and loaded["scalar"].dtype == BF16
