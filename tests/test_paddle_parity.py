"""minidp answers the cases of ``paddle_cases.py`` as Paddle 3.3.1 did: values, dtypes, gradients.

Paddle's answers were recorded by ``tools/record_paddle_fixtures.py`` into
``tests/fixtures/paddle_ops.npz``; Paddle itself is not needed here.
"""

from pathlib import Path

import numpy as np
import pytest

import minidp
from paddle_cases import CASES, call, function, output_weights

FIXTURES = np.load(Path(__file__).parent / "fixtures" / "paddle_ops.npz", allow_pickle=False)


def _to_tensor(array: np.ndarray) -> minidp.Tensor:
    t = minidp.to_tensor(array)
    t.stop_gradient = array.dtype.kind != "f"
    return t


def test_fixtures_come_from_paddle_3_3_1():
    assert str(FIXTURES["paddle_version"]) == "3.3.1"
    assert {key.split("/")[0] for key in FIXTURES.files if "/" in key} == {c[0] for c in CASES}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # cases that make NaN and inf on purpose
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_matches_paddle(index):
    case_id, path, specs, kwargs = CASES[index]
    result, tensors = call(function(path, minidp), index, specs, kwargs, _to_tensor)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    expected_count = sum(1 for key in FIXTURES.files if key.startswith(f"{case_id}/out"))
    assert len(outputs) == expected_count, f"{case_id}: {len(outputs)} outputs, Paddle gives {expected_count}"
    loss = None
    for i, out in enumerate(outputs):
        want = FIXTURES[f"{case_id}/out{i}"]
        assert str(out.dtype) == str(FIXTURES[f"{case_id}/dtype{i}"]), f"{case_id} output {i} dtype"
        assert out.shape == list(want.shape), f"{case_id} output {i} shape"
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-9, err_msg=f"{case_id} output {i}")
        if out.dtype in (minidp.float32, minidp.float64) and not out.stop_gradient:
            w = minidp.to_tensor(output_weights(index * 16 + i, tuple(want.shape)).astype(want.dtype))
            term = (out * w).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    for j, t in enumerate(tensors):
        key = f"{case_id}/grad{j}"
        if key in FIXTURES.files:
            assert t.grad is not None, f"{case_id}: input {j} got no gradient"
            np.testing.assert_allclose(
                t.grad.numpy(), FIXTURES[key], rtol=1e-6, atol=1e-9, err_msg=f"{case_id} gradient of input {j}"
            )
        elif not t.stop_gradient:
            assert t.grad is None or not np.any(t.grad.numpy()), f"{case_id}: Paddle gives input {j} no gradient"
