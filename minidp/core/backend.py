"""The array-module switch: NumPy for the place ``cpu``, CuPy for ``gpu:N``.

Every op asks this module which array library its inputs live in, so the same op code runs on
both. CuPy is imported lazily: a CPU-only install never touches it.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, ContextManager

import ml_dtypes
import numpy

from .erf import erf as host_erf

BFLOAT16 = numpy.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "float16": numpy.dtype("float16"),
    "bfloat16": BFLOAT16,
    "float32": numpy.dtype("float32"),
    "float64": numpy.dtype("float64"),
    "int32": numpy.dtype("int32"),
    "int64": numpy.dtype("int64"),
    "bool": numpy.dtype("bool"),
    "uint8": numpy.dtype("uint8"),
    "int8": numpy.dtype("int8"),
    "int16": numpy.dtype("int16"),
    "uint32": numpy.dtype("uint32"),
    "uint64": numpy.dtype("uint64"),
}
DEFAULT_FLOAT = DTYPES["float32"]

_current_place = "cpu"


@functools.lru_cache(maxsize=None)
def _cupy():
    """The cupy module, or None when it is not installed or cannot load."""
    try:
        import cupy
    except Exception:  # a broken CUDA install raises more than ImportError
        return None
    return cupy


def cuda_device_count() -> int:
    """Number of CUDA devices CuPy can see; 0 without CuPy, a driver or a device."""
    cupy = _cupy()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no driver: CuPy raises instead of returning 0
        return 0


def is_compiled_with_cuda() -> bool:
    """True only when CuPy imports and sees at least one device."""
    return cuda_device_count() > 0


def convert_dtype(dtype: Any) -> numpy.dtype:
    """Normalise a dtype given as a string, NumPy dtype or type into a NumPy dtype."""
    if dtype is None:
        return DEFAULT_FLOAT
    if isinstance(dtype, str):
        name = dtype.replace("paddle.", "").replace("minidp.", "")
        if name not in DTYPES:
            raise TypeError(f"unsupported dtype {dtype!r}; use one of {sorted(DTYPES)}")
        return DTYPES[name]
    try:
        return numpy.dtype(dtype)
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}; use one of {sorted(DTYPES)}") from None


def is_floating(dtype: numpy.dtype) -> bool:
    """True for the real floating dtypes, bfloat16 included (NumPy files it under kind 'V')."""
    return dtype.kind == "f" or dtype == BFLOAT16


def _parse_place(place: str) -> str:
    if not isinstance(place, str):
        raise TypeError(f"place must be a string such as 'cpu' or 'gpu:0', got {place!r}")
    name = place.strip().lower()
    if name == "cpu":
        return "cpu"
    if name == "gpu":
        name = "gpu:0"
    kind, _, index = name.partition(":")
    if kind != "gpu" or not index.isdigit():
        raise ValueError(f"unknown place {place!r}; use 'cpu', 'gpu' or 'gpu:N'")
    count = cuda_device_count()
    if int(index) >= count:
        raise ValueError(
            f"place {place!r} needs a CUDA device, but CuPy sees {count}; "
            "install 'minidp[gpu]' on a machine with a GPU or use 'cpu'"
        )
    return name


def set_device(place: str) -> str:
    """Select where new tensors are created: ``'cpu'`` or ``'gpu:N'``. Returns the place."""
    global _current_place
    parsed = _parse_place(place)
    if parsed != "cpu":
        _cupy().cuda.Device(int(parsed.split(":")[1])).use()
    _current_place = parsed
    return parsed


def get_device() -> str:
    """The current place, as set by :func:`set_device` (``'cpu'`` by default)."""
    return _current_place


def default_array_module():
    """The array module that new tensors are created with at the current place."""
    return numpy if _current_place == "cpu" else _cupy()


def get_array_module(x: Any):
    """NumPy or CuPy, whichever owns the array ``x``."""
    if isinstance(x, numpy.ndarray) or numpy.isscalar(x):
        return numpy
    cupy = _cupy()
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy
    return numpy


def place_of(x: Any) -> str:
    """The place an array lives on: ``'cpu'`` or ``'gpu:N'``."""
    if isinstance(x, numpy.ndarray):
        return "cpu"
    return f"gpu:{x.device.id}"


def device_guard(x: Any) -> ContextManager:
    """A context in which the device of the CuPy array ``x`` is the current CUDA device.

    Kernels and device allocations go to the current device, which need not be the data's
    (``set_device`` or another thread may have changed it). For a NumPy array: no-op.
    """
    if isinstance(x, numpy.ndarray):
        return contextlib.nullcontext()
    return x.device


def to_host(x: Any) -> numpy.ndarray:
    """A NumPy copy (or the array itself) of ``x``, wherever it lives."""
    if isinstance(x, numpy.ndarray):
        return x
    return x.get()


def erf(x: Any):
    """The error function on an array of either library (NumPy has none of its own): CuPy's;
    for NumPy arrays and scalars SciPy's when it is installed (it is faster), else minidp's own
    (:mod:`minidp.core.erf`). Floating inputs keep their dtype (SciPy widens 16-bit ones)."""
    if not isinstance(x, (numpy.ndarray, numpy.generic)):
        from cupyx.scipy.special import erf as cupy_erf

        return cupy_erf(x)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:
        result = host_erf(x)
        return result[()] if isinstance(x, numpy.generic) else result
    return scipy_erf(x) if x.dtype.kind in "biu" else scipy_erf(x).astype(x.dtype, copy=False)


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
