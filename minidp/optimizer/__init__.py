"""Optimizers (SGD, Momentum, Adam, AdamW) and, in :mod:`minidp.optimizer.lr`, LR schedulers."""

from . import lr
from .adam import Adam, AdamW
from .momentum import Momentum
from .optimizer import Optimizer
from .sgd import SGD
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adamax import Adamax
from .asgd import ASGD
from .lamb import Lamb
from .lbfgs import LBFGS
from .nadam import NAdam
from .radam import RAdam
from .rmsprop import RMSProp
from .rprop import Rprop

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "lr"]
__all__ += ["RMSProp", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Lamb", "ASGD", "Rprop", "LBFGS"]
