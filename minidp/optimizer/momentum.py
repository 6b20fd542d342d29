"""SGD with momentum (optionally Nesterov), in Paddle's form."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend, kernels
from ..core import precision
from .lr import LRScheduler
from ..core.optimizer import Optimizer, _Slot


class Momentum(Optimizer):
    """``v = momentum * v + grad``; ``p -= lr * v``, or with Nesterov ``p -= lr * (grad + momentum * v)``.

    ``grad`` includes the L2 term ``weight_decay * p``. A group may override ``momentum``.
    The velocity has the parameter's dtype, or float32 with ``multi_precision=True``, which also
    keeps a float32 master weight for each float16/bfloat16 parameter (as in Paddle). On the GPU
    every parameter sharing dtypes and scalars is updated by one launch of
    ``minidp/core/kernels/sgd_momentum.cu``, bit for bit as the per-parameter path except for
    float32 subnormals, which the GPU flushes to zero.
    """

    _array_states = ("velocity",)
    _hyper_names = ("momentum",)

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        momentum: float = 0.9,
        parameters: Optional[Iterable] = None,
        use_nesterov: bool = False,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        if not isinstance(momentum, (int, float)) or momentum < 0:
            raise ValueError(f"Momentum: momentum must be a non-negative float, got {momentum!r}")
        self._use_nesterov = bool(use_nesterov)
        super().__init__(
            learning_rate, parameters, weight_decay, grad_clip, {"momentum": float(momentum)}, multi_precision
        )

    def _init_state(self, slot: _Slot) -> dict:
        data = slot.param._data
        dtype = data.dtype
        if self._multi_precision and precision.is_sixteen_bit(dtype):
            dtype = precision.FLOAT32
        return {"velocity": backend.get_array_module(data).zeros(data.shape, dtype)}

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, stored = slot.param._data, slot.state["velocity"]
        p = precision.working_param(data, slot.master)
        g = grad.astype(p.dtype, copy=False)
        mu = slot.hyper["momentum"]
        velocity = stored if stored.dtype == p.dtype else stored.astype(p.dtype)
        velocity *= mu
        velocity += g
        if velocity is not stored:
            stored[...] = velocity
        if self._use_nesterov:
            step = mu * velocity
            step += g
        else:
            step = velocity.copy()
        step *= lr
        p -= step
        precision.store_param(data, p)

    def _update_on_device(self, pending: list, lr: float) -> None:
        launches: dict = {}
        for slot, grad in pending:
            if not slot.ready:
                self._prepare(slot)
            data, velocity = slot.param._data, slot.state["velocity"]
            key = (data.dtype, velocity.dtype, lr * slot.lr_ratio, slot.weight_decay, slot.hyper["momentum"])
            tables = launches.setdefault(key, ([], [], [], []))
            grad = backend.get_array_module(data).ascontiguousarray(grad, dtype=data.dtype)
            for table, array in zip(tables, (data, grad, slot.master, velocity)):
                table.append(array)
        for (_, _, slot_lr, weight_decay, momentum), (params, grads, masters, velocities) in launches.items():
            kernels.momentum(
                params,
                grads,
                velocities,
                masters=masters,
                lr=slot_lr,
                momentum=momentum,
                weight_decay=weight_decay,
                nesterov=self._use_nesterov,
            )
