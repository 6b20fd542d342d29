"""Activation layers: thin wrappers around the activation ops."""
from __future__ import annotations

from typing import Optional

from ...autograd.tensor import Tensor
from .. import functional as F
from ..layer import Layer


class ReLU(Layer):
    """max(x, 0)."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class GELU(Layer):
    """Gaussian error linear unit (exact erf form, or the tanh approximation)."""

    def __init__(self, approximate: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class Tanh(Layer):
    """Hyperbolic tangent."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Layer):
    """Logistic sigmoid."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Softmax(Layer):
    """Softmax along ``axis``."""

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.axis)


class LogSoftmax(Layer):
    """Log-softmax along ``axis``."""

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.axis)
