"""Record Paddle's answers to the cases of ``tests/paddle_cases.py`` for the parity tests.

Run by hand with an interpreter that has Paddle (kept in its own virtual environment; minidp
never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_fixtures.py

For each case it stores, in ``tests/fixtures/paddle_ops.npz`` (plain arrays, no pickle): every
output (``<id>/out<i>``) with its dtype name (``<id>/dtype<i>``), and the gradient of
``sum(output * w)`` over the floating outputs with respect to each floating input
(``<id>/grad<j>``), with ``w`` from ``paddle_cases.output_weights``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from command_line import answer_help

answer_help(__name__, __doc__)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import paddle  # noqa: E402
from paddle_cases import CASES, call, function, output_weights  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_ops.npz"


def record_case(index: int, case: tuple, store: dict) -> None:
    case_id, path, specs, kwargs = case

    def to_tensor(array):
        t = paddle.to_tensor(array)
        t.stop_gradient = array.dtype.kind != "f"
        return t

    result, tensors = call(function(path, paddle), index, specs, kwargs, to_tensor)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    loss = None
    for i, out in enumerate(outputs):
        store[f"{case_id}/out{i}"] = out.numpy()
        store[f"{case_id}/dtype{i}"] = np.array(str(out.dtype).replace("paddle.", ""))
        if out.dtype in (paddle.float32, paddle.float64) and not out.stop_gradient:
            w = paddle.to_tensor(output_weights(index * 16 + i, tuple(out.shape)), dtype=out.dtype)
            term = (out * w).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    for j, t in enumerate(tensors):
        if not t.stop_gradient and t.grad is not None:
            store[f"{case_id}/grad{j}"] = t.grad.numpy()


def main() -> int:
    store: dict = {}
    failed = []
    for index, case in enumerate(CASES):
        try:
            record_case(index, case, store)
        except Exception as error:  # report every case Paddle rejects, then stop
            failed.append(f"{case[0]}: {type(error).__name__}: {str(error).splitlines()[0]}")
    if failed:
        print("Paddle rejected these cases; fix them in tests/paddle_cases.py:\n  " + "\n  ".join(failed))
        return 1
    store["paddle_version"] = np.array(paddle.__version__)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **store)
    print(f"recorded {len(CASES)} cases into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
