"""Record what Paddle's high-level API prints and computes, for ``tests/test_model.py``,
``tests/test_model_summary.py`` and ``tests/test_progressbar.py``.

Run by hand with an interpreter that has Paddle (kept in its own virtual environment; minidp
never depends on it):

    /path/to/paddle-venv/bin/python tools/record_paddle_hapi.py

It writes ``tests/fixtures/paddle_hapi.json`` (plain JSON): for each network of
``SUMMARY_CASES`` the table ``paddle.summary`` prints and the dict it returns; and for a tiny
``Model.fit`` / ``evaluate`` / ``predict`` run from fixed weights and data (``hapi_tasks.fit_case``), the
loss and metric logged after every step, the evaluation result, the predictions and the text
that Paddle's progress logger printed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from command_line import answer_help

answer_help(__name__, __doc__)

import paddle

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import hapi_tasks  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "paddle_hapi.json"


class CountingAccuracy(hapi_tasks.CountingAccuracy, paddle.metric.Metric):
    """The tests' counting accuracy, registered as a Paddle Metric (Model.prepare insists)."""


class StepLog(paddle.callbacks.Callback):
    """Keeps the logs of every training step."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_end(self, step, logs=None):
        self.steps.append([float(logs["loss"][0]), float(logs["acc"])])


class Pairs(paddle.io.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def record_fit() -> dict:
    case = hapi_tasks.fit_case()
    model = hapi_tasks.linear_model(case, paddle, CountingAccuracy())
    data = Pairs(case["x"], case["y"])
    steps = StepLog()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        model.fit(data, data, batch_size=4, epochs=2, shuffle=False, verbose=2, log_freq=1, callbacks=[steps])
        result = model.evaluate(data, batch_size=4, verbose=2, log_freq=2)
        predictions = model.predict(data, batch_size=4, stack_outputs=True, verbose=2)
    return {
        "steps": steps.steps,
        "evaluate": {k: (float(v[0]) if isinstance(v, list) else float(v)) for k, v in result.items()},
        "predict": predictions[0].tolist(),
        "log": text.getvalue(),
    }


class TwoInputs(paddle.nn.Layer):
    """Two inputs, a nested block, a frozen weight and a norm layer with buffers."""

    def __init__(self):
        super().__init__()
        self.left = paddle.nn.Linear(4, 6)
        self.left.weight.stop_gradient = True
        self.right = paddle.nn.Sequential(paddle.nn.Linear(4, 6), paddle.nn.Tanh())
        self.norm = paddle.nn.BatchNorm1D(6)
        self.head = paddle.nn.Linear(6, 2)

    def forward(self, a, b):
        return self.head(self.norm(self.left(a) + self.right(b)))


SUMMARY_CASES = {
    "mlp": (lambda: paddle.nn.Sequential(paddle.nn.Linear(8, 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 4)), (1, 8)),
    "conv": (
        lambda: paddle.nn.Sequential(
            paddle.nn.Conv2D(1, 4, 3),
            paddle.nn.ReLU(),
            paddle.nn.MaxPool2D(2),
            paddle.nn.Flatten(),
            paddle.nn.Linear(36, 10),
        ),
        (2, 1, 8, 8),
    ),
    "two_inputs": (TwoInputs, [(3, 4), (3, 4)]),
}


def record_summaries() -> dict:
    found = {}
    for name, (build, input_size) in SUMMARY_CASES.items():
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            info = paddle.summary(build(), input_size)
        found[name] = {"table": text.getvalue(), "info": {k: int(v) for k, v in info.items()}}
    return found


def main() -> None:
    paddle.set_device("cpu")
    record = {"paddle": paddle.__version__, "fit": record_fit(), "summary": record_summaries()}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
