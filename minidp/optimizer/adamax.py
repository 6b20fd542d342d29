"""Adamax (Adam with the infinity norm) with Paddle's update."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.adam import advance_power, moving_average
from ..core.optimizer import Optimizer, _Slot, check_adam_hyper


class Adamax(Optimizer):
    """Per step, with ``beta1_pow_acc`` = beta1**t::

        moment   = beta1 * moment + (1 - beta1) * g
        inf_norm = max(beta2 * inf_norm + epsilon, |g|)
        p       -= lr / (1 - beta1_pow_acc) * moment / inf_norm

    A group may override ``beta1``, ``beta2`` and ``epsilon``.
    """

    _array_states = ("moment", "inf_norm")
    _scalar_states = ("beta1_pow_acc",)
    _hyper_names = ("beta1", "beta2", "epsilon")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            learning_rate, parameters, weight_decay, grad_clip, check_adam_hyper("Adamax", beta1, beta2, epsilon)
        )

    def _init_state(self, slot: _Slot) -> dict:
        state = self._arrays_like_param(slot, zeros=self._array_states)
        state["beta1_pow_acc"] = slot.hyper["beta1"]
        return state

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        xp = backend.get_array_module(data)
        moment, inf_norm = state["moment"], state["inf_norm"]
        moving_average(moment, grad, hyper["beta1"])
        inf_norm *= hyper["beta2"]
        inf_norm += hyper["epsilon"]
        xp.maximum(inf_norm, xp.abs(grad), out=inf_norm)
        data -= lr / (1 - state["beta1_pow_acc"]) * moment / inf_norm
        advance_power(state, "beta1_pow_acc", hyper["beta1"])
