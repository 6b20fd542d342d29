"""The AMP state of the calling thread: the stack of auto_cast contexts it is inside.

Each thread has its own stack (a thread that never entered ``auto_cast`` runs every op as
written). The innermost context decides; an ``auto_cast(enable=False)`` inside an enabled one
turns casting off until it exits.
"""

from __future__ import annotations

import threading
from typing import NamedTuple, Optional

import numpy

from ..core import backend

FLOAT32 = numpy.dtype("float32")


class AmpState(NamedTuple):
    """One auto_cast context: whether it casts, its level, low dtype and effective op lists."""

    enabled: bool
    level: str
    dtype: str
    white: frozenset
    black: frozenset
    use_promote: bool


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list = []


_local = _Local()
# dtype of the most recent auto_cast entered, in any thread; GradScaler.scale reads it, as
# Paddle's reads its global AMP state (float32 until an auto_cast has been entered)
last_dtype = {"value": "float32"}


def push(amp_state: AmpState) -> None:
    _local.stack.append(amp_state)
    last_dtype["value"] = amp_state.dtype


def pop() -> None:
    _local.stack.pop()


def current() -> Optional[AmpState]:
    """The innermost auto_cast of this thread, or None outside any."""
    stack = _local.stack
    return stack[-1] if stack else None


def cast_rule(names: frozenset) -> Optional[tuple]:
    """(target dtype, dtypes that get cast) for an op Paddle knows under ``names``, or None to run
    it uncast: white ops take the low dtype (from float32 and the other 16-bit dtype), black ops
    float32 (from the 16-bit dtypes); at O2 without promotion every other op takes the low dtype.
    float64 is never cast, as in Paddle."""
    amp_state = current()
    if amp_state is None or not amp_state.enabled:
        return None
    low = backend.convert_dtype(amp_state.dtype)
    half = (backend.convert_dtype("float16"), backend.convert_dtype("bfloat16"))
    if names & amp_state.black:
        return FLOAT32, half
    if names & amp_state.white or (amp_state.level == "O2" and not amp_state.use_promote):
        return low, (FLOAT32,) + half
    return None
