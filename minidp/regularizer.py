"""``paddle.regularizer``: the weight-decay penalties a parameter or an optimizer applies (the optimizer
step applies them, so they are defined in :mod:`minidp.core.regularizer`)."""

from .core.regularizer import L1Decay, L2Decay, WeightDecayRegularizer

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]
