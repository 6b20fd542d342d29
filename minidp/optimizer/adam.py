"""Paddle's ``paddle.optimizer.adam`` module path; Adam is part of the core (:mod:`minidp.core.adam`)."""

from ..core.adam import Adam, AdamW

__all__ = ["Adam", "AdamW"]
