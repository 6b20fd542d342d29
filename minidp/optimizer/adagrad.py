"""Adagrad with Paddle's update."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.optimizer import Optimizer, _Slot, check_non_negative


class Adagrad(Optimizer):
    """``moment += g * g``; ``p -= lr * g / (sqrt(moment) + epsilon)``, with ``moment`` starting at
    ``initial_accumulator_value``. A group may override ``epsilon``."""

    _array_states = ("moment",)
    _hyper_names = ("epsilon",)

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler],
        epsilon: float = 1e-06,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        name: Optional[str] = None,
        initial_accumulator_value: float = 0.0,
    ) -> None:
        self._initial_accumulator_value = check_non_negative(
            "Adagrad", "initial_accumulator_value", initial_accumulator_value
        )
        super().__init__(
            learning_rate,
            parameters,
            weight_decay,
            grad_clip,
            {"epsilon": check_non_negative("Adagrad", "epsilon", epsilon)},
        )

    def _init_state(self, slot: _Slot) -> dict:
        data = slot.param._data
        xp = backend.get_array_module(data)
        state = {}
        state["moment"] = xp.full_like(data, self._initial_accumulator_value)
        return state

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state = slot.param._data, slot.state
        xp = backend.get_array_module(data)
        moment = state["moment"]
        moment += grad * grad
        data -= lr * grad / (xp.sqrt(moment) + slot.hyper["epsilon"])
