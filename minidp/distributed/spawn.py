"""Paddle's ``paddle.distributed.spawn`` module path; the implementation is :mod:`minidp.core.distributed.spawn`."""

from ..core.distributed.spawn import MultiprocessContext, RankFailedError, spawn

__all__ = ["spawn", "MultiprocessContext", "RankFailedError"]
