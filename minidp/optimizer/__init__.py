"""Optimizers (SGD, Momentum, Adam, AdamW) and, in :mod:`minidp.optimizer.lr`, LR schedulers."""
from . import lr
from .adam import Adam, AdamW
from .momentum import Momentum
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "lr"]
