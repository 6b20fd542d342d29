"""minidp.amp.auto_cast (with its op lists and the op stand-ins of minidp.amp.dispatch) and
decorate, against Paddle 3.3.1's answers in tests/fixtures/paddle_amp.json (recorded by
tools/record_paddle_amp.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from minidp.amp import dispatch, lists
from gradcheck import check_grad

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_amp.json").read_text())


@pytest.mark.parametrize("case", sorted(FIXTURE["lists"]))
def test_effective_lists_match_paddle(case):
    recorded = FIXTURE["lists"][case]
    white, black = lists.effective_lists(*recorded["args"])
    assert sorted(white) == recorded["white"]
    assert sorted(black) == recorded["black"]


def test_every_listed_op_resolves_to_a_minidp_function():
    for op_name in dispatch.OPS:
        assert callable(dispatch.resolve(op_name)), op_name


def _dtypes(level, dtype, **lists_):
    x = minidp.to_tensor(np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3))
    w = minidp.to_tensor(np.eye(3, dtype="float32"))
    layer = minidp.nn.Linear(3, 3)
    with minidp.amp.auto_cast(level=level, dtype=dtype, **lists_):
        h = layer(x)
        return {
            "matmul": str(minidp.matmul(x, w).dtype),
            "operator": str((x @ w).dtype),
            "linear": str(h.dtype),
            "softmax": str(F.softmax(h).dtype),
            "softmax_layer": str(minidp.nn.Softmax()(h).dtype),
            "exp": str(minidp.exp(h).dtype),
            "tanh": str(minidp.tanh(h).dtype),
            "add_mixed": str((h + x).dtype),
            "cross_entropy": str(F.cross_entropy(h, minidp.to_tensor([0, 2])).dtype),
        }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_o1_runs_white_ops_low_and_black_ops_in_float32(dtype):
    got = _dtypes("O1", dtype)
    assert got["matmul"] == got["operator"] == got["linear"] == dtype
    assert got["softmax"] == got["softmax_layer"] == got["exp"] == got["cross_entropy"] == "float32"
    assert got["tanh"] == dtype  # on no list: follows its input
    assert got["add_mixed"] == "float32"  # a 16-bit and a float32 input promote to float32


def test_o2_keeps_only_its_short_black_list_and_use_promote_false_casts_the_rest():
    got = _dtypes("O2", "bfloat16")
    assert got["softmax"] == got["exp"] == got["linear"] == "bfloat16"
    got = _dtypes("O2", "float16", use_promote=False, custom_black_list=["softmax"])
    assert got["softmax"] == "float32" and got["exp"] == "float16"


def test_custom_lists_move_ops():
    got = _dtypes("O1", "float16", custom_white_list=["exp"], custom_black_list=["matmul_v2", "matmul", "linear_v2"])
    assert got["exp"] == "float16"
    assert got["matmul"] == got["linear"] == "float32"


def test_outside_auto_cast_the_original_functions_are_back_and_nesting_restores_state():
    originals = {name: dispatch.resolve(name) for name in dispatch.OPS}
    x = minidp.ones([2, 2])
    with pytest.raises(RuntimeError):
        with minidp.amp.auto_cast(dtype="bfloat16"):
            assert minidp.amp.is_autocast_enabled()
            with minidp.amp.auto_cast(enable=False):
                assert not minidp.amp.is_autocast_enabled()
                assert minidp.matmul(x, x).dtype == minidp.float32
            assert minidp.matmul(x, x).dtype == minidp.bfloat16
            raise RuntimeError("leave by exception")
    assert not minidp.amp.is_autocast_enabled()
    assert {name: dispatch.resolve(name) for name in dispatch.OPS} == originals
    assert minidp.Tensor.matmul is minidp.ops.linalg.matmul and minidp.matmul is minidp.ops.linalg.matmul
    assert minidp.nn.Softmax._function is F.softmax


def test_another_thread_outside_auto_cast_runs_uncast():
    x = minidp.ones([2, 2])
    seen = {}
    entered, done = threading.Event(), threading.Event()

    def other():
        entered.wait(5)
        seen["dtype"] = minidp.matmul(x, x).dtype
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with minidp.amp.auto_cast(dtype="bfloat16"):
        entered.set()
        done.wait(5)
    thread.join(5)
    assert seen["dtype"] == minidp.float32


def test_float64_is_never_cast_and_gradients_flow_through_the_stand_ins():
    def fn(x, w):
        with minidp.amp.auto_cast(dtype="bfloat16"):
            return F.softmax(F.linear(x, w), axis=-1)

    rng = np.random.default_rng(0)
    check_grad(fn, rng.normal(size=(2, 3)), rng.normal(size=(3, 4)))


def test_the_gradient_of_a_cast_input_comes_back_in_its_own_dtype():
    layer = minidp.nn.Linear(3, 2)
    with minidp.amp.auto_cast(dtype="float16"):
        loss = layer(minidp.ones([4, 3])).mean()
    loss.backward()
    assert layer.weight.grad.dtype == minidp.float32
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.full((3, 2), 0.5), rtol=1e-3)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="level"):
        with minidp.amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="dtype"):
        with minidp.amp.auto_cast(dtype="float64"):
            pass
    with pytest.raises(ValueError, match="both"):
        with minidp.amp.auto_cast(custom_white_list=["exp"], custom_black_list=["exp"]):
            pass
    with pytest.raises(TypeError, match="custom_white_list"):
        with minidp.amp.auto_cast(custom_white_list="exp"):
            pass


def _model():
    return minidp.nn.Sequential(
        minidp.nn.Linear(4, 4), minidp.nn.LayerNorm(4), minidp.nn.BatchNorm1D(4), minidp.nn.Linear(4, 2)
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_decorate_o2_parameter_dtypes_match_paddle(dtype):
    recorded = FIXTURE["decorate"][dtype]
    model = _model()
    opt = minidp.optimizer.Adam(parameters=model.parameters())
    model, opt = minidp.amp.decorate(model, opt, level="O2", dtype=dtype)
    got = {name: str(p.dtype) for name, p in model.named_parameters()}
    got.update({name: str(b.dtype) for name, b in model.named_buffers()})
    assert got == recorded["params"]
    assert opt._multi_precision is recorded["multi_precision"]


def test_decorate_o2_trains_with_master_weights_and_save_dtype():
    model = minidp.nn.Linear(3, 1)
    opt = minidp.optimizer.SGD(learning_rate=1e-4, parameters=model.parameters())
    model, opt = minidp.amp.decorate(model, opt, level="O2", dtype="bfloat16", save_dtype="float32")
    for _ in range(4):  # each update is below bfloat16's resolution: only a master weight adds them up
        with minidp.amp.auto_cast(level="O2", dtype="bfloat16"):
            loss = model(minidp.ones([2, 3])).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
    assert model.weight.dtype == minidp.bfloat16
    assert model.state_dict()["weight"].dtype == minidp.float32
    assert minidp.amp.decorate(model, level="O1") is model
    masters = opt.state_dict()["master_weights"]
    assert len(masters) == 2 and all(master.dtype == minidp.float32 for master in masters.values())


def test_decorate_refuses_data_parallel_and_bad_levels():
    with pytest.raises(ValueError, match="level"):
        minidp.amp.decorate(_model(), level="O3")
    with pytest.raises(TypeError, match="models"):
        minidp.amp.decorate("model", level="O2")


def test_device_queries_match_paddle_on_the_cpu():
    assert minidp.amp.is_float16_supported("cpu") is False
    assert minidp.amp.is_bfloat16_supported("cpu") is True
    assert FIXTURE["cpu"]["matmul_dtype"] == "float32"  # Paddle's CPU build ignores auto_cast (docs/amp.md)


def test_the_pytorch_style_autocast_and_its_queries_at_the_top_level():
    assert minidp.get_autocast_dtype() == "float16" and not minidp.is_autocast_enabled("cpu")
    with minidp.autocast("cpu", dtype="bfloat16"):
        assert minidp.is_autocast_enabled() and minidp.get_autocast_dtype("cpu") == "bfloat16"
        assert minidp.get_autocast_cpu_dtype() == minidp.get_autocast_gpu_dtype() == "bfloat16"
        x = minidp.ones([2, 2])
        assert (x @ x).dtype == minidp.bfloat16
    with minidp.autocast(None, enabled=False):
        assert not minidp.is_autocast_enabled()
