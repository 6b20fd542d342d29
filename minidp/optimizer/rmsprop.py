"""RMSProp with Paddle's update (momentum and the centered variant included)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.adam import moving_average, moving_average_of_squares
from ..core.optimizer import Optimizer, _Slot, check_non_negative, check_unit_interval


class RMSProp(Optimizer):
    """Per step, with ``g`` the gradient (plus the L2 term ``weight_decay * p``)::

        mean_square = rho * mean_square + (1 - rho) * g * g
        mean_grad   = rho * mean_grad + (1 - rho) * g          (centered only)
        momentum    = momentum_coef * momentum + lr * g / sqrt(mean_square - mean_grad**2 + epsilon)
        p          -= momentum

    (without ``centered``, ``mean_grad`` stays zero). A group may override ``rho``, ``epsilon``
    and ``momentum``.
    """

    _array_states = ("momentum", "mean_square", "mean_grad")
    _hyper_names = ("rho", "epsilon", "momentum")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler],
        rho: float = 0.95,
        epsilon: float = 1e-06,
        momentum: float = 0.0,
        centered: bool = False,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        name: Optional[str] = None,
    ) -> None:
        hyper = {
            "rho": check_unit_interval("RMSProp", "rho", rho, closed_high=True),
            "epsilon": check_non_negative("RMSProp", "epsilon", epsilon),
            "momentum": check_non_negative("RMSProp", "momentum", momentum),
        }
        self._centered = bool(centered)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, hyper)

    def _init_state(self, slot: _Slot) -> dict:
        return self._arrays_like_param(slot, zeros=self._array_states)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        xp = backend.get_array_module(data)
        rho = hyper["rho"]
        mean_square, mean_grad, velocity = state["mean_square"], state["mean_grad"], state["momentum"]
        moving_average_of_squares(mean_square, grad, rho)
        denominator = mean_square + hyper["epsilon"]
        if self._centered:
            moving_average(mean_grad, grad, rho)
            denominator -= mean_grad * mean_grad
        velocity *= hyper["momentum"]
        velocity += lr * grad / xp.sqrt(denominator)
        data -= velocity
