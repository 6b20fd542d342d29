"""Evaluation metrics with Paddle's protocol: ``compute`` turns a batch's outputs and labels into
the metric's statistics, ``update`` adds them to running totals (and returns the batch's value),
``accumulate`` gives the value over everything seen since ``reset``, and ``name`` labels it.

``compute`` may run ops on the device; ``update`` takes Tensors or NumPy arrays and keeps its totals
on the host, so that a data-parallel evaluation can all-gather the ``compute`` outputs of every
rank, concatenate them and call ``update`` once with the whole global batch (what Paddle's
``Model`` does). The totals are sums, so the result equals one process's over all the samples.

The values follow Paddle 3.3.1, including its quirks: Precision rounds half up (0.5 counts as 1)
while Recall rounds half to even (0.5 counts as 0), and ``Auc(curve='PR')`` returns the area
under the ROC curve, as Paddle's does. Bad input raises where Paddle raises, with errors that name
the argument and the fix.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import backend
from ..core.op_util import as_int, check_tensor, wrap
from ..core.tensor import Tensor
from ..ops.reduction import argmax
from ..ops.search import argsort, topk

__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]


def _host_array(where: str, arg: str, value: Any, error: type = TypeError) -> np.ndarray:
    """``value`` (a Tensor or a NumPy array) as a NumPy array; anything else raises ``error``."""
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise error(
        f"{where}: {arg} must be a Tensor or a numpy.ndarray, got {type(value).__name__}; "
        "convert it with numpy.asarray or minidp.to_tensor"
    )


def _one_per_sample(where: str, arg: str, array: np.ndarray, samples: int) -> np.ndarray:
    """``array`` as a vector of one value per sample (shape [N] or [N, 1] and the like)."""
    if array.ndim == 0 or array.shape[0] != samples or array.size != samples:
        raise ValueError(
            f"{where}: {arg} must hold one value per sample (shape [{samples}] or [{samples}, 1]), "
            f"got shape {list(array.shape)}"
        )
    return array.reshape(samples)


class Metric(abc.ABC):
    """The base of every metric: subclasses define ``reset``, ``update``, ``accumulate`` and ``name``.

    ``compute(*outputs_and_labels)`` prepares what ``update`` takes; by default it passes its
    arguments through unchanged. Metrics written for Paddle subclass this one unchanged.
    """

    def __init__(self) -> None:
        pass

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget everything seen so far."""

    @abc.abstractmethod
    def update(self, *args: Any) -> Any:
        """Add one batch's statistics (the outputs of ``compute``) to the running totals."""

    @abc.abstractmethod
    def accumulate(self) -> Any:
        """The metric over every batch given to ``update`` since the last ``reset``."""

    @abc.abstractmethod
    def name(self) -> Any:
        """The metric's name (what logs and ``Model`` show)."""

    def compute(self, *args: Any) -> Any:
        """What ``update`` takes, from a batch's model outputs and labels (here: the arguments as given)."""
        return args


