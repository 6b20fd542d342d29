"""Record what Paddle does with the small protocols real training scripts rely on, for
tests/test_dataloader.py, tests/test_static.py and tests/test_jit.py.

Run by hand with an interpreter that has Paddle (minidp never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_protocols.py

It writes ``tests/fixtures/paddle_protocols.json``: the first batch a DataLoader yields for each
``collate_fn`` of ``tests/protocol_cases.py`` (without and with two workers), parameters made by
``paddle.create_parameter``, ``_grad_ivar()`` before and after a backward pass, ``InputSpec``
attributes, and the output and gradient of a layer and a function under ``paddle.jit.to_static``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import paddle  # noqa: E402
from protocol_cases import COLLATE_CASES, Samples, describe  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_protocols.json"


def is_tensor(obj) -> bool:
    return isinstance(obj, paddle.Tensor)


def record_collate() -> dict:
    cases = {}
    for name, collate in COLLATE_CASES.items():
        for workers in (0, 2):
            loader = paddle.io.DataLoader(Samples(), batch_size=2, collate_fn=collate, num_workers=workers)
            cases[f"{name}/workers{workers}"] = describe(next(iter(loader())), is_tensor)
    return cases


def parameter(p) -> dict:
    return {
        "name": p.name,
        "dtype": str(p.dtype).replace("paddle.", ""),
        "shape": list(p.shape),
        "trainable": p.trainable,
        "stop_gradient": p.stop_gradient,
        "values": p.numpy().tolist(),
    }


def record_create_parameter() -> dict:
    constant = paddle.nn.initializer.Constant(2.0)
    named = paddle.ParamAttr(name="frozen", initializer=paddle.nn.initializer.Constant(3.0), trainable=False)
    weight = paddle.create_parameter([2, 3], "float32")
    before = weight._grad_ivar()
    (weight * weight).sum().backward()
    return {
        "weight": {k: v for k, v in parameter(weight).items() if k != "values"},
        "bias": parameter(paddle.create_parameter([3], "float32", is_bias=True)),
        "initialized": parameter(paddle.create_parameter([3], "float64", name="mine", default_initializer=constant)),
        "attr": parameter(paddle.create_parameter([2], "float32", attr=named)),
        "grad_before": before,
        "grad_after": (weight._grad_ivar() / weight).numpy().tolist(),
    }


def record_input_spec() -> dict:
    specs = {
        "plain": paddle.static.InputSpec([None, 3], "float32", "x"),
        "default": paddle.static.InputSpec([4, -1, 2]),
        "int": paddle.static.InputSpec((2,), "int64", stop_gradient=True),
    }
    out = {}
    for key, spec in specs.items():
        out[key] = {
            "repr": repr(spec).replace("paddle.", ""),
            "shape": list(spec.shape),
            "dtype": str(spec.dtype).replace("paddle.", ""),
            "name": spec.name,
            "stop_gradient": spec.stop_gradient,
        }
    batched = paddle.static.InputSpec([3], "float32").batch(8)
    out["batch"] = list(batched.shape)
    out["unbatch"] = list(batched.unbatch().shape)
    out["equal"] = paddle.static.InputSpec([2]) == paddle.static.InputSpec([2])
    out["equal_other_name"] = paddle.static.InputSpec([2], name="a") == paddle.static.InputSpec([2], name="b")
    out["hash_ignores_name"] = hash(paddle.static.InputSpec([2], name="a")) == hash(paddle.static.InputSpec([2]))
    return out


def record_to_static() -> dict:
    linear = paddle.nn.Linear(
        3, 2, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Assign(np.arange(6.0).reshape(3, 2)))
    )
    layer = paddle.jit.to_static(linear, input_spec=[paddle.static.InputSpec([None, 3], "float32")], full_graph=True)

    @paddle.jit.to_static
    def scaled(x, y):
        return paddle.tanh(x) * y + 1.0

    x = paddle.to_tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]], stop_gradient=False)
    out = layer(x)
    out.sum().backward()
    value = scaled(paddle.to_tensor([0.5, -1.0]), paddle.to_tensor([2.0, 3.0]))
    return {
        "layer_out": out.numpy().tolist(),
        "layer_x_grad": x.grad.numpy().tolist(),
        "layer_w_grad": linear.weight.grad.numpy().tolist(),
        "function_out": value.numpy().tolist(),
    }


def main() -> int:
    record = {
        "paddle": paddle.__version__,
        "collate": record_collate(),
        "create_parameter": record_create_parameter(),
        "input_spec": record_input_spec(),
        "to_static": record_to_static(),
    }
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
