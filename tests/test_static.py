"""minidp/static: ``InputSpec`` and ``create_parameter`` against Paddle 3.3.1
(tests/fixtures/paddle_protocols.json, recorded by tools/record_paddle_protocols.py)."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import minidp
from minidp.static import InputSpec

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_protocols.json").read_text())


def describe_spec(spec):
    return {
        "repr": repr(spec),
        "shape": list(spec.shape),
        "dtype": str(spec.dtype),
        "name": spec.name,
        "stop_gradient": spec.stop_gradient,
    }


def test_input_spec_as_in_paddle():
    expected = FIXTURE["input_spec"]
    assert describe_spec(InputSpec([None, 3], "float32", "x")) == expected["plain"]
    assert describe_spec(InputSpec([4, -1, 2])) == expected["default"]
    assert describe_spec(InputSpec((2,), minidp.int64, stop_gradient=True)) == expected["int"]
    batched = InputSpec([3], "float32").batch(8)
    assert list(batched.shape) == expected["batch"]
    assert list(batched.unbatch().shape) == expected["unbatch"]
    assert (InputSpec([2]) == InputSpec([2])) == expected["equal"]
    assert (InputSpec([2], name="a") == InputSpec([2], name="b")) == expected["equal_other_name"]
    assert (hash(InputSpec([2], name="a")) == hash(InputSpec([2]))) == expected["hash_ignores_name"]
    assert InputSpec.from_tensor(minidp.zeros([2, 5], "int32"), "t") == InputSpec([2, 5], "int32", "t")
    assert InputSpec.from_numpy(np.zeros([3], "float64")) == InputSpec([3], "float64")
    assert minidp.static.InputSpec is InputSpec


def test_input_spec_rejects_bad_arguments():
    with pytest.raises(TypeError, match="shape must be a list or tuple"):
        InputSpec(3)
    with pytest.raises(ValueError, match=r"shape\[1\] must be an int"):
        InputSpec([2, 1.5])
    with pytest.raises(TypeError, match="batch_size must be an int"):
        InputSpec([2]).batch("8")
    with pytest.raises(ValueError, match="no batch dimension"):
        InputSpec([]).unbatch()


def parameter(p):
    return {
        "name": p.name,
        "dtype": str(p.dtype),
        "shape": list(p.shape),
        "trainable": p.trainable,
        "stop_gradient": p.stop_gradient,
        "values": p.numpy().tolist(),
    }


def test_create_parameter_as_in_paddle():
    expected = FIXTURE["create_parameter"]
    constant = minidp.nn.initializer.Constant(2.0)
    named = minidp.ParamAttr(name="frozen", initializer=minidp.nn.initializer.Constant(3.0), trainable=False)
    weight = minidp.create_parameter([2, 3], "float32")
    bias = minidp.create_parameter([3], "float32", is_bias=True)
    assert (
        parameter(minidp.create_parameter([3], "float64", name="mine", default_initializer=constant))
        == (expected["initialized"])
    )
    assert parameter(minidp.create_parameter([2], "float32", attr=named)) == expected["attr"]
    for made, key in ((weight, "weight"), (bias, "bias")):
        got = {k: v for k, v in parameter(made).items() if k in expected[key] and k != "name"}
        assert got == {k: v for k, v in expected[key].items() if k != "name"}
        assert re.fullmatch(r"create_parameter_\d+\." + expected[key]["name"].split(".")[1], made.name)
    assert bias.numpy().tolist() == expected["bias"]["values"]
    assert np.abs(weight.numpy()).max() <= math.sqrt(6 / 5)  # Xavier-uniform bound for fan_in 2, fan_out 3
    assert isinstance(weight, minidp.Parameter) and minidp.static.create_parameter is minidp.create_parameter
    assert weight._grad_ivar() is expected["grad_before"]
    (weight * weight).sum().backward()
    np.testing.assert_allclose((weight._grad_ivar() / weight).numpy(), expected["grad_after"], rtol=1e-6)


def test_create_parameter_trains_like_a_layer_parameter():
    w = minidp.create_parameter([2], "float64", default_initializer=minidp.nn.initializer.Constant(1.0))
    opt = minidp.optimizer.SGD(learning_rate=0.5, parameters=[w])
    (w * minidp.to_tensor(np.array([1.0, 2.0]))).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), [0.5, 0.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": "2", "dtype": "float32"}, "shape must be a list or tuple"),
        ({"shape": [2, 1.0], "dtype": "float32"}, "every item of shape must be an int"),
        ({"shape": [2], "dtype": "complex64"}, "dtype must be one of"),
        ({"shape": [2], "dtype": None}, "dtype must be one of"),
        ({"shape": [2], "dtype": "float32", "attr": 5}, "attr must be a ParamAttr"),
        ({"shape": [2], "dtype": "float32", "default_initializer": 1.0}, "default_initializer must be"),
        ({"shape": [2], "dtype": "float32", "name": 3}, "name must be a str"),
    ],
)
def test_create_parameter_rejects_bad_arguments(kwargs, match):
    with pytest.raises(TypeError, match=match):
        minidp.create_parameter(**kwargs)
