"""Fleet utilities (only ``hybrid_parallel_util`` exists in minidp)."""

from . import hybrid_parallel_util

__all__ = ["hybrid_parallel_util"]
