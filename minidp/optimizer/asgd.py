"""ASGD (averaged stochastic gradient descent over the last ``batch_num`` gradients), Paddle's form."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.optimizer import Optimizer, _Slot


class ASGD(Optimizer):
    """Keeps the last ``batch_num`` gradients ``y`` and their sum ``d``; at step m (from 0)::

        i = m % batch_num;  d = d - y[i] + g;  y[i] = g
        p -= lr * d / min(m + 1, batch_num)

    (``g`` includes the L2 term ``weight_decay * p``). ``y`` has shape ``[batch_num, *p.shape]``
    and ``m`` counts the steps, as in Paddle's checkpoints.
    """

    _array_states = ("d", "y")
    _scalar_states = ("m",)

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        batch_num: int = 1,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        if isinstance(batch_num, bool) or not isinstance(batch_num, int) or batch_num <= 0:
            raise ValueError(f"ASGD: batch_num must be a positive int, got {batch_num!r}")
        self._batch_num = batch_num
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {})

    def _state_shape(self, key: str, param: Any) -> tuple:
        shape = tuple(param._data.shape)
        return (self._batch_num,) + shape if key == "y" else shape

    def _init_state(self, slot: _Slot) -> dict:
        data = slot.param._data
        xp = backend.get_array_module(data)
        state = {}
        state["d"] = xp.zeros_like(data)
        state["y"] = xp.zeros((self._batch_num,) + data.shape, dtype=data.dtype)
        state["m"] = 0
        return state

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state = slot.param._data, slot.state
        step = int(state["m"])
        index = step % self._batch_num
        total, history = state["d"], state["y"]
        total -= history[index]
        total += grad
        history[index] = grad
        data -= lr * total / min(step + 1, self._batch_num)
        state["m"] = step + 1
