"""Paddle's ``paddle.optimizer.sgd`` module path; SGD is part of the core (:mod:`minidp.core.sgd`)."""

from ..core.sgd import SGD

__all__ = ["SGD"]
