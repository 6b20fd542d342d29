"""Loss layers: hold the options, call the functional loss."""
from __future__ import annotations

from typing import Callable, Optional

from ...autograd.tensor import Tensor
from .. import functional as F
from ..functional._util import check_reduction
from ..layer import Layer


class _Loss(Layer):
    def __init__(self, reduction: str) -> None:
        super().__init__()
        check_reduction(type(self).__name__, reduction)
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.mse_loss(input, label, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def __init__(self, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.l1_loss(input, label, self.reduction)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy (see :func:`minidp.nn.functional.cross_entropy`)."""

    def __init__(self, weight: Optional[Tensor] = None, ignore_index: int = -100, reduction: str = "mean",
                 soft_label: bool = False, axis: int = -1, use_softmax: bool = True,
                 label_smoothing: float = 0.0, name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.soft_label, self.axis, self.use_softmax = soft_label, axis, use_softmax
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.cross_entropy(input, label, self.weight, self.ignore_index, self.reduction, self.soft_label,
                               self.axis, self.use_softmax, self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities."""

    def __init__(self, weight: Optional[Tensor] = None, ignore_index: int = -100, reduction: str = "mean",
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.nll_loss(input, label, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross-entropy on logits."""

    def __init__(self, weight: Optional[Tensor] = None, reduction: str = "mean", pos_weight: Optional[Tensor] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, logit: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction, self.pos_weight)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (see :func:`minidp.nn.functional.binary_cross_entropy`)."""

    def __init__(self, weight: Optional[Tensor] = None, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class SmoothL1Loss(_Loss):
    """Huber loss (or smooth L1 with ``is_huber=False``)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0, is_huber: bool = True,
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.delta, self.is_huber = delta, is_huber

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, label, self.reduction, self.delta, self.is_huber)


class KLDivLoss(Layer):
    """Kullback-Leibler divergence; ``reduction`` may also be 'batchmean'."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"KLDivLoss: reduction must be 'mean', 'sum', 'none' or 'batchmean', got {reduction!r}")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(_Loss):
    """max(0, -label (input - other) + margin)."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Tensor, other: Tensor, label: Tensor) -> Tensor:
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for label 1, max(0, margin - x) for label -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, label, self.margin, self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos for similar pairs, max(0, cos - margin) for dissimilar ones."""

    def __init__(self, margin: float = 0, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, label: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, label, self.margin, self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x))."""

    def __init__(self, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.soft_margin_loss(input, label, self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """Per-sample mean of the per-class logistic losses."""

    def __init__(self, weight: Optional[Tensor] = None, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_label_soft_margin_loss(input, label, self.weight, self.reduction)


class MultiMarginLoss(_Loss):
    """Multi-class hinge loss."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None, reduction: str = "mean",
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.p, self.margin, self.weight = p, margin, weight

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_margin_loss(input, label, self.p, self.margin, self.weight, self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, epsilon: float = 1e-06, swap: bool = False,
                 reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.margin, self.p, self.epsilon, self.swap = margin, p, epsilon, swap

    def forward(self, input: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(input, positive, negative, self.margin, self.p, self.epsilon, self.swap,
                                     self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target."""

    def __init__(self, log_input: bool = True, full: bool = False, epsilon: float = 1e-08, reduction: str = "mean",
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.epsilon = log_input, full, epsilon

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.poisson_nll_loss(input, label, self.log_input, self.full, self.epsilon, self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target with a predicted variance."""

    def __init__(self, full: bool = False, epsilon: float = 1e-06, reduction: str = "mean",
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.full, self.epsilon = full, epsilon

    def forward(self, input: Tensor, label: Tensor, variance: Tensor) -> Tensor:
        return F.gaussian_nll_loss(input, label, variance, self.full, self.epsilon, self.reduction)


class HuberLoss(SmoothL1Loss):
    """Huber loss: 0.5 d^2 inside ``delta``, delta (|d| - delta / 2) outside (same options as SmoothL1Loss)."""


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (pairwise L2 by default)."""

    def __init__(self, distance_function: Optional[Callable] = None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, input: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(input, positive, negative, self.distance_function, self.margin,
                                                   self.swap, self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over listed target classes."""

    def __init__(self, reduction: str = "mean", name: Optional[str] = None) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_label_margin_loss(input, label, self.reduction)


class CTCLoss(Layer):
    """Connectionist temporal classification loss; ``forward(log_probs, labels, input_lengths,
    label_lengths, norm_by_times=False)`` (see :func:`minidp.nn.functional.ctc_loss`)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__()
        check_reduction("CTCLoss", reduction)
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs: Tensor, labels: Tensor, input_lengths: Tensor, label_lengths: Tensor,
                norm_by_times: bool = False) -> Tensor:
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction, norm_by_times,
                          self.zero_infinity)
