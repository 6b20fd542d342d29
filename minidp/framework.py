"""Execution mode and places: minidp runs eagerly (Paddle's dynamic graph mode) and nothing else.

Paddle scripts often call ``paddle.disable_static()`` or test ``paddle.in_dynamic_mode()``;
those work unchanged. ``enable_static()`` cannot be honoured and says so. ``CPUPlace`` and
``CUDAPlace`` are Paddle's place objects, accepted wherever a place string is (``'cpu'``,
``'gpu:N'``).
"""

from __future__ import annotations

from typing import Any, Optional

from .core.backend import CPUPlace, CUDAPlace, place_name
from .core.tensor import VarType

__all__ = ["in_dynamic_mode", "disable_static", "enable_static", "CPUPlace", "CUDAPlace", "place_name", "VarType"]


def in_dynamic_mode() -> bool:
    """True: minidp always runs eagerly."""
    return True


def disable_static(place: Optional[Any] = None) -> None:
    """Enter dynamic graph mode, which minidp is always in; ``place`` is accepted and ignored
    (choose a device with :func:`minidp.set_device`)."""
    if place is not None:
        place_name(place)


def enable_static() -> None:
    """Refused: minidp has no static graph."""
    raise RuntimeError(
        "minidp.enable_static: minidp runs in dynamic graph (eager) mode only and has no static "
        "graph; remove the call (and the paddle.static code that follows it) and train eagerly"
    )
