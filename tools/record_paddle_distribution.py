"""Record paddle.distribution's answers to the cases of ``tests/distribution_cases.py``.

Run by hand with an interpreter that has Paddle (minidp never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_distribution.py

For each case it stores, in ``tests/fixtures/paddle_distribution.npz`` (plain arrays, no pickle),
the value (``<id>/out``), its dtype name (``<id>/dtype``) and, for cases marked with gradients,
the gradient of sum(value * w) with respect to each float parameter (``<id>/grad<j>``).
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
import paddle.distribution  # noqa: E402
from distribution_cases import CASES, evaluate, output_weights  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_distribution.npz"


def record_case(index: int, case: tuple, store: dict) -> None:
    case_id, gradients = case[0], case[5]
    out, tensors = evaluate(paddle.distribution, case, paddle.to_tensor)
    store[f"{case_id}/out"] = out.numpy()
    store[f"{case_id}/dtype"] = np.array(str(out.dtype).replace("paddle.", ""))
    if not gradients:
        return
    weights = paddle.to_tensor(output_weights(index, tuple(out.shape)), dtype=out.dtype)
    (out * weights).sum().backward()
    for j, tensor in enumerate(tensors):
        store[f"{case_id}/grad{j}"] = np.zeros(tensor.shape) if tensor.grad is None else tensor.grad.numpy()


def main() -> int:
    store: dict = {}
    for index, case in enumerate(CASES):
        record_case(index, case, store)
    store["paddle_version"] = np.array(paddle.__version__)
    np.savez_compressed(OUT, **store)
    print(f"recorded {len(CASES)} cases into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
