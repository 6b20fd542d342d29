"""Write the Paddle checkpoints that tests/test_paddle_checkpoint.py reads (run by hand, with Paddle).

Usage: ``/path/to/paddle-venv/bin/python tools/record_paddle_checkpoints.py`` writes into
``tests/fixtures/`` and prints the values the tests hold as literals: the model's output on
``arange(12).reshape([4, 3]) / 10 - 0.5`` and its parameters after a second Adam step taken from the saved state.
"""

import collections
from pathlib import Path

import numpy
from command_line import answer_help

answer_help(__name__, __doc__)

import paddle

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    paddle.seed(1)
    model = paddle.nn.Sequential(paddle.nn.Linear(3, 2), paddle.nn.ReLU(), paddle.nn.Linear(2, 1))
    opt = paddle.optimizer.Adam(0.01, parameters=model.parameters())
    x = paddle.arange(12, dtype="float32").reshape([4, 3]) / 10 - 0.5
    model(x).sum().backward()
    opt.step()
    opt.clear_grad()
    paddle.save(model.state_dict(), str(FIXTURES / "paddle_mlp.pdparams"))
    paddle.save(opt.state_dict(), str(FIXTURES / "paddle_mlp_adam.pdopt"))
    print("output", model(x).numpy().ravel().tolist())
    model(x).sum().backward()
    opt.step()
    print("after second step", {k: v.numpy().tolist() for k, v in model.state_dict().items()})
    misc = collections.OrderedDict(
        scalar=numpy.float64(1.5),
        nested=[1, (2, 3.0), {"s": "text"}],
        ids={1, 2},
        none=None,
        tensor=paddle.to_tensor([[1, 2], [3, 4]], dtype="int32"),
        flags=numpy.array([True, False]),
    )
    paddle.save(misc, str(FIXTURES / "paddle_misc_protocol2.pdparams"), protocol=2)


if __name__ == "__main__":
    main()
