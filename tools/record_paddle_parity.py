"""Record Paddle's outputs and gradients for tests/paddle_parity_cases.py into a fixture file.

Run by hand where PaddlePaddle is installed (CI never imports paddle):
    python tools/record_paddle_parity.py   ->  tests/fixtures/paddle_parity.json

Each case's output is weighted by fixed random factors and summed before backward, so the
recorded gradient checks every output element with a distinct weight.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
sys.path.insert(0, TESTS)
from paddle_parity_cases import CASES  # noqa: E402


def record() -> dict:
    import paddle

    rng = np.random.default_rng(0)
    x = rng.uniform(-4.0, 4.0, (3, 6))
    weights = rng.uniform(0.5, 1.5, 64)
    outputs = {}
    for name, case in CASES.items():
        t = paddle.to_tensor(x, stop_gradient=False)
        y = case(paddle, paddle.nn.functional, t)
        (y.reshape([-1]) * paddle.to_tensor(weights[: y.size])).sum().backward()
        outputs[name] = {"value": y.numpy().tolist(), "grad": t.grad.numpy().tolist()}
    return {"paddle": paddle.__version__, "x": x.tolist(), "weights": weights.tolist(), "cases": outputs}


if __name__ == "__main__":
    path = os.path.join(TESTS, "fixtures", "paddle_parity.json")
    with open(path, "w") as f:
        json.dump(record(), f)
    print(f"wrote {path}")
