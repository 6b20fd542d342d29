"""Paddle's ``paddle.optimizer.optimizer`` module path; the base class is :mod:`minidp.core.optimizer`."""

from ..core.optimizer import Optimizer

__all__ = ["Optimizer"]
