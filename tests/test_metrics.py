"""minidp/metric/metrics.py: Accuracy, Precision, Recall, Auc and accuracy() against the values that
Paddle 3.3.1 gave on the same batches (tests/fixtures/paddle_metric.npz, written by
tools/record_paddle_metric.py), the Metric protocol, the errors, and a data-parallel evaluation on 2
and 3 processes that all-gathers the ``compute`` outputs and trims the sampler's padding, as
Paddle's Model does, and gets the single-process values."""

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import minidp
import minidp.distributed as dist
from dist_utils import run_workers
from minidp.io import DataLoader, DistributedBatchSampler, TensorDataset
from minidp.metric import Accuracy, Auc, Metric, Precision, Recall, accuracy

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "paddle_metric.npz")
GLOO = {"PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_PG_TIMEOUT": "30000"}


def cases(kind: str) -> list:
    """The case ids recorded under ``kind`` (``Accuracy``, ``Binary``, ``Auc``, ``accuracy``)."""
    return sorted({m.group(1) for key in FIXTURE.files if (m := re.match(rf"{kind}/([^/]+)/", key))})


def batches(prefix: str) -> list:
    """The recorded batches of one case, each a dict of its arrays."""
    found = []
    while any(key.startswith(f"{prefix}/{len(found)}/") for key in FIXTURE.files):
        head = f"{prefix}/{len(found)}/"
        found.append({key[len(head) :]: FIXTURE[key] for key in FIXTURE.files if key.startswith(head)})
    return found


def test_the_fixture_comes_from_paddle_3_3_1():
    assert str(FIXTURE["paddle_version"]) == "3.3.1"
    assert len(cases("Accuracy")) == 5 and len(cases("Auc")) == 5 and len(cases("accuracy")) == 4


@pytest.mark.parametrize("case", cases("Accuracy"))
def test_accuracy_matches_paddle(case):
    topk = {"top1_col": (1,), "top15_vec": (1, 5), "top23_onehot_named": (2, 3), "top12_seq": (1, 2), "top11": (1, 1)}
    m = Accuracy(topk=topk[case], name="a" if case.endswith("named") else None)
    assert m.name() == json.loads(str(FIXTURE[f"Accuracy/{case}/name"]))
    for i, b in enumerate(batches(f"Accuracy/{case}")):
        correct = m.compute(minidp.to_tensor(b["pred"]), minidp.to_tensor(b["label"]))
        assert correct.dtype == np.float32
        np.testing.assert_array_equal(correct.numpy(), b["correct"])
        step = m.update(correct if i % 2 else correct.numpy())  # a Tensor or a NumPy array
        assert isinstance(step, float) == (len(m.topk) == 1)
        np.testing.assert_allclose(step, b["update"], rtol=1e-15)
        np.testing.assert_allclose(m.accumulate(), b["accumulate"], rtol=1e-15)
    m.reset()
    assert m.accumulate() == ([0.0] * len(m.topk) if len(m.topk) > 1 else 0.0)


@pytest.mark.parametrize("case", cases("Binary"))
def test_precision_and_recall_match_paddle(case):
    precision, recall = Precision(), Recall()
    assert (precision.name(), recall.name(), Precision("p").name()) == ("precision", "recall", "p")
    for i, b in enumerate(batches(f"Binary/{case}")):
        args = (minidp.to_tensor(b["preds"]), minidp.to_tensor(b["labels"])) if i % 2 else (b["preds"], b["labels"])
        assert precision.update(*args) is None and recall.update(*args) is None
        assert [precision.tp, precision.fp] == b["precision"][:2].tolist()
        assert [recall.tp, recall.fn] == b["recall"][:2].tolist()
        assert precision.accumulate() == b["precision"][2] and recall.accumulate() == b["recall"][2]
    precision.reset(), recall.reset()
    assert (precision.tp, precision.fp, recall.tp, recall.fn, precision.accumulate()) == (0, 0, 0, 0, 0.0)


def test_precision_rounds_half_up_and_recall_half_to_even():
    precision, recall = Precision(), Recall()
    precision.update(np.array([0.5, 2.5]), np.array([1, 1]))
    recall.update(np.array([0.5, 1.5]), np.array([1, 1]))
    assert (precision.tp, precision.fp, recall.tp, recall.fn) == (1, 0, 0, 2)


