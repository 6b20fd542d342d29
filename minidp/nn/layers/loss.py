"""Loss layers: hold the options, call the functional loss."""
from __future__ import annotations

from typing import Optional

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
                 name: Optional[str] = None) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.soft_label, self.axis, self.use_softmax = soft_label, axis, use_softmax

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.cross_entropy(input, label, self.weight, self.ignore_index, self.reduction, self.soft_label,
                               self.axis, self.use_softmax)


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
