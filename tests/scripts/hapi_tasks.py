"""Shared by the hapi tests, the multi-rank ``Model.fit`` worker and ``tools/record_paddle_hapi.py``:
the fixed data of the recorded fit and a Metric-protocol accuracy written in NumPy, so the same
class body runs under minidp and under Paddle."""

from __future__ import annotations

import numpy as np


def fit_case(samples: int = 10) -> dict:
    """Data and starting weights of the recorded fit: ``samples`` points of 4 features in 3
    classes, and the weight and bias of a Linear(4, 3) classifier."""
    rng = np.random.RandomState(7)
    return {
        "x": rng.standard_normal((samples, 4)).astype("float32"),
        "y": rng.randint(0, 3, (samples, 1)).astype("int64"),
        "weight": (rng.standard_normal((4, 3)) * 0.5).astype("float32"),
        "bias": np.zeros(3, "float32"),
    }


class CountingAccuracy:
    """Top-1 accuracy on Paddle's Metric protocol: compute passes (pred, label) through, update
    counts the hits of a batch (returning its accuracy), accumulate gives the running accuracy."""

    def __init__(self):
        super().__init__()
        self.reset()

    def name(self):
        return "acc"

    def compute(self, pred, label):
        return pred, label

    def update(self, pred, label):
        hits = int((np.argmax(pred, axis=-1) == label.reshape(-1)).sum())
        self.correct, self.total = self.correct + hits, self.total + len(label)
        return hits / len(label)

    def accumulate(self):
        return self.correct / self.total if self.total else 0.0

    def reset(self):
        self.correct = self.total = 0


def linear_model(case: dict, framework=None, metric=None):
    """A Model of a Linear(4, 3) starting from the case's weights, with SGD, cross entropy and
    the counting accuracy; ``framework`` is minidp (the default) or, for the recorder, paddle."""
    if framework is None:
        import minidp as framework

    net = framework.nn.Linear(4, 3)
    net.set_state_dict({"weight": framework.to_tensor(case["weight"]), "bias": framework.to_tensor(case["bias"])})
    model = framework.Model(net)
    model.prepare(
        framework.optimizer.SGD(learning_rate=0.5, parameters=net.parameters()),
        framework.nn.CrossEntropyLoss(),
        metric or CountingAccuracy(),
    )
    return model


def dataset(case: dict):
    import minidp

    return minidp.io.TensorDataset([minidp.to_tensor(case["x"]), minidp.to_tensor(case["y"])])


def distributed_fit_worker(samples: int, minidp_accuracy: bool = False) -> dict:
    """One rank of a multi-rank fit + evaluate on ``samples`` points (an uneven count, so the
    sampler pads the last round): the rank's final weights, its evaluation result and the number
    of samples the logs say were evaluated. With ``minidp_accuracy`` the metric is
    minidp.metric.Accuracy (its compute outputs are what the ranks gather), else the counting one."""
    import minidp

    class CountEvaluated(minidp.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.samples = 0

        def on_eval_batch_end(self, step, logs=None):
            self.samples += logs["batch_size"]

    case = fit_case(samples)
    model = linear_model(case, metric=minidp.metric.Accuracy() if minidp_accuracy else None)
    data = dataset(case)
    model.fit(data, batch_size=2, epochs=2, shuffle=False, verbose=0)
    counter = CountEvaluated()
    result = model.evaluate(data, batch_size=2, verbose=0, callbacks=[counter])
    return {
        "rank": minidp.distributed.get_rank(),
        "weight": model.network.weight.numpy(),
        "bias": model.network.bias.numpy(),
        "acc": result["acc"],
        "evaluated": counter.samples,
        "wrapped": type(model._ddp).__name__,
    }
