"""RAdam (Adam with a rectified adaptive learning rate) with Paddle's update."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from ..core import backend
from .lr import LRScheduler
from ..core.adam import moving_average, moving_average_of_squares
from ..core.optimizer import Optimizer, _Slot, check_adam_hyper


class RAdam(Optimizer):
    """Per step t, with ``rho_inf = 2 / (1 - beta2) - 1``::

        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1**t)
        rho_t = rho_inf - 2 * t * beta2**t / (1 - beta2**t)
        if rho_t > 5:  p -= lr * m_hat * r_t * sqrt(1 - beta2**t) / (sqrt(v) + epsilon),
                       r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        else:          p -= lr * m_hat

    As in Paddle, ``beta1_pow``, ``beta2_pow`` and ``rho`` (the running value of
    ``t * beta2**t / (1 - beta2**t)``) are kept per element, so checkpoints match Paddle's.
    A group may override ``beta1``, ``beta2`` and ``epsilon``.
    """

    _array_states = ("beta1_pow", "beta2_pow", "rho", "moment1", "moment2")
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
            learning_rate, parameters, weight_decay, grad_clip, check_adam_hyper("RAdam", beta1, beta2, epsilon)
        )

    def _init_state(self, slot: _Slot) -> dict:
        return self._arrays_like_param(slot, ones=("beta1_pow", "beta2_pow", "rho"), zeros=("moment1", "moment2"))

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        xp = backend.get_array_module(data)
        beta1, beta2 = hyper["beta1"], hyper["beta2"]
        beta1_pow, beta2_pow, rho = state["beta1_pow"], state["beta2_pow"], state["rho"]
        m, v = state["moment1"], state["moment2"]
        beta1_pow *= beta1
        beta2_pow *= beta2
        rho *= beta2 - beta2_pow
        rho += beta2_pow
        rho /= 1 - beta2_pow
        moving_average(m, grad, beta1)
        moving_average_of_squares(v, grad, beta2)
        m_hat = m / (1 - beta1_pow)
        # rho_t is close to 5 for a few steps, where the branch and the rectifier are sensitive
        # to rounding: compute them in the parameter's precision, as Paddle does.
        real = data.dtype.type
        rho_inf = real(2) / (real(1) - real(beta2)) - real(1)
        rho_t = rho_inf - real(2) * rho.reshape(-1)[0]
        if rho_t > 5:
            rectifier = xp.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            data -= lr * m_hat * rectifier * xp.sqrt(1 - beta2_pow) / (xp.sqrt(v) + hyper["epsilon"])
        else:
            data -= lr * m_hat
