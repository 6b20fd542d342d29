"""NAdam (Adam with Nesterov momentum and momentum decay) with Paddle's update."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from .lr import LRScheduler
from ..core.adam import bias_corrected_rms, moving_average, moving_average_of_squares
from ..core.optimizer import Optimizer, _Slot, check_adam_hyper, check_non_negative

_DECAY_BASE = 0.96


class NAdam(Optimizer):
    """Per step t, with ``psi = momentum_decay``::

        momentum_decay_pow = 0.96**t;  beta2_pow = beta2**t
        mu_t  = beta1 * (1 - 0.5 * momentum_decay_pow**psi)
        mu_t1 = beta1 * (1 - 0.5 * momentum_decay_pow**psi * 0.96**psi)
        mu_product = mu_1 * ... * mu_t
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        m_hat = mu_t1 * m / (1 - mu_product * mu_t1) + (1 - mu_t) * g / (1 - mu_product)
        p -= lr * m_hat / (sqrt(v / (1 - beta2_pow)) + epsilon)

    As in Paddle, the three running products are kept per element (arrays shaped like the
    parameter), so checkpoints match Paddle's. A group may override ``beta1``, ``beta2``,
    ``epsilon`` and ``momentum_decay``.
    """

    _array_states = ("momentum_decay_pow", "beta2_pow", "mu_product", "moment1", "moment2")
    _hyper_names = ("beta1", "beta2", "epsilon", "momentum_decay")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.002,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        momentum_decay: float = 0.004,
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
                **check_adam_hyper("NAdam", beta1, beta2, epsilon),
                "momentum_decay": check_non_negative("NAdam", "momentum_decay", momentum_decay),
            },
        )

    def _init_state(self, slot: _Slot) -> dict:
        return self._arrays_like_param(
            slot, ones=("momentum_decay_pow", "beta2_pow", "mu_product"), zeros=("moment1", "moment2")
        )

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        beta1, beta2, psi = hyper["beta1"], hyper["beta2"], hyper["momentum_decay"]
        decay_pow, beta2_pow, mu_product = state["momentum_decay_pow"], state["beta2_pow"], state["mu_product"]
        m, v = state["moment1"], state["moment2"]
        decay_pow *= _DECAY_BASE
        beta2_pow *= beta2
        decayed = decay_pow**psi
        mu_t = beta1 * (1 - 0.5 * decayed)
        mu_next = beta1 * (1 - 0.5 * decayed * _DECAY_BASE**psi)
        mu_product *= mu_t
        moving_average(m, grad, beta1)
        moving_average_of_squares(v, grad, beta2)
        m_hat = mu_next * m / (1 - mu_product * mu_next) + (1 - mu_t) * grad / (1 - mu_product)
        data -= lr * m_hat / bias_corrected_rms(v, beta2_pow, hyper["epsilon"])