@pytest.mark.parametrize("case", cases("Auc"))
def test_auc_matches_paddle(case):
    curve, thresholds = case.split("_")[:2]
    m = Auc(curve=curve.upper(), num_thresholds=int(thresholds))
    assert m.name() == "auc" and m.accumulate() == 0.0
    for i, b in enumerate(batches(f"Auc/{case}")):
        m.update(b["preds"], minidp.to_tensor(b["labels"]) if i == 1 else b["labels"])
        np.testing.assert_array_equal(m._stat_pos, b["stat_pos"])
        np.testing.assert_array_equal(m._stat_neg, b["stat_neg"])
        assert m.accumulate() == b["accumulate"]
    m.reset()
    assert m.accumulate() == 0.0 and not m._stat_pos.any()


def test_auc_of_a_perfect_and_of_a_reversed_ranking():
    p1 = np.array([0.1, 0.2, 0.8, 0.9])
    preds = np.stack([1 - p1, p1], axis=1)
    perfect, reversed_ = Auc(), Auc()
    perfect.update(preds, np.array([0, 0, 1, 1]))
    reversed_.update(preds, np.array([1, 1, 0, 0]))
    assert (perfect.accumulate(), reversed_.accumulate()) == (1.0, 0.0)


@pytest.mark.parametrize("case", cases("accuracy"))
def test_accuracy_function_matches_paddle(case):
    key = f"accuracy/{case}"
    k = int(re.match(r"k(\d)", case).group(1))
    correct, total = minidp.to_tensor([5], dtype="int32"), minidp.to_tensor([7], dtype="int32")
    acc = accuracy(
        minidp.to_tensor(FIXTURE[f"{key}/input"]), minidp.to_tensor(FIXTURE[f"{key}/label"]), k, correct, total
    )
    assert acc.shape == [] and acc.dtype == np.float32 and acc.stop_gradient
    assert acc.numpy() == FIXTURE[f"{key}/acc"]
    for got, name in ((correct, "correct"), (total, "total")):
        assert got.shape == [] and got.dtype == np.int32 and got.numpy() == FIXTURE[f"{key}/{name}"]


def test_the_metric_base_class_is_abstract_and_compute_passes_arguments_through():
    with pytest.raises(TypeError, match="abstract"):
        Metric()

    class Mean(Metric):
        def reset(self):
            self.values = []

        def update(self, values, weights):
            self.values.extend(np.asarray(values) * np.asarray(weights))

        def accumulate(self):
            return float(np.mean(self.values))

        def name(self):
            return "mean"

    m = Mean()
    m.reset()
    args = m.compute([1.0, 2.0], [1.0, 3.0])
    assert args == ([1.0, 2.0], [1.0, 3.0])
    m.update(*args)
    assert m.accumulate() == 3.5 and isinstance(minidp.metric.Accuracy(), Metric)


def test_paddle_namespace():
    assert minidp.metric.__all__ == ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]
    assert minidp.metric.Auc is Auc


