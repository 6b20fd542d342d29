"""Paddle's ``paddle.nn.layer`` path for the base class, which is part of the core (:mod:`minidp.core.layer`)."""

from ..core.layer import Layer

__all__ = ["Layer"]