class Accuracy(Metric):
    """Top-k classification accuracy, for each k in ``topk``.

    ``compute(pred, label)`` gives the float32 mask of shape [..., max(topk)] that says whether each
    of the best classes is the label; labels are class indices ([N] or [..., 1]) or one-hot
    ([..., num_classes]). ``update`` and ``accumulate`` return a float for one k, a list for several;
    ``name()`` is ``[name]`` when the largest k is 1, else ``['<name>_top<k>', ...]``.
    """

    def __init__(self, topk: Sequence[int] = (1,), name: str | None = None) -> None:
        super().__init__()
        if not isinstance(topk, (list, tuple)) or not topk:
            raise TypeError(f"Accuracy: topk must be a non-empty list or tuple of ints such as (1, 5), got {topk!r}")
        self.topk = topk
        for k in topk:
            if as_int(k, "Accuracy: each k of topk") < 1:
                raise ValueError(f"Accuracy: each k of topk must be at least 1, got {topk!r}")
        self.maxk = max(topk)
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in topk] if self.maxk != 1 else [name]
        self.reset()

    def compute(self, pred: Tensor, label: Tensor, *args: Any) -> Tensor:
        """The float32 mask [..., maxk]: 1 where the i-th best class of ``pred`` is the label."""
        check_tensor("Accuracy.compute", "pred", pred)
        check_tensor("Accuracy.compute", "label", label)
        if pred.shape[-1] < self.maxk:
            raise ValueError(
                f"Accuracy.compute: pred has {pred.shape[-1]} classes but topk asks for the best {self.maxk}"
            )
        best = argsort(pred, descending=True)[..., : self.maxk]
        if label.ndim == 1 or (label.ndim == 2 and label.shape[-1] == 1):
            label = label.reshape([-1, 1])
        elif label.shape[-1] != 1:
            label = argmax(label, axis=-1, keepdim=True)
        if label.shape[0] != best.shape[0]:
            raise ValueError(
                f"Accuracy.compute: label has {label.shape[0]} samples but pred has {best.shape[0]}; "
                "give one label per prediction"
            )
        return (best == label.astype(best.dtype)).astype("float32")

    def update(self, correct: Any, *args: Any) -> float | list[float]:
        """Add the mask from ``compute`` (a Tensor or NumPy array) to the totals; return the batch's accuracy."""
        correct = _host_array("Accuracy.update", "correct", correct)
        if correct.ndim == 0 or correct.shape[-1] < self.maxk:
            raise ValueError(
                f"Accuracy.update: correct must have shape [..., {self.maxk}] (the output of compute), "
                f"got {list(correct.shape)}"
            )
        samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(correct[..., :k].sum())
            accs.append(hits / samples if samples else 0.0)
            self.total[i] += hits
            self.count[i] += samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self) -> None:
        """Zero the counts of correct and seen samples."""
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self) -> float | list[float]:
        """The accuracy over every sample since ``reset`` (0.0 before any)."""
        accs = [t / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return accs[0] if len(self.topk) == 1 else accs

    def name(self) -> list[str]:
        """One name per k (a single one when the largest k is 1)."""
        return self._name


class _BinaryMetric(Metric):
    """What Precision and Recall share: a name, and one prediction and one label per sample."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self.reset()

    def _vectors(self, preds: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        """``preds`` and ``labels`` (Tensors or NumPy arrays, [N] or [N, 1]) as two host vectors."""
        where = f"{type(self).__name__}.update"
        preds = _host_array(where, "preds", preds, ValueError)
        labels = _host_array(where, "labels", labels, ValueError)
        samples = labels.shape[0] if labels.ndim else 1
        return _one_per_sample(where, "preds", preds, samples), _one_per_sample(where, "labels", labels, samples)

    def name(self) -> str:
        """The name given at construction."""
        return self._name


class Precision(_BinaryMetric):
    """Binary precision tp / (tp + fp); a prediction counts as positive when it rounds half up to 1."""

    def __init__(self, name: str = "precision") -> None:
        super().__init__(name)

    def update(self, preds: Any, labels: Any) -> None:
        """Count true and false positives of a batch: ``preds`` are probabilities, ``labels`` 0 or 1,
        one per sample ([N] or [N, 1]), each a Tensor or a NumPy array."""
        preds, labels = self._vectors(preds, labels)
        positive = np.floor(preds + 0.5).astype("int32") == 1
        right = labels == 1
        self.tp += int(np.count_nonzero(positive & right))
        self.fp += int(np.count_nonzero(positive & ~right))

    def reset(self) -> None:
        """Zero the counts."""
        self.tp = 0
        self.fp = 0

    def accumulate(self) -> float:
        """tp / (tp + fp) since ``reset``, or 0.0 when nothing was predicted positive."""
        predicted = self.tp + self.fp
        return self.tp / predicted if predicted else 0.0


class Recall(_BinaryMetric):
    """Binary recall tp / (tp + fn); predictions are rounded half to even (0.5 counts as 0), as in Paddle."""

    def __init__(self, name: str = "recall") -> None:
        super().__init__(name)

    def update(self, preds: Any, labels: Any) -> None:
        """Count true positives and false negatives of a batch: ``preds`` are probabilities,
        ``labels`` 0 or 1, one per sample ([N] or [N, 1]), each a Tensor or a NumPy array."""
        preds, labels = self._vectors(preds, labels)
        hit = np.rint(preds).astype("int32") == 1
        relevant = labels == 1
        self.tp += int(np.count_nonzero(relevant & hit))
        self.fn += int(np.count_nonzero(relevant & ~hit))

    def reset(self) -> None:
        """Zero the counts."""
        self.tp = 0
        self.fn = 0

    def accumulate(self) -> float:
        """tp / (tp + fn) since ``reset``, or 0.0 when no label was positive."""
        relevant = self.tp + self.fn
        return self.tp / relevant if relevant else 0.0


class Auc(Metric):
    """Area under the ROC curve of a binary classifier, from histograms of the predicted probabilities.

    Each sample's probability of class 1 (``preds[:, 1]``) falls in one of ``num_thresholds + 1``
    equal bins; ``accumulate`` sweeps the bins from the top and sums trapezoids. ``curve`` is
    'ROC' or 'PR', but like Paddle 3.3.1 both compute the ROC area.
    """

    def __init__(self, curve: str = "ROC", num_thresholds: int = 4095, name: str = "auc") -> None:
        super().__init__()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Auc: curve must be 'ROC' or 'PR', got {curve!r}")
        num_thresholds = as_int(num_thresholds, "Auc: num_thresholds")
        if num_thresholds < 1:
            raise ValueError(f"Auc: num_thresholds must be a positive int, got {num_thresholds}")
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._name = name
        self.reset()

    def update(self, preds: Any, labels: Any) -> None:
        """Add a batch: ``preds`` [N, 2] (or more columns) of class probabilities in [0, 1], ``labels``
        [N] or [N, 1] with 0 for negatives and anything else for positives."""
        labels = _host_array("Auc.update", "labels", labels, ValueError)
        preds = _host_array("Auc.update", "preds", preds, ValueError)
        samples = labels.shape[0] if labels.ndim else 1
        labels = _one_per_sample("Auc.update", "labels", labels, samples)
        if preds.ndim != 2 or preds.shape[1] < 2 or preds.shape[0] != samples:
            raise ValueError(
                f"Auc.update: preds must have shape [{samples}, 2] (the probabilities of class 0 and 1 "
                f"for each label), got {list(preds.shape)}"
            )
        scores = preds[:, 1]
        if not np.all((scores >= 0) & (scores <= 1)):
            raise ValueError("Auc.update: preds[:, 1] must be probabilities in [0, 1]; apply softmax or sigmoid first")
        bins = (scores * self._num_thresholds).astype(np.int64)
        size = self._num_thresholds + 1
        positive = labels != 0
        self._stat_pos += np.bincount(bins[positive], minlength=size)
        self._stat_neg += np.bincount(bins[~positive], minlength=size)

    def accumulate(self) -> float:
        """The area under the ROC curve since ``reset`` (0.0 until both classes have been seen)."""
        pos, neg = self._stat_pos[::-1], self._stat_neg[::-1]
        tot_pos = np.cumsum(pos)
        area = float(np.sum(neg * (tot_pos + (tot_pos - pos)) / 2.0))
        n_pos, n_neg = float(tot_pos[-1]), float(neg.sum())
        return area / n_pos / n_neg if n_pos > 0.0 and n_neg > 0.0 else 0.0

    def reset(self) -> None:
        """Empty the histograms."""
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self) -> str:
        """The name given at construction."""
        return self._name


def accuracy(
    input: Tensor,
    label: Tensor,
    k: int = 1,
    correct: Tensor | None = None,
    total: Tensor | None = None,
    name: Any = None,
) -> Tensor:
    """The fraction of rows of ``input`` [N, C] whose ``k`` best classes include ``label`` [N, 1],
    as a float32 0-d Tensor. ``correct`` and ``total``, when given, receive the two int32 counts."""
    check_tensor("accuracy", "input", input)
    check_tensor("accuracy", "label", label)
    if label.ndim != 2 or label.shape[-1] != 1 or input.ndim != 2 or label.shape[0] != input.shape[0]:
        raise ValueError(
            f"accuracy: input must be [N, C] and label [N, 1], got {input.shape} and {label.shape}; "
            "reshape a label vector with label.reshape([-1, 1])"
        )
    if label.dtype.kind not in "iu":
        raise ValueError(f"accuracy: label must hold int32 or int64 class indices, got {label.dtype}")
    indices = topk(input, k)[1]._data
    xp = backend.get_array_module(indices)
    hits = xp.count_nonzero((indices == label._data.astype(indices.dtype)).any(axis=1))
    samples = indices.shape[0]
    for out, count in ((correct, hits), (total, samples)):
        if out is not None:
            check_tensor("accuracy", "correct or total", out)
            out._data = xp.asarray(count, dtype="int32")
    return wrap(xp.asarray(hits / max(samples, 1), dtype="float32"))
