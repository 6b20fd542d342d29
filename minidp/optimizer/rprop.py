"""Rprop (resilient backpropagation: per-element step sizes driven by gradient signs), Paddle's form."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

from ..core import backend
from .lr import LRScheduler
from ..core.optimizer import Optimizer, _Slot


class Rprop(Optimizer):
    """Each element keeps its own step size (``learning_rates``, starting at the learning rate)
    and its previous gradient (``prevs``). Where the gradient kept its sign the step grows by
    ``etas[1]``, where it flipped it shrinks by ``etas[0]`` and that element does not move this
    step (its stored gradient becomes 0); step sizes stay within ``learning_rate_range``; then
    ``p -= sign(g) * step``. Rprop takes no weight decay, as in Paddle.
    """

    _array_states = ("prevs", "learning_rates")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        learning_rate_range: Sequence[float] = (1e-05, 50),
        parameters: Optional[Iterable] = None,
        etas: Sequence[float] = (0.5, 1.2),
        grad_clip: Any = None,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        low, high = (float(v) for v in learning_rate_range)
        if not 0 < low <= high:
            raise ValueError(
                f"Rprop: learning_rate_range must be (min, max) with 0 < min <= max, got {tuple(learning_rate_range)}"
            )
        shrink, grow = (float(v) for v in etas)
        if not 0 < shrink < 1 < grow:
            raise ValueError(
                f"Rprop: etas must be (decrease, increase) with 0 < decrease < 1 < increase, got {tuple(etas)}"
            )
        self._range, self._etas = (low, high), (shrink, grow)
        super().__init__(learning_rate, parameters, None, grad_clip, {})

    def _init_state(self, slot: _Slot) -> dict:
        data = slot.param._data
        xp = backend.get_array_module(data)
        lr = self.get_lr() * slot.lr_ratio
        state = {}
        state["prevs"] = xp.zeros_like(data)
        state["learning_rates"] = xp.full_like(data, lr)
        return state

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state = slot.param._data, slot.state
        xp = backend.get_array_module(data)
        prevs, steps = state["prevs"], state["learning_rates"]
        product = grad * prevs
        shrink, grow = self._etas
        steps *= xp.where(product > 0, grow, xp.where(product < 0, shrink, 1.0)).astype(data.dtype)
        xp.clip(steps, self._range[0], self._range[1], out=steps)
        grad = xp.where(product < 0, 0, grad).astype(data.dtype)
        data -= xp.sign(grad) * steps
        prevs[...] = grad
