"""Adam and AdamW with Paddle's update formulas.

At step t (per parameter), with ``b1p = beta1**t`` and ``b2p = beta2**t``:

    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p -= lr * sqrt(1 - b2p) / (1 - b1p) * m / (sqrt(v) + epsilon * sqrt(1 - b2p))

which is the textbook bias-corrected Adam with epsilon added to the corrected sqrt(v).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Optional, Union

from .. import backend
from .lr import LRScheduler
from .optimizer import Optimizer, _Slot


class Adam(Optimizer):
    """Adam. ``weight_decay`` is an L2 coefficient added to the gradient (as in Paddle's Adam).

    A group may override ``beta1``, ``beta2`` and ``epsilon``.
    """

    _array_states = ("moment1", "moment2")
    _scalar_states = ("beta1_pow_acc", "beta2_pow_acc")
    _hyper_names = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate: Union[float, LRScheduler] = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-08, parameters: Optional[Iterable] = None, weight_decay: Optional[float] = None,
                 grad_clip: Any = None, name: Optional[str] = None) -> None:
        for label, value in (("beta1", beta1), ("beta2", beta2)):
            if not 0 <= value < 1:
                raise ValueError(f"{type(self).__name__}: {label} must lie in [0, 1), got {value!r}")
        if epsilon < 0:
            raise ValueError(f"{type(self).__name__}: epsilon must be non-negative, got {epsilon!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip,
                         {"beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon)})

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data = slot.param._data
        state = slot.state
        hyper = slot.hyper
        beta1, beta2 = hyper["beta1"], hyper["beta2"]
        xp = backend.get_array_module(data)
        if not state:
            state["moment1"] = xp.zeros_like(data)
            state["moment2"] = xp.zeros_like(data)
            state["beta1_pow_acc"] = beta1
            state["beta2_pow_acc"] = beta2
        m, v = state["moment1"], state["moment2"]
        beta1_pow, beta2_pow = state["beta1_pow_acc"], state["beta2_pow_acc"]
        m *= beta1
        m += (1 - beta1) * grad
        v *= beta2
        square = grad * grad
        square *= 1 - beta2
        v += square
        correction = math.sqrt(1 - beta2_pow)
        step = xp.sqrt(v, out=square)
        step += hyper["epsilon"] * correction
        xp.divide(m, step, out=step)
        step *= lr * correction / (1 - beta1_pow)
        data -= step
        state["beta1_pow_acc"] = beta1_pow * beta1
        state["beta2_pow_acc"] = beta2_pow * beta2


class AdamW(Adam):
    """Adam with decoupled weight decay: before the Adam step, ``p *= 1 - lr * weight_decay``.

    ``weight_decay`` (default 0.01) is the decay coefficient, not an L2 term.
    ``apply_decay_param_fun(name) -> bool`` limits the decay to the parameters it accepts
    (e.g. to skip biases and norms).
    """

    _decoupled_decay = True

    def __init__(self, learning_rate: Union[float, LRScheduler] = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-08, parameters: Optional[Iterable] = None, weight_decay: float = 0.01,
                 apply_decay_param_fun: Optional[Callable[[str], bool]] = None, grad_clip: Any = None,
                 name: Optional[str] = None) -> None:
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError(f"AdamW: apply_decay_param_fun must be callable, got {apply_decay_param_fun!r}")
        self._apply_decay_param_fun = apply_decay_param_fun
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, weight_decay, grad_clip)

    def _make_slot(self, param: Any, lr_ratio: float, weight_decay: float, hyper: dict) -> _Slot:
        if self._apply_decay_param_fun is not None and not self._apply_decay_param_fun(param.name):
            weight_decay = 0.0
        return _Slot(param, lr_ratio, weight_decay, hyper)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        if slot.weight_decay:
            slot.param._data *= 1.0 - lr * slot.weight_decay
        super()._update(slot, grad, lr)
