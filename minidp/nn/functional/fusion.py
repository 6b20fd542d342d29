"""When a fused op may stand in for the composition of ops it replaces.

Fused ops (whole-sequence LSTM/GRU, attention) compute in their inputs' dtype and are not on
auto_cast's op lists, so they run only where the composed path would have computed the same
thing: float32 or float64 inputs of one dtype, with no auto_cast casting in this thread (under
one, the composed path's matmuls run in 16 bits and its softmax in float32, as in Paddle).
"""

from __future__ import annotations

from typing import Any

import numpy

__all__: list = []

_FUSED_DTYPES = (numpy.dtype("float32"), numpy.dtype("float64"))


def fusable_dtypes(*arrays: Any) -> bool:
    """True when the arrays share a dtype, float32 or float64."""
    dtype = arrays[0].dtype
    return dtype in _FUSED_DTYPES and all(a.dtype == dtype for a in arrays)


def can_fuse(*arrays: Any) -> bool:
    """True when the arrays share a dtype, float32 or float64, and auto_cast is not casting."""
    if not fusable_dtypes(*arrays):
        return False
    from ...amp.state import current  # lazily: minidp.amp imports the layers built on these ops

    amp_state = current()
    return amp_state is None or not amp_state.enabled
