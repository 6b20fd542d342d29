"""Plain stochastic gradient descent."""
from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from .. import backend
from . import precision
from .lr import LRScheduler
from .optimizer import Optimizer, _Slot


class SGD(Optimizer):
    """``p -= lr * (grad + weight_decay * p)``.

    ``multi_precision=True`` keeps a float32 master weight for each float16/bfloat16 parameter
    (see :mod:`minidp.optimizer.precision`).
    """

    def __init__(self, learning_rate: Union[float, LRScheduler] = 0.001, parameters: Optional[Iterable] = None,
                 weight_decay: Optional[float] = None, grad_clip: Any = None, multi_precision: bool = False,
                 name: Optional[str] = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {}, multi_precision)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        if not slot.ready:
            self._prepare(slot)
        data = slot.param._data
        p = precision.working_param(data, slot.master)
        p -= grad.astype(p.dtype, copy=False) * lr
        precision.store_param(data, p)
