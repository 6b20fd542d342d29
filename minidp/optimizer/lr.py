"""Learning-rate schedulers, stepped by the training loop (``scheduler.step()``), read by optimizers.

Like Paddle's, a scheduler counts ``last_epoch`` from -1; the constructor takes the first step,
so a fresh scheduler is at epoch 0 with ``last_lr`` equal to the starting rate. Every rate is a
function of ``last_epoch`` (and the constructor's arguments) alone, so ``step(epoch)`` may jump
anywhere and a scheduler restored from ``state_dict()`` continues exactly. The exception is
:class:`ReduceOnPlateau`, which follows a metric and keeps Paddle's extra state keys.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Literal, Optional, Sequence, Union

from ..core import backend
from ..core.lr import LRScheduler, _positive_number
from ..core.tensor import Tensor

__all__ = [
    "LRScheduler",
    "StepDecay",
    "MultiStepDecay",
    "CosineAnnealingDecay",
    "LinearWarmup",
    "NoamDecay",
    "PiecewiseDecay",
    "NaturalExpDecay",
    "InverseTimeDecay",
    "PolynomialDecay",
    "ExponentialDecay",
    "LambdaDecay",
    "MultiplicativeDecay",
    "LinearLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "CyclicLR",
    "ReduceOnPlateau",
]


class StepDecay(LRScheduler):
    """``learning_rate * gamma ** (epoch // step_size)``."""

    def __init__(
        self, learning_rate: float, step_size: int, gamma: float = 0.1, last_epoch: int = -1, verbose: bool = False
    ) -> None:
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepDecay: step_size must be a positive int, got {step_size!r}")
        if gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be below 1.0, got {gamma}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    """``learning_rate * gamma ** (number of milestones reached)``."""

    def __init__(
        self,
        learning_rate: float,
        milestones: Sequence[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        milestones = list(milestones)
        if not milestones or any(b <= a for a, b in zip(milestones, milestones[1:])):
            raise ValueError(f"MultiStepDecay: milestones must be a non-empty increasing list, got {milestones}")
        if gamma >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be below 1.0, got {gamma}")
        self.milestones, self.gamma = milestones, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        reached = sum(1 for m in self.milestones if self.last_epoch >= m)
        return self.base_lr * self.gamma**reached


class CosineAnnealingDecay(LRScheduler):
    """``eta_min + (learning_rate - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""

    def __init__(
        self, learning_rate: float, T_max: int, eta_min: float = 0, last_epoch: int = -1, verbose: bool = False
    ) -> None:
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingDecay: T_max must be a positive int, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = _positive_number("CosineAnnealingDecay", "eta_min", eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return self.eta_min + (self.base_lr - self.eta_min) * cosine


class LinearWarmup(LRScheduler):
    """Rise linearly from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then follow
    ``learning_rate`` (a number, or a scheduler that restarts from its epoch 0)."""

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler],
        warmup_steps: int,
        start_lr: float,
        end_lr: float,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if not isinstance(learning_rate, LRScheduler):
            _positive_number("LinearWarmup", "learning_rate", learning_rate)
        if not isinstance(warmup_steps, int) or warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be a positive int, got {warmup_steps!r}")
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.start_lr = _positive_number("LinearWarmup", "start_lr", start_lr)
        self.end_lr = _positive_number("LinearWarmup", "end_lr", end_lr)
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return self.start_lr + (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)

    def state_dict(self) -> dict:
        """Paddle's layout: the wrapped scheduler's state under ``LinearWarmup_LR``."""
        state = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore :meth:`state_dict` (the wrapped scheduler's state is required when it has one)."""
        if isinstance(self.learning_rate, LRScheduler):
            inner = state_dict.get("LinearWarmup_LR", state_dict.get("learning_rate"))
            if not isinstance(inner, dict):
                raise ValueError(
                    "LinearWarmup.set_state_dict: the state has no LinearWarmup_LR entry for the "
                    f"wrapped {type(self.learning_rate).__name__}"
                )
            super().set_state_dict(state_dict)
            self.learning_rate.set_state_dict(inner)
        else:
            super().set_state_dict(state_dict)

    set_dict = set_state_dict


def _positive_int(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{cls}: {name} must be a positive int, got {value!r}")
    return value


def _callable(cls: str, value: Any) -> Any:
    if not callable(value):
        raise TypeError(f"{cls}: lr_lambda must be a function of the epoch, got {type(value).__name__}")
    return value


class NoamDecay(LRScheduler):
    """``learning_rate * d_model**-0.5 * min(epoch**-0.5, epoch * warmup_steps**-1.5)`` (the
    Transformer schedule; epoch 0 gives 0)."""

    def __init__(
        self, d_model: int, warmup_steps: int, learning_rate: float = 1.0, last_epoch: int = -1, verbose: bool = False
    ) -> None:
        self.d_model = _positive_int("NoamDecay", "d_model", d_model)
        self.warmup_steps = _positive_int("NoamDecay", "warmup_steps", warmup_steps)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        decay = 1.0 if self.last_epoch == 0 else self.last_epoch**-0.5
        warmup = self.warmup_steps**-1.5 * self.last_epoch
        return self.base_lr * self.d_model**-0.5 * min(decay, warmup)


class PiecewiseDecay(LRScheduler):
    """``values[i]`` for epochs before ``boundaries[i]``, the last value after the last boundary."""

    def __init__(
        self, boundaries: Sequence[int], values: Sequence[float], last_epoch: int = -1, verbose: bool = False
    ) -> None:
        boundaries, values = list(boundaries), [float(v) for v in values]
        if not boundaries or len(values) != len(boundaries) + 1:
            raise ValueError(
                f"PiecewiseDecay: pass a non-empty boundaries list and one more value than boundaries, "
                f"got {len(boundaries)} boundaries and {len(values)} values"
            )
        self.boundaries, self.values = boundaries, values
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self) -> float:
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """``learning_rate * exp(-gamma * epoch)``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not gamma > 0:
            raise ValueError(f"NaturalExpDecay: gamma must be positive, got {gamma!r}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """``learning_rate / (1 + gamma * epoch)``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """``(learning_rate - end_lr) * (1 - epoch / decay_steps) ** power + end_lr``, with the epoch held
    at ``decay_steps``; with ``cycle``, ``decay_steps`` grows to the next multiple of itself instead."""

    def __init__(
        self,
        learning_rate: float,
        decay_steps: int,
        end_lr: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.decay_steps = _positive_int("PolynomialDecay", "decay_steps", decay_steps)
        if not power > 0:
            raise ValueError(f"PolynomialDecay: power must be positive, got {power!r}")
        self.end_lr, self.power, self.cycle = float(end_lr), float(power), bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps *= max(1, math.ceil(epoch / steps))
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / steps) ** self.power + self.end_lr


class ExponentialDecay(LRScheduler):
    """``learning_rate * gamma ** epoch``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not 0 < gamma < 1:
            raise ValueError(f"ExponentialDecay: gamma must lie in (0, 1), got {gamma!r}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma**self.last_epoch


class LambdaDecay(LRScheduler):
    """``learning_rate * lr_lambda(epoch)``."""

    def __init__(
        self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1, verbose: bool = False
    ) -> None:
        self.lr_lambda = _callable("LambdaDecay", lr_lambda)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    """``learning_rate * lr_lambda(1) * ... * lr_lambda(epoch)``."""

    def __init__(
        self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1, verbose: bool = False
    ) -> None:
        self.lr_lambda = _callable("MultiplicativeDecay", lr_lambda)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        rate = self.base_lr
        for epoch in range(1, self.last_epoch + 1):
            rate *= self.lr_lambda(epoch)
        return rate


class LinearLR(LRScheduler):
    """The factor on ``learning_rate`` moves linearly from ``start_factor`` to ``end_factor`` over
    ``total_steps`` epochs, then stays."""

    def __init__(
        self,
        learning_rate: float,
        total_steps: int,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must lie in (0, 1], got {start_factor!r}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must lie in [0, 1], got {end_factor!r}")
        self.total_steps = _positive_int("LinearLR", "total_steps", total_steps)
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        progress = min(self.last_epoch, self.total_steps) / self.total_steps
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``learning_rate`` to ``eta_min`` over ``T_0`` epochs, restarting
    each time, each period ``T_mult`` times longer than the one before (SGDR)."""

    def __init__(
        self,
        learning_rate: float,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.T_0 = _positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_mult = _positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.eta_min = float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def _position(self) -> tuple:
        """(epochs into the current period, the period's length) at ``last_epoch``."""
        epoch, period = self.last_epoch, self.T_0
        if self.T_mult == 1:
            return epoch % period, period
        while epoch >= period:
            epoch -= period
            period *= self.T_mult
        return epoch, period

    def get_lr(self) -> float:
        into, period = self._position()
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * into / period)) / 2


class OneCycleLR(LRScheduler):
    """The one-cycle policy: rise from ``max_learning_rate / divide_factor`` to ``max_learning_rate``
    over ``phase_pct`` of ``total_steps``, then fall to ``end_learning_rate`` (with ``three_phase``,
    first back to the start and then to the end), along a cosine or a line."""

    def __init__(
        self,
        max_learning_rate: float,
        total_steps: int,
        divide_factor: float = 25.0,
        end_learning_rate: float = 0.0001,
        phase_pct: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        three_phase: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.max_learning_rate = _positive_number("OneCycleLR", "max_learning_rate", max_learning_rate)
        end = _positive_number("OneCycleLR", "end_learning_rate", end_learning_rate)
        self.total_steps = _positive_int("OneCycleLR", "total_steps", total_steps)
        if not 0 <= phase_pct <= (0.5 if three_phase else 1) or (three_phase and phase_pct == 0.5):
            raise ValueError(
                f"OneCycleLR: phase_pct must lie in [0, {'0.5)' if three_phase else '1]'}, got {phase_pct!r}"
            )
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        start = self.max_learning_rate / float(divide_factor)
        rise_end = phase_pct * total_steps - 1
        last = total_steps - 1
        if three_phase:
            self._phases = [
                (0, rise_end, start, self.max_learning_rate),
                (rise_end, 2 * phase_pct * total_steps - 2, self.max_learning_rate, start),
                (2 * phase_pct * total_steps - 2, last, start, end),
            ]
        else:
            self._phases = [(0, rise_end, start, self.max_learning_rate), (rise_end, last, self.max_learning_rate, end)]
        super().__init__(start, last_epoch, verbose)

    def _anneal(self, start: float, end: float, fraction: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2 * (math.cos(math.pi * fraction) + 1)
        return start + (end - start) * fraction

    def get_lr(self) -> float:
        if self.last_epoch > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped to epoch {self.last_epoch}, past total_steps={self.total_steps}; "
                "create the scheduler with enough total_steps for the whole run"
            )
        phase = next((p for p in self._phases[:-1] if self.last_epoch <= p[1]), self._phases[-1])
        first, last, start, end = phase
        return self._anneal(start, end, (self.last_epoch - first) / (last - first))


class CyclicLR(LRScheduler):
    """Cycle between ``base_learning_rate`` and ``max_learning_rate``: up over ``step_size_up``
    epochs, down over ``step_size_down`` (default: the same). The amplitude is scaled by
    ``scale_fn`` of the cycle number or of the epoch (``scale_mode``); the modes give 1
    (``triangular``), ``1 / 2**(cycle - 1)`` (``triangular2``) or ``exp_gamma**epoch`` (``exp_range``)."""

    def __init__(
        self,
        base_learning_rate: float,
        max_learning_rate: float,
        step_size_up: int,
        step_size_down: Optional[int] = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        exp_gamma: float = 1.0,
        scale_fn: Optional[Callable[[float], float]] = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.max_lr = _positive_number("CyclicLR", "max_learning_rate", max_learning_rate)
        up = _positive_int("CyclicLR", "step_size_up", step_size_up)
        down = up if step_size_down is None else _positive_int("CyclicLR", "step_size_down", step_size_down)
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(
                f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or pass scale_fn), got {mode!r}"
            )
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.cycle_size = float(up + down)
        self.step_up_pct = up / self.cycle_size
        self.mode, self.gamma = mode, float(exp_gamma)
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        elif mode == "triangular":
            self.scale_fn, self.scale_mode = (lambda cycle: 1.0), "cycle"
        elif mode == "triangular2":
            self.scale_fn, self.scale_mode = (lambda cycle: 1 / 2.0 ** (cycle - 1)), "cycle"
        else:
            self.scale_fn, self.scale_mode = (lambda epoch: self.gamma**epoch), "iterations"
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        epoch = self.last_epoch
        cycle = 1 + epoch // self.cycle_size
        position = 1.0 + epoch / self.cycle_size - cycle
        if position <= self.step_up_pct:
            height = position / self.step_up_pct
        else:
            height = (1 - position) / (1 - self.step_up_pct)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else epoch)
        return self.base_lr + (self.max_lr - self.base_lr) * height * scale


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when ``metrics`` (passed to :meth:`step`) has not improved for
    more than ``patience`` epochs, then wait ``cooldown`` epochs; never below ``min_lr``, and not
    at all when the change would be under ``epsilon``. Improvement means below ``best`` in
    ``mode='min'`` (above in ``'max'``) by ``threshold``, relative (``'rel'``) or absolute (``'abs'``).
    """

    _state_keys = ("cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr")

    def __init__(
        self,
        learning_rate: float,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: float = 0,
        epsilon: float = 1e-8,
        verbose: bool = False,
    ) -> None:
        mode, threshold_mode = str(mode).lower(), str(threshold_mode).lower()
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        if not factor < 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be below 1.0 (new_lr = lr * factor), got {factor!r}")
        self.base_lr = _positive_number("ReduceOnPlateau", "learning_rate", learning_rate)
        self.last_lr, self.last_epoch, self.verbose = self.base_lr, 0, verbose
        self.mode, self.threshold_mode, self.factor = mode, threshold_mode, float(factor)
        self.patience, self.threshold, self.cooldown = patience, float(threshold), cooldown
        self.min_lr, self.epsilon = float(min_lr), float(epsilon)
        self.cooldown_counter, self.best, self.num_bad_epochs = 0, None, 0

    def _is_better(self, current: float, best: float) -> bool:
        margin = best * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - margin if self.mode == "min" else current > best + margin

    def step(self, metrics: Any, epoch: Optional[int] = None) -> None:
        """Record this epoch's ``metrics`` (a number, or a one-element array or tensor) and decide the rate."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        if isinstance(metrics, Tensor):
            metrics = metrics._data
        if hasattr(metrics, "shape"):
            values = backend.to_host(metrics).reshape(-1)
            if values.size != 1:
                raise ValueError(
                    f"ReduceOnPlateau.step: metrics must hold one value, got {values.size}; reduce it "
                    "first (e.g. with mean())"
                )
            metrics = float(values[0])
        elif isinstance(metrics, bool) or not isinstance(metrics, (int, float)):
            raise TypeError(
                f"ReduceOnPlateau.step: metrics must be a number, a one-element array or a tensor, got "
                f"{type(metrics).__name__}"
            )
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(metrics, self.best):
            self.best, self.num_bad_epochs = metrics, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                self._announce()

    def get_lr(self) -> float:
        return self.last_lr
