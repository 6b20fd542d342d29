"""Loss layers: one table row per functional loss; CTCLoss (an extra forward argument) is written out."""

from __future__ import annotations

from typing import Any, Callable

from ...core.tensor import Tensor
from .. import functional as F
from ..functional._util import check_reduction
from ...core.layer import Layer
from .factory import functional_layer

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]


def _check_reduction(layer: str, options: dict) -> dict:
    check_reduction(layer, options["reduction"])
    return options


def _check_kl_reduction(layer: str, options: dict) -> dict:
    if options["reduction"] not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(
            f"{layer}: reduction must be 'mean', 'sum', 'none' or 'batchmean', got {options['reduction']!r}"
        )
    return options


def _loss(name: str, function: Callable, params: dict, doc: str, **options: Any) -> type:
    """A loss layer: its reduction is checked at construction, and repr shows no options (as in Paddle)."""
    return functional_layer(name, function, params, doc, check=_check_reduction, shown=(), **options)


MSELoss = _loss("MSELoss", F.mse_loss, {"reduction": "mean"}, "Mean squared error.", takes_name=False)
L1Loss = _loss("L1Loss", F.l1_loss, {"reduction": "mean"}, "Mean absolute error.")
CrossEntropyLoss = _loss(
    "CrossEntropyLoss",
    F.cross_entropy,
    {
        "weight": None,
        "ignore_index": -100,
        "reduction": "mean",
        "soft_label": False,
        "axis": -1,
        "use_softmax": True,
        "label_smoothing": 0.0,
    },
    "Softmax cross-entropy (see :func:`minidp.nn.functional.cross_entropy`).",
)
NLLLoss = _loss(
    "NLLLoss",
    F.nll_loss,
    {"weight": None, "ignore_index": -100, "reduction": "mean"},
    "Negative log-likelihood of log-probabilities.",
)
BCEWithLogitsLoss = _loss(
    "BCEWithLogitsLoss",
    F.binary_cross_entropy_with_logits,
    {"weight": None, "reduction": "mean", "pos_weight": None},
    "Sigmoid + binary cross-entropy on logits.",
)
BCELoss = _loss(
    "BCELoss",
    F.binary_cross_entropy,
    {"weight": None, "reduction": "mean"},
    "Binary cross-entropy of probabilities (see :func:`minidp.nn.functional.binary_cross_entropy`).",
)
SmoothL1Loss = _loss(
    "SmoothL1Loss",
    F.smooth_l1_loss,
    {"reduction": "mean", "delta": 1.0, "is_huber": True},
    "Huber loss (or smooth L1 with ``is_huber=False``).",
)
KLDivLoss = functional_layer(
    "KLDivLoss",
    F.kl_div,
    {"reduction": "mean", "log_target": False},
    "Kullback-Leibler divergence; ``reduction`` may also be 'batchmean'.",
    check=_check_kl_reduction,
    shown=(),
    takes_name=False,
)
MarginRankingLoss = _loss(
    "MarginRankingLoss",
    F.margin_ranking_loss,
    {"margin": 0.0, "reduction": "mean"},
    "max(0, -label (input - other) + margin).",
)
HingeEmbeddingLoss = _loss(
    "HingeEmbeddingLoss",
    F.hinge_embedding_loss,
    {"margin": 1.0, "reduction": "mean"},
    "x for label 1, max(0, margin - x) for label -1.",
)
CosineEmbeddingLoss = _loss(
    "CosineEmbeddingLoss",
    F.cosine_embedding_loss,
    {"margin": 0, "reduction": "mean"},
    "1 - cos for similar pairs, max(0, cos - margin) for dissimilar ones.",
)
SoftMarginLoss = _loss("SoftMarginLoss", F.soft_margin_loss, {"reduction": "mean"}, "log(1 + exp(-y x)).")
MultiLabelSoftMarginLoss = _loss(
    "MultiLabelSoftMarginLoss",
    F.multi_label_soft_margin_loss,
    {"weight": None, "reduction": "mean"},
    "Per-sample mean of the per-class logistic losses.",
)
MultiMarginLoss = _loss(
    "MultiMarginLoss",
    F.multi_margin_loss,
    {"p": 1, "margin": 1.0, "weight": None, "reduction": "mean"},
    "Multi-class hinge loss.",
)
TripletMarginLoss = _loss(
    "TripletMarginLoss",
    F.triplet_margin_loss,
    {"margin": 1.0, "p": 2.0, "epsilon": 1e-06, "swap": False, "reduction": "mean"},
    "max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance.",
)
PoissonNLLLoss = _loss(
    "PoissonNLLLoss",
    F.poisson_nll_loss,
    {"log_input": True, "full": False, "epsilon": 1e-08, "reduction": "mean"},
    "Negative log-likelihood of a Poisson target.",
)
GaussianNLLLoss = _loss(
    "GaussianNLLLoss",
    F.gaussian_nll_loss,
    {"full": False, "epsilon": 1e-06, "reduction": "mean"},
    "Negative log-likelihood of a Gaussian target with a predicted variance.",
)
TripletMarginWithDistanceLoss = _loss(
    "TripletMarginWithDistanceLoss",
    F.triplet_margin_with_distance_loss,
    {"distance_function": None, "margin": 1.0, "swap": False, "reduction": "mean"},
    "Triplet loss with any distance function (pairwise L2 by default).",
)


class HuberLoss(SmoothL1Loss):
    """Huber loss: 0.5 d^2 inside ``delta``, delta (|d| - delta / 2) outside (same options as SmoothL1Loss)."""


MultiLabelMarginLoss = _loss(
    "MultiLabelMarginLoss",
    F.multi_label_margin_loss,
    {"reduction": "mean"},
    "Multi-label hinge loss over listed target classes.",
)


class CTCLoss(Layer):
    """Connectionist temporal classification loss; ``forward(log_probs, labels, input_lengths,
    label_lengths, norm_by_times=False)`` (see :func:`minidp.nn.functional.ctc_loss`)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__()
        check_reduction("CTCLoss", reduction)
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(
        self,
        log_probs: Tensor,
        labels: Tensor,
        input_lengths: Tensor,
        label_lengths: Tensor,
        norm_by_times: bool = False,
    ) -> Tensor:
        return F.ctc_loss(
            log_probs,
            labels,
            input_lengths,
            label_lengths,
            self.blank,
            self.reduction,
            norm_by_times,
            self.zero_infinity,
        )
