"""minidp/jit: ``to_static`` runs code eagerly with Paddle 3.3.1's results
(tests/fixtures/paddle_protocols.json, recorded by tools/record_paddle_protocols.py), says so
once in the log, checks its arguments; ``save``/``load`` refuse and name ``paddle.save``."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import minidp
from gradcheck import check_grad
from minidp.jit import api
from minidp.static import InputSpec

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_protocols.json").read_text())


def test_to_static_gives_paddles_results_for_a_layer_and_a_function():
    expected = FIXTURE["to_static"]
    weight = minidp.ParamAttr(initializer=minidp.nn.initializer.Assign(np.arange(6.0).reshape(3, 2)))
    linear = minidp.nn.Linear(3, 2, weight_attr=weight)
    layer = minidp.jit.to_static(linear, input_spec=[InputSpec([None, 3], "float32")], full_graph=True)
    assert layer is linear

    @minidp.jit.to_static
    def scaled(x, y):
        return minidp.tanh(x) * y + 1.0

    x = minidp.to_tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]], stop_gradient=False)
    out = layer(x)
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), expected["layer_out"], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), expected["layer_x_grad"], rtol=1e-6)
    np.testing.assert_allclose(linear.weight.grad.numpy(), expected["layer_w_grad"], rtol=1e-6)
    value = scaled(minidp.to_tensor([0.5, -1.0]), minidp.to_tensor([2.0, 3.0]))
    np.testing.assert_allclose(value.numpy(), expected["function_out"], rtol=1e-6)


def test_decorated_methods_and_functions_keep_their_gradients():
    class Net(minidp.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = minidp.nn.Linear(2, 1)

        @minidp.jit.to_static(input_spec=[InputSpec([None, 2])], backend=None)
        def forward(self, x):
            return self.fc(x)

    assert Net()(minidp.ones([4, 2])).shape == [4, 1]

    @minidp.jit.to_static(full_graph=False)
    def f(a, b):
        return minidp.tanh(a * b) + a

    check_grad(f, np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.2, -0.7]))


def test_it_says_once_that_code_runs_eagerly(monkeypatch, caplog):
    monkeypatch.setattr(api, "_announced", False)
    with caplog.at_level(logging.WARNING, logger="minidp.jit"):
        minidp.jit.to_static(lambda x: x)
        minidp.jit.to_static(input_spec=[InputSpec([1])])(lambda x: x)
    records = [r for r in caplog.records if r.name == "minidp.jit"]
    assert len(records) == 1 and "eagerly" in records[0].getMessage()


def test_not_to_static_and_switches_leave_code_as_it_is():
    def f(x):
        return x + 1

    assert minidp.jit.not_to_static(f) is f and minidp.jit.not_to_static()(f) is f
    minidp.jit.enable_to_static(False)
    minidp.jit.ignore_module([np])
    with pytest.raises(TypeError, match="True or False"):
        minidp.jit.enable_to_static("no")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"input_spec": InputSpec([1])}, TypeError, "input_spec must be a list or tuple"),
        ({"input_spec": [[3]]}, TypeError, "must be an InputSpec or a Tensor"),
        ({"backend": "XLA"}, ValueError, "backend must be one of"),
        ({"full_graph": "yes"}, TypeError, "full_graph must be"),
    ],
)
def test_to_static_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        minidp.jit.to_static(lambda x: x, **kwargs)
    with pytest.raises(TypeError, match="expected a function or a Layer"):
        minidp.jit.to_static(5)


def test_save_and_load_refuse_and_name_paddle_save(tmp_path):
    with pytest.raises(RuntimeError, match=r"paddle\.save\(layer\.state_dict\(\)"):
        minidp.jit.save(minidp.nn.Linear(2, 2), str(tmp_path / "model"))
    with pytest.raises(RuntimeError, match="set_state_dict"):
        minidp.jit.load(str(tmp_path / "model"))
