"""Plain stochastic gradient descent."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from . import backend, kernels
from . import precision
from .lr import LRScheduler
from .optimizer import Optimizer, _Slot


class SGD(Optimizer):
    """``p -= lr * (grad + weight_decay * p)``.

    ``multi_precision=True`` keeps a float32 master weight for each float16/bfloat16 parameter
    (see :mod:`minidp.core.precision`). On the GPU every parameter sharing a dtype and a
    learning rate is updated by one launch of ``minidp/core/kernels/sgd_momentum.cu``, bit for bit
    as the per-parameter path except for float32 subnormals, which the GPU flushes to zero.
    """

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {}, multi_precision)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data = slot.param._data
        p = precision.working_param(data, slot.master)
        if p is data:  # updated in place, in its own dtype
            p -= grad * lr
            return
        p -= grad.astype(p.dtype) * lr
        data[...] = p

    def _update_on_device(self, pending: list, lr: float) -> None:
        launches: dict = {}
        for slot, grad in pending:
            if not slot.ready:
                self._prepare(slot)
            data = slot.param._data
            tables = launches.setdefault((data.dtype, lr * slot.lr_ratio, slot.weight_decay), ([], [], []))
            grad = backend.get_array_module(data).ascontiguousarray(grad, dtype=data.dtype)
            for table, array in zip(tables, (data, grad, slot.master)):
                table.append(array)
        for (_, slot_lr, weight_decay), (params, grads, masters) in launches.items():
            kernels.sgd(params, grads, masters=masters, lr=slot_lr, weight_decay=weight_decay)
