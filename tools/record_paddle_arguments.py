"""Record Paddle 3.3.1's verdict on odd op arguments into tests/fixtures/paddle_arguments.json.

Each case is a line of Python evaluated with ``P`` (the framework), ``F`` (its nn.functional) and
``np`` in scope; the verdict is the exception class Paddle raises, or the dtype and shape of what it
returns. tests/test_arguments.py evaluates the same lines with minidp and checks it agrees. Run with
the Paddle venv (Paddle is never a dependency of minidp):

    /work/venvs/paddle/bin/python tools/record_paddle_arguments.py
"""

import json
import pathlib

from command_line import answer_help

answer_help(__name__, __doc__)

import numpy as np  # noqa: E402,F401 -- used by the evaluated CASES
import paddle as P  # noqa: E402
import paddle.nn.functional as F  # noqa: E402,F401 -- used by the evaluated CASES

CASES = [
    "P.reshape(P.to_tensor(np.arange(6.0, dtype='float32')), [2, -3])",
    "P.reshape(P.to_tensor(np.arange(6.0, dtype='float32')), [-2, 3])",
    "P.reshape(P.to_tensor(np.arange(6.0, dtype='float32')), [2, -1])",
    "P.to_tensor([1, 'a'])",
    "P.to_tensor('a')",
    "P.to_tensor(object())",
    "P.arange(0, 10, 0)",
    "P.arange(0.0, 1.0, 0.0)",
    "P.arange(0, -5, 1)",
    "P.concat([P.to_tensor([1.0]), P.to_tensor([1])])",
    "P.concat([P.to_tensor(np.array([1], 'int32')), P.to_tensor([1])])",
    "P.concat([P.to_tensor([1.0]), P.to_tensor([2.0])])",
    "P.stack([P.to_tensor([1.0]), P.to_tensor([1])])",
    "P.logical_or(P.to_tensor([True]), print)",
    "P.logical_or(P.to_tensor([True]), 1)",
    "P.logical_and(P.to_tensor([True]), np.array([False]))",
    "P.logical_xor(P.to_tensor([1.0]), P.to_tensor([True]))",
    "P.assign(P.to_tensor([1.0]), [0])",
    "P.assign(P.to_tensor([1.0]), np.zeros(1))",
    "F.rrelu(range(3))",
    "F.rrelu(P.to_tensor([1.0, -1.0]), training=False)",
    "F.layer_norm(P.to_tensor(np.ones((2, 3), 'float32')), 3, epsilon=-1)",
    "F.layer_norm(P.to_tensor(np.ones((2, 3), 'float32')), 3, epsilon=0.01)",
    "F.layer_norm(P.to_tensor(np.ones((2, 3), 'float32')), 3, epsilon='a')",
    "F.layer_norm(P.to_tensor(np.ones((2, 3), 'float32')), 3, epsilon=0.0)",
    "F.linear(-1, None)",
    "F.glu(print)",
    "F.maxout(3, 2)",
    "F.swiglu(b'x')",
    "F.swiglu(P.to_tensor(np.float32(1.5)))",
    "F.gumbel_softmax(1j)",
    "F.alpha_dropout(float('inf'))",
    "F.batch_norm(P.to_tensor(np.ones((2, 3, 4), 'complex64')), P.zeros([3]), P.ones([3]))",
    "F.batch_norm(P.to_tensor(np.ones((2, 3, 4), 'complex64')), P.zeros([3]), P.ones([3]), training=True)",
    "F.batch_norm(P.ones([2, 3, 4], 'int32'), P.zeros([3]), P.ones([3]))",
    "F.batch_norm(P.ones([2, 3, 4]), P.to_tensor(np.zeros(3, 'complex64')), P.ones([3]))",
    "F.batch_norm(P.ones([2, 3, 4]), P.zeros([3]), P.ones([3]), weight=P.to_tensor(np.ones(3, 'complex64')))",
    "F.batch_norm(P.ones([2, 3, 4]), P.zeros([3]), P.ones([3]))",
    "F.interpolate(P.ones([1, 1, 2, 2]), scale_factor=2, mode=P.to_tensor([1]))",
    "F.upsample(P.ones([1, 1, 2, 2]), scale_factor=2, mode=P.to_tensor([1]))",
    "F.interpolate(P.ones([1, 1, 2, 2]), scale_factor=2, mode=None)",
    "F.interpolate(P.ones([1, 1, 2, 2]), scale_factor=2, mode='BILINEAR')",
    "P.zeros([3]).uniform_(min=float('nan'))",
    "P.zeros([3]).uniform_(max=float('nan'))",
    "P.zeros([3]).uniform_(min=1.0, max=1.0)",
    "P.zeros([3]).uniform_(min=2.0, max=1.0)",
    "P.zeros([3]).uniform_(min='a')",
    "P.zeros([3], 'int32').uniform_()",
    "P.zeros([3]).uniform_(min=float('-inf'))",
    "P.zeros([3], 'float64').uniform_(max=float('inf'))",
    "P.uniform([3], min=float('nan'))",
    "P.uniform([3], min=2.0, max=1.0)",
    "P.uniform([3], 'float64', max=float('inf'))",
]


def verdict(line: str) -> dict:
    try:
        out = eval(line)  # noqa: S307 -- the lines are the fixed CASES above
    except Exception as error:  # noqa: BLE001 -- the exception class is what gets recorded
        return {"raises": type(error).__name__}
    return {"dtype": str(out.dtype).replace("paddle.", ""), "shape": list(out.shape)}


def main() -> None:
    P.set_device("cpu")
    record = {"paddle": P.__version__, "cases": {line: verdict(line) for line in CASES}}
    path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "paddle_arguments.json"
    path.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
