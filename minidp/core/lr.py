"""The learning-rate scheduler protocol the optimizer step reads: ``scheduler()`` is the current
rate, ``step()`` advances it, and its state dict continues it exactly. The schedules with Paddle's
names are in :mod:`minidp.optimizer.lr`."""

from __future__ import annotations

import logging
from typing import Any, Optional

from .distributed.env import ParallelEnv

logger = logging.getLogger("minidp.optimizer")


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
        self._announce()

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

    def _announce(self) -> None:
        """Log the new rate when the scheduler was made ``verbose``, naming this rank."""
        if self.verbose:
            logger.info(
                "rank %d: epoch %d: %s set learning rate to %s",
                ParallelEnv().rank,
                self.last_epoch,
                type(self).__name__,
                self.last_lr,
            )
