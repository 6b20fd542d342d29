"""Plain stochastic gradient descent."""
from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from .lr import LRScheduler
from .optimizer import Optimizer


class SGD(Optimizer):
    """``p -= lr * (grad + weight_decay * p)``."""

    def __init__(self, learning_rate: Union[float, LRScheduler] = 0.001, parameters: Optional[Iterable] = None,
                 weight_decay: Optional[float] = None, grad_clip: Any = None, name: Optional[str] = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {})

    def _update(self, slot: Any, grad: Any, lr: float) -> None:
        slot.param._data -= lr * grad
