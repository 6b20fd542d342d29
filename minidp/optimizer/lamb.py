"""LAMB (layer-wise adaptive moments) with Paddle's update."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.adam import advance_power, bias_corrected_rms, moving_average, moving_average_of_squares
from ..core.optimizer import Optimizer, _Slot, check_adam_hyper, check_non_negative


class Lamb(Optimizer):
    """Per step, with ``beta*_pow_acc`` = beta**t and ``wd`` the LAMB weight decay::

        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        r = (m / (1 - beta1_pow_acc)) / (sqrt(v / (1 - beta2_pow_acc)) + epsilon) + wd * p
        p -= lr * (||p|| / ||r||) * r          (the ratio is 1 when either norm is 0)

    ``exclude_from_weight_decay_fn(param) -> bool`` sets ``wd`` to 0 for the parameters it
    accepts; for those the trust ratio is used only with ``always_adapt=True``, as in Paddle.
    The weight decay lives in the update, so there is no ``weight_decay`` argument. A group may
    override ``beta1``, ``beta2``, ``epsilon`` and ``lamb_weight_decay``.
    """

    _array_states = ("moment1", "moment2")
    _scalar_states = ("beta1_pow_acc", "beta2_pow_acc")
    _hyper_names = ("beta1", "beta2", "epsilon", "lamb_weight_decay")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        lamb_weight_decay: float = 0.01,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-06,
        parameters: Optional[Iterable] = None,
        grad_clip: Any = None,
        exclude_from_weight_decay_fn: Optional[Callable[[Any], bool]] = None,
        multi_precision: bool = False,
        always_adapt: bool = False,
        name: Optional[str] = None,
    ) -> None:
        if exclude_from_weight_decay_fn is not None and not callable(exclude_from_weight_decay_fn):
            raise TypeError(
                f"Lamb: exclude_from_weight_decay_fn must be callable, got {exclude_from_weight_decay_fn!r}"
            )
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn
        self._always_adapt = bool(always_adapt)
        super().__init__(
            learning_rate,
            parameters,
            None,
            grad_clip,
            {
                **check_adam_hyper("Lamb", beta1, beta2, epsilon),
                "lamb_weight_decay": check_non_negative("Lamb", "lamb_weight_decay", lamb_weight_decay),
            },
        )

    def _make_slot(self, param: Any, lr_ratio: float, weight_decay: float, hyper: dict) -> _Slot:
        excluded = self._exclude_from_weight_decay_fn is not None and self._exclude_from_weight_decay_fn(param)
        return _Slot(param, lr_ratio, weight_decay, dict(hyper, lamb_weight_decay=0.0) if excluded else hyper)

    def _init_state(self, slot: _Slot) -> dict:
        state = self._arrays_like_param(slot, zeros=self._array_states)
        state["beta1_pow_acc"] = slot.hyper["beta1"]
        state["beta2_pow_acc"] = slot.hyper["beta2"]
        return state

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        xp = backend.get_array_module(data)
        beta1, beta2, decay = hyper["beta1"], hyper["beta2"], hyper["lamb_weight_decay"]
        m, v = state["moment1"], state["moment2"]
        moving_average(m, grad, beta1)
        moving_average_of_squares(v, grad, beta2)
        ratio = (m / (1 - state["beta1_pow_acc"])) / bias_corrected_rms(v, state["beta2_pow_acc"], hyper["epsilon"])
        ratio += decay * data
        trust = 1.0
        if decay or self._always_adapt:
            param_norm, ratio_norm = float(xp.linalg.norm(data)), float(xp.linalg.norm(ratio))
            if param_norm > 0 and ratio_norm > 0:
                trust = param_norm / ratio_norm
        data -= lr * trust * ratio
        advance_power(state, "beta1_pow_acc", beta1)
        advance_power(state, "beta2_pow_acc", beta2)
