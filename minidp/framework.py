"""Execution mode and places: minidp runs eagerly (Paddle's dynamic graph mode) and nothing else.

Paddle scripts often call ``paddle.disable_static()`` or test ``paddle.in_dynamic_mode()``;
those work unchanged. ``enable_static()`` cannot be honoured and says so. ``CPUPlace`` and
``CUDAPlace`` are Paddle's place objects, accepted wherever a place string is (``'cpu'``,
``'gpu:N'``).
"""

from __future__ import annotations

import enum
from typing import Any, Optional

__all__ = ["in_dynamic_mode", "disable_static", "enable_static", "CPUPlace", "CUDAPlace", "place_name", "VarType"]


class VarType(enum.Enum):
    """What ``Tensor.type`` reports, under Paddle's name and number: minidp's tensors are all dense."""

    DENSE_TENSOR = 7


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


class CPUPlace:
    """The host."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUPlace)

    def __hash__(self) -> int:
        return hash("cpu")

    def __repr__(self) -> str:
        return "Place(cpu)"


class CUDAPlace:
    """GPU number ``device_id``."""

    def __init__(self, device_id: int) -> None:
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise TypeError(f"CUDAPlace: device_id must be a non-negative int, got {device_id!r}")
        self.device_id = device_id

    def get_device_id(self) -> int:
        """The GPU number."""
        return self.device_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self) -> int:
        return hash(("gpu", self.device_id))

    def __repr__(self) -> str:
        return f"Place(gpu:{self.device_id})"


def place_name(place: Any) -> str:
    """The place string (``'cpu'``, ``'gpu:N'``, or the string given) of a place argument."""
    if isinstance(place, str):
        return place
    if isinstance(place, CPUPlace):
        return "cpu"
    if isinstance(place, CUDAPlace):
        return f"gpu:{place.device_id}"
    raise TypeError(
        f"a place must be a string such as 'cpu' or 'gpu:0', minidp.CPUPlace() or "
        f"minidp.CUDAPlace(n); got {type(place).__name__}"
    )
