"""Record Paddle's paddle.metric answers for tests/test_metrics.py (run by hand, with Paddle).

Usage: ``/path/to/paddle-venv/bin/python tools/record_paddle_metric.py`` writes
``tests/fixtures/paddle_metric.npz`` (plain arrays, no pickle). Every case draws fixed random
batches, feeds them to a Paddle metric one ``update`` at a time and stores the inputs next to what
Paddle returned: ``compute`` outputs, the values ``update`` and ``accumulate`` gave after each
batch, the counts (tp, fp, fn, the Auc histograms) and ``name()``. The test replays the same
inputs through minidp.metric and compares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from command_line import answer_help

answer_help(__name__, __doc__)

import paddle

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "paddle_metric.npz"
BATCHES = (9, 7, 5)  # samples per update call

# case id -> (topk, name, label form, trailing pred shape); the label is a class index [N, 1] ("col"),
# [N] ("vec"), one-hot [N, C] ("onehot") or [N, T, 1] for a sequence pred [N, T, C] ("seq")
ACCURACY = {
    "top1_col": ((1,), None, "col", (6,)),
    "top15_vec": ((1, 5), None, "vec", (6,)),
    "top23_onehot_named": ((2, 3), "a", "onehot", (6,)),
    "top12_seq": ((1, 2), None, "seq", (3, 6)),
    "top11": ((1, 1), None, "col", (4,)),
}
# case id -> (label shape, label dtype): binary Precision and Recall
BINARY = {"col_int64": ("col", "int64"), "vec_int32": ("vec", "int32")}
# case id -> (curve, num_thresholds, preds dtype, label form)
AUC = {
    "roc_4095": ("ROC", 4095, "float32", "col"),
    "pr_4095": ("PR", 4095, "float32", "col"),
    "roc_7_f64": ("ROC", 7, "float64", "vec"),
    "pr_100": ("PR", 100, "float64", "col"),
    "roc_1": ("ROC", 1, "float32", "col"),
}
# case id -> (k, input dtype, label dtype, classes)
ACCURACY_FN = {
    "k1_f32_i64": (1, "float32", "int64", 5),
    "k2_f64_i64": (2, "float64", "int64", 5),
    "k3_f32_i32": (3, "float32", "int32", 7),
    "k5_f32_out_of_range": (5, "float32", "int64", 5),
}


def labels(rng: np.random.Generator, n: int, classes: int, form: str, dtype: str = "int64") -> np.ndarray:
    idx = rng.integers(0, classes, size=n)
    if form == "onehot":
        return np.eye(classes, dtype="float32")[idx]
    return idx.astype(dtype).reshape((n, 1) if form == "col" else (n,))


def record_accuracy(store: dict, rng: np.random.Generator) -> None:
    for case, (topk, name, form, tail) in ACCURACY.items():
        m = paddle.metric.Accuracy(topk=topk, name=name)
        store[f"Accuracy/{case}/name"] = np.array(json.dumps(m.name()))
        for b, n in enumerate(BATCHES):
            pred = rng.random((n, *tail)).astype("float32")
            if form == "seq":
                label = rng.integers(0, tail[-1], size=(n, tail[0], 1)).astype("int64")
            else:
                label = labels(rng, n, tail[-1], form)
            correct = m.compute(paddle.to_tensor(pred), paddle.to_tensor(label))
            step = m.update(correct)
            key = f"Accuracy/{case}/{b}"
            store[f"{key}/pred"], store[f"{key}/label"], store[f"{key}/correct"] = pred, label, correct.numpy()
            store[f"{key}/update"] = np.array(step, "float64")
            store[f"{key}/accumulate"] = np.array(m.accumulate(), "float64")


def binary_preds(rng: np.random.Generator, n: int) -> np.ndarray:
    """Probabilities with exact halves and a few values that round to 2, where the two roundings differ."""
    preds = rng.random(n)
    preds[rng.integers(0, n, size=3)] = 0.5
    preds[rng.integers(0, n, size=1)] = 1.5
    return preds


def record_binary(store: dict, rng: np.random.Generator) -> None:
    for case, (form, dtype) in BINARY.items():
        precision, recall = paddle.metric.Precision(), paddle.metric.Recall()
        for b, n in enumerate(BATCHES):
            preds = binary_preds(rng, n).reshape((n, 1) if form == "col" else (n,))
            label = labels(rng, n, 2, form, dtype)
            key = f"Binary/{case}/{b}"
            store[f"{key}/preds"], store[f"{key}/labels"] = preds, label
            as_tensor = b % 2 == 1  # alternate NumPy and Tensor inputs
            args = (paddle.to_tensor(preds), paddle.to_tensor(label)) if as_tensor else (preds, label)
            precision.update(*args)
            recall.update(*args)
            store[f"{key}/precision"] = np.array([precision.tp, precision.fp, precision.accumulate()], "float64")
            store[f"{key}/recall"] = np.array([recall.tp, recall.fn, recall.accumulate()], "float64")


def record_auc(store: dict, rng: np.random.Generator) -> None:
    for case, (curve, thresholds, dtype, form) in AUC.items():
        m = paddle.metric.Auc(curve=curve, num_thresholds=thresholds)
        for b, n in enumerate(BATCHES):
            p1 = rng.random(n)
            p1[:3] = [0.0, 1.0, 3 / thresholds if thresholds > 3 else 0.5]  # bin edges
            preds = np.stack([1 - p1, p1], axis=1).astype(dtype)
            label = labels(rng, n, 2, form)
            m.update(preds, paddle.to_tensor(label) if b == 1 else label)
            key = f"Auc/{case}/{b}"
            store[f"{key}/preds"], store[f"{key}/labels"] = preds, label
            store[f"{key}/stat_pos"], store[f"{key}/stat_neg"] = m._stat_pos.copy(), m._stat_neg.copy()
            store[f"{key}/accumulate"] = np.array(m.accumulate(), "float64")


def record_accuracy_function(store: dict, rng: np.random.Generator) -> None:
    for case, (k, dtype, label_dtype, classes) in ACCURACY_FN.items():
        n = 11
        x = rng.random((n, classes)).astype(dtype)
        high = classes + 3 if case.endswith("out_of_range") else classes
        label = rng.integers(0, high, size=(n, 1)).astype(label_dtype)
        correct = paddle.to_tensor([5], dtype="int32")
        total = paddle.to_tensor([7], dtype="int32")
        acc = paddle.metric.accuracy(paddle.to_tensor(x), paddle.to_tensor(label), k=k, correct=correct, total=total)
        key = f"accuracy/{case}"
        store[f"{key}/input"], store[f"{key}/label"] = x, label
        store[f"{key}/acc"], store[f"{key}/correct"], store[f"{key}/total"] = (
            acc.numpy(),
            correct.numpy(),
            total.numpy(),
        )


def main() -> int:
    store: dict = {}
    rng = np.random.default_rng(20250331)
    record_accuracy(store, rng)
    record_binary(store, rng)
    record_auc(store, rng)
    record_accuracy_function(store, rng)
    store["paddle_version"] = np.array(paddle.__version__)
    np.savez_compressed(OUT, **store)
    print(f"recorded {len(store)} arrays into {OUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
