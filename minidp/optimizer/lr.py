"""Learning-rate schedulers, stepped by the training loop (``scheduler.step()``), read by optimizers.

Like Paddle's, a scheduler counts ``last_epoch`` from -1; the constructor takes the first step,
so a fresh scheduler is at epoch 0 with ``last_lr`` equal to the starting rate. Every rate is a
closed-form function of ``last_epoch``, so ``step(epoch)`` may jump anywhere and a scheduler
restored from ``state_dict()`` continues exactly.
"""
from __future__ import annotations

import logging
import math
import os
from typing import Any, Optional, Sequence, Union

logger = logging.getLogger("minidp.optimizer")

__all__ = ["LRScheduler", "StepDecay", "MultiStepDecay", "CosineAnnealingDecay", "LinearWarmup"]


def _positive_number(cls: str, name: str, value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise TypeError(f"{cls}: {name} must be a non-negative number, got {value!r}")
    return float(value)


class LRScheduler:
    """Base scheduler: a constant rate. Subclasses override :meth:`get_lr`."""

    _state_keys: tuple = ("last_epoch", "last_lr")

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        self.base_lr = _positive_number(type(self).__name__, "learning_rate", learning_rate)
        self.last_lr = self.base_lr
        self.last_epoch = int(last_epoch)
        self.verbose = verbose
        self.step()

    def __call__(self) -> float:
        """The current learning rate."""
        return self.last_lr

    def step(self, epoch: Optional[int] = None) -> None:
        """Advance one epoch (or jump to ``epoch``) and recompute ``last_lr``."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self.last_lr = float(self.get_lr())
        if self.verbose:
            logger.info("rank %s: epoch %d: %s set learning rate to %s", _rank(), self.last_epoch,
                        type(self).__name__, self.last_lr)

    def get_lr(self) -> float:
        """The rate at ``last_epoch``."""
        return self.base_lr

    def state_dict(self) -> dict:
        """The values needed to continue the schedule exactly."""
        return {key: getattr(self, key) for key in self._state_keys}

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        missing = [key for key in self._state_keys if key not in state_dict]
        if missing:
            raise ValueError(f"{type(self).__name__}.set_state_dict: the state has no {missing}")
        for key in self._state_keys:
            value = state_dict[key]
            setattr(self, key, value.item() if hasattr(value, "item") else value)

    set_dict = set_state_dict


def _rank() -> str:
    """This process's trainer id, for log lines (0 outside data-parallel runs)."""
    return os.environ.get("PADDLE_TRAINER_ID", "0")


class StepDecay(LRScheduler):
    """``learning_rate * gamma ** (epoch // step_size)``."""

    def __init__(self, learning_rate: float, step_size: int, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:
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

    def __init__(self, learning_rate: float, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        milestones = list(milestones)
        if not milestones or any(b <= a for a, b in zip(milestones, milestones[1:])):
            raise ValueError(f"MultiStepDecay: milestones must be a non-empty increasing list, got {milestones}")
        if gamma >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be below 1.0, got {gamma}")
        self.milestones, self.gamma = milestones, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        reached = sum(1 for m in self.milestones if self.last_epoch >= m)
        return self.base_lr * self.gamma ** reached


class CosineAnnealingDecay(LRScheduler):
    """``eta_min + (learning_rate - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""

    def __init__(self, learning_rate: float, T_max: int, eta_min: float = 0, last_epoch: int = -1,
                 verbose: bool = False) -> None:
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

    def __init__(self, learning_rate: Union[float, LRScheduler], warmup_steps: int, start_lr: float,
                 end_lr: float, last_epoch: int = -1, verbose: bool = False) -> None:
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
                raise ValueError("LinearWarmup.set_state_dict: the state has no LinearWarmup_LR entry for the "
                                 f"wrapped {type(self.learning_rate).__name__}")
            super().set_state_dict(state_dict)
            self.learning_rate.set_state_dict(inner)
        else:
            super().set_state_dict(state_dict)

    set_dict = set_state_dict

