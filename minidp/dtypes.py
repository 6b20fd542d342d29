"""Dtype facts and the default floating dtype: ``finfo``, ``iinfo``, ``set_default_dtype``.

minidp's dtypes are NumPy dtypes (``minidp.float32 is numpy.dtype('float32')``), so ``minidp.dtype``
is NumPy's dtype class. The default floating dtype lives in :data:`minidp.core.backend.DEFAULT_FLOAT`,
which every creation function reads when no dtype is given (``zeros``, ``randn``, ``to_tensor``
of Python floats...); :func:`set_default_dtype` changes it there.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy

from .core import backend

__all__ = ["dtype", "finfo", "iinfo", "get_default_dtype", "set_default_dtype"]

dtype = numpy.dtype

_DEFAULT_CHOICES = ("float16", "bfloat16", "float32", "float64")


def _as_dtype(value: Any, caller: str) -> numpy.dtype:
    if isinstance(value, str) and value.replace("paddle.", "").replace("minidp.", "") == "uint16":
        return backend.BFLOAT16  # Paddle's old name for bfloat16
    try:
        return backend.convert_dtype(value)
    except TypeError:
        raise TypeError(f"{caller}: {value!r} is not a dtype; pass e.g. 'float32' or minidp.float32") from None


class finfo:
    """Limits of a floating dtype: ``min``, ``max``, ``eps``, ``resolution``, ``smallest_normal``,
    ``tiny``, ``bits`` and ``dtype`` (its name), as Paddle's ``paddle.finfo``."""

    def __init__(self, dtype: Any) -> None:
        target = _as_dtype(dtype, "finfo")
        if not backend.is_floating(target):
            raise TypeError(f"finfo: {target.name} is not a floating dtype; use minidp.iinfo for integers")
        info = ml_dtypes.finfo(target)
        self.min, self.max, self.eps = float(info.min), float(info.max), float(info.eps)
        self.resolution = 10.0 ** -int(info.precision)
        self.smallest_normal = self.tiny = float(info.smallest_normal)
        self.bits = int(info.bits)
        self.dtype = target.name

    def __repr__(self) -> str:
        return (
            f"minidp.finfo(min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"resolution={self.resolution:g}, smallest_normal={self.smallest_normal:g}, "
            f"tiny={self.tiny:g}, bits={self.bits}, dtype={self.dtype})"
        )


class iinfo:
    """Limits of an integer dtype: ``min``, ``max``, ``bits`` and ``dtype`` (its name)."""

    def __init__(self, dtype: Any) -> None:
        target = _as_dtype(dtype, "iinfo")
        if target.kind not in "iu":
            raise TypeError(f"iinfo: {target.name} is not an integer dtype; use minidp.finfo for floats")
        info = numpy.iinfo(target)
        self.min, self.max, self.bits, self.dtype = int(info.min), int(info.max), int(info.bits), target.name

    def __repr__(self) -> str:
        return f"minidp.iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"


def get_default_dtype() -> str:
    """The name of the floating dtype creation functions use when none is given ('float32' at start)."""
    return backend.DEFAULT_FLOAT.name


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (float16, bfloat16, float32 or float64) the floating dtype that creation functions
    and ``to_tensor`` of Python floats use when no dtype is given."""
    target = _as_dtype(d, "set_default_dtype")
    if target.name not in _DEFAULT_CHOICES:
        raise TypeError(f"set_default_dtype: the default must be one of {list(_DEFAULT_CHOICES)}, got {target.name}")
    backend.DEFAULT_FLOAT = target