X = minidp.to_tensor(np.random.default_rng(0).random((3, 4)).astype("float32"))
Y = minidp.to_tensor(np.array([[0], [1], [2]]))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: Accuracy(topk=3), TypeError, "topk must be a non-empty list or tuple"),
        (lambda: Accuracy(topk=(0, 1)), ValueError, "at least 1"),
        (lambda: Accuracy(topk=(1.5,)), TypeError, "each k of topk must be an int"),
        (lambda: Accuracy().compute(X.numpy(), Y), TypeError, "pred must be a Tensor"),
        (lambda: Accuracy(topk=(5,)).compute(X, Y), ValueError, "pred has 4 classes"),
        (lambda: Accuracy().compute(X, Y[:2]), ValueError, "label has 2 samples"),
        (lambda: Accuracy().update([[1.0]]), TypeError, "correct must be a Tensor or a numpy.ndarray"),
        (lambda: Accuracy(topk=(2,)).update(np.ones((3, 1))), ValueError, r"shape \[\.\.\., 2\]"),
        (lambda: Precision().update([0.1], np.array([1])), ValueError, "preds must be a Tensor or a numpy"),
        (lambda: Recall().update(np.array([0.1]), [1]), ValueError, "labels must be a Tensor or a numpy"),
        (lambda: Precision().update(np.ones((2, 2)), np.ones(2)), ValueError, "one value per sample"),
        (lambda: Recall().update(np.ones(3), np.ones(2)), ValueError, "one value per sample"),
        (lambda: Auc(curve="roc"), ValueError, "curve must be 'ROC' or 'PR'"),
        (lambda: Auc(num_thresholds=0), ValueError, "positive int"),
        (lambda: Auc(num_thresholds=2.0), TypeError, "num_thresholds must be an int"),
        (lambda: Auc().update(np.ones((2, 2)), [0, 1]), ValueError, "labels must be a Tensor or a numpy"),
        (lambda: Auc().update(np.ones(2), np.ones(2)), ValueError, r"preds must have shape \[2, 2\]"),
        (lambda: Auc().update(np.array([[0.0, 1.5]]), np.ones(1)), ValueError, r"probabilities in \[0, 1\]"),
        (lambda: Auc().update(np.array([[0.0, -0.1]]), np.ones(1)), ValueError, r"probabilities in \[0, 1\]"),
        (lambda: accuracy(X.numpy(), Y), TypeError, "input must be a Tensor"),
        (lambda: accuracy(X, Y.reshape([-1])), ValueError, r"label \[N, 1\]"),
        (lambda: accuracy(X, Y.astype("float32")), ValueError, "int32 or int64"),
        (lambda: accuracy(X, Y, k=5), ValueError, "k must be in"),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


N_SAMPLES, BATCH = 23, 4  # 23 samples: the sampler pads every world size here, so trimming matters


def evaluation_data() -> TensorDataset:
    """Fixed samples: class scores [4], two-class probabilities [2], a class label and a binary one."""
    rng = np.random.default_rng(7)
    scores = rng.random((N_SAMPLES, 4)).astype("float32")
    p1 = rng.random(N_SAMPLES)
    probs = np.stack([1 - p1, p1], axis=1).astype("float32")
    label = rng.integers(0, 4, (N_SAMPLES, 1))
    binary = rng.integers(0, 2, (N_SAMPLES, 1))
    return TensorDataset([minidp.to_tensor(a) for a in (scores, probs, label, binary)])


def evaluate(loader, gather) -> dict:
    """Run each metric over ``loader``: ``compute``, then ``gather`` (the identity on one process),
    then ``update``; return what ``accumulate`` gives."""
    metrics = {
        "acc": Accuracy(topk=(1, 3)),
        "precision": Precision(),
        "recall": Recall(),
        "auc": Auc(num_thresholds=63),
    }
    seen = 0
    for scores, probs, label, binary in loader:
        inputs = {"acc": (scores, label), "precision": (probs[:, 1:], binary), "recall": (probs[:, 1:], binary)}
        inputs["auc"] = (probs, binary)
        keep = None
        for key, m in metrics.items():
            outs = m.compute(*inputs[key])
            outs = [gather(o) for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
            if keep is None:  # what is left of the dataset: the rest of the last global batch is padding
                keep = min(outs[0].shape[0], N_SAMPLES - seen)
                seen += keep
            m.update(*[o[:keep].numpy() for o in outs])
    return {key: m.accumulate() for key, m in metrics.items()} | {"samples": metrics["acc"].count[0]}


def all_gather_rows(x):
    """Every rank's ``x`` stacked along the batch axis, in rank order."""
    parts = []
    dist.all_gather(parts, x)
    return minidp.concat(parts, axis=0)


def sharded_evaluation_worker() -> dict:
    dist.init_parallel_env()
    data = evaluation_data()
    loader = DataLoader(data, batch_sampler=DistributedBatchSampler(data, batch_size=BATCH))
    return evaluate(loader, all_gather_rows)


@lru_cache(maxsize=None)
def single_process() -> dict:
    return evaluate(DataLoader(evaluation_data(), batch_size=BATCH), lambda x: x)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("world_size", [2, 3])
def test_data_parallel_evaluation_gives_the_single_process_values(world_size):
    expected = single_process()
    assert expected["samples"] == N_SAMPLES and 0 < expected["auc"] < 1
    for report in run_workers(sharded_evaluation_worker, world_size, timeout=80, env=GLOO):
        assert report == expected
