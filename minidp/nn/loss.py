"""Paddle's ``paddle.nn.loss`` path for the loss layers, which live in :mod:`minidp.nn.layers.loss`."""

from .layers import loss as _layers_loss
from .layers.loss import *  # noqa: F403  (the path re-exports every loss layer)

__all__ = [*_layers_loss.__all__]
