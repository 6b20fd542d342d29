"""minidp against Paddle 3.3.1's recorded outputs and gradients (tools/record_paddle_parity.py)."""
import json
import os

import numpy as np
import pytest

import minidp
from paddle_parity_cases import CASES

with open(os.path.join(os.path.dirname(__file__), "fixtures", "paddle_parity.json")) as _f:
    RECORDED = json.load(_f)


def test_every_case_was_recorded():
    assert sorted(RECORDED["cases"]) == sorted(CASES)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # cases that make NaN and inf on purpose
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_paddle(name):
    expected = RECORDED["cases"][name]
    t = minidp.to_tensor(np.array(RECORDED["x"]), stop_gradient=False)
    y = CASES[name](minidp, minidp.nn.functional, t)
    weights = minidp.to_tensor(np.array(RECORDED["weights"])[: y.size])
    (y.reshape([-1]) * weights).sum().backward()
    np.testing.assert_allclose(y.numpy(), np.array(expected["value"]), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(t.grad.numpy(), np.array(expected["grad"]), rtol=1e-6, atol=1e-9)
