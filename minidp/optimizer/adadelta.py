"""Adadelta with Paddle's update (scaled by the learning rate, as Paddle does)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.adam import moving_average_of_squares
from ..core.optimizer import Optimizer, _Slot, check_non_negative, check_unit_interval


class Adadelta(Optimizer):
    """Per step::

        avg_squared_grad   = rho * avg_squared_grad + (1 - rho) * g * g
        update             = -sqrt((avg_squared_update + epsilon) / (avg_squared_grad + epsilon)) * g
        avg_squared_update = rho * avg_squared_update + (1 - rho) * update * update
        p                 += lr * update

    Paddle names the states ``_avg_squared_grad`` and ``_avg_squared_update`` (leading
    underscore included), so its checkpoints hold e.g. ``w__avg_squared_grad_0``. A group may
    override ``rho`` and ``epsilon``.
    """

    _array_states = ("_avg_squared_grad", "_avg_squared_update")
    _hyper_names = ("rho", "epsilon")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        epsilon: float = 1e-06,
        rho: float = 0.95,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            learning_rate,
            parameters,
            weight_decay,
            grad_clip,
            {
                "rho": check_unit_interval("Adadelta", "rho", rho, closed_high=True),
                "epsilon": check_non_negative("Adadelta", "epsilon", epsilon),
            },
        )

    def _init_state(self, slot: _Slot) -> dict:
        return self._arrays_like_param(slot, zeros=self._array_states)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        xp = backend.get_array_module(data)
        rho, epsilon = hyper["rho"], hyper["epsilon"]
        squared_grad, squared_update = state["_avg_squared_grad"], state["_avg_squared_update"]
        moving_average_of_squares(squared_grad, grad, rho)
        update = -xp.sqrt((squared_update + epsilon) / (squared_grad + epsilon)) * grad
        moving_average_of_squares(squared_update, update, rho)
        data += lr * update
