"""SGD with momentum (optionally Nesterov), in Paddle's form."""
from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from .. import backend
from .lr import LRScheduler
from .optimizer import Optimizer


class Momentum(Optimizer):
    """``v = momentum * v + grad``; ``p -= lr * v``, or with Nesterov ``p -= lr * (grad + momentum * v)``.

    ``grad`` includes the L2 term ``weight_decay * p``. A group may override ``momentum``.
    """

    _array_states = ("velocity",)
    _hyper_names = ("momentum",)

    def __init__(self, learning_rate: Union[float, LRScheduler] = 0.001, momentum: float = 0.9,
                 parameters: Optional[Iterable] = None, use_nesterov: bool = False,
                 weight_decay: Optional[float] = None, grad_clip: Any = None, name: Optional[str] = None) -> None:
        if not isinstance(momentum, (int, float)) or momentum < 0:
            raise ValueError(f"Momentum: momentum must be a non-negative float, got {momentum!r}")
        self._use_nesterov = bool(use_nesterov)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, {"momentum": float(momentum)})

    def _update(self, slot: Any, grad: Any, lr: float) -> None:
        data = slot.param._data
        state = slot.state
        if not state:
            state["velocity"] = backend.get_array_module(data).zeros_like(data)
        velocity = state["velocity"]
        mu = slot.hyper["momentum"]
        velocity *= mu
        velocity += grad
        if self._use_nesterov:
            data -= lr * (grad + mu * velocity)
        else:
            data -= lr * velocity
