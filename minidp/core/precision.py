"""The dtype each parameter's update is computed in, and float32 master weights.

float16 and bfloat16 parameters are updated in float32: read, widened, updated and rounded to
nearest even once when stored back, which is what Paddle's multi-precision kernels and
minidp's optimizer kernels do. With ``multi_precision=True`` an optimizer also keeps a float32
*master* copy of each such parameter across steps (Paddle's ``master_weights``): the update is
applied to the master and the parameter is its rounded copy, so updates smaller than the
parameter's 16-bit resolution still add up. float32 and float64 parameters are updated in
their own dtype, in place.
"""

from __future__ import annotations

from typing import Any

import numpy

from . import backend

FLOAT32 = numpy.dtype("float32")
FLOAT64 = numpy.dtype("float64")
# Paddle's name for a parameter's master weight: f"{param.name}{MASTER_SUFFIX}".
MASTER_SUFFIX = "_fp32_master_0"


def compute_dtype(dtype: numpy.dtype) -> numpy.dtype:
    """float64 for float64 parameters, float32 for every other floating dtype."""
    return FLOAT64 if dtype == FLOAT64 else FLOAT32


def is_sixteen_bit(dtype: numpy.dtype) -> bool:
    """True for float16 and bfloat16, the only 2-byte floating dtypes."""
    return dtype.itemsize == 2 and backend.is_floating(dtype)


def working_param(param_data: Any, master: Any) -> Any:
    """The array an update changes: the master, the parameter itself, or a widened copy.

    Parameters are floating, so a 2-byte one is float16 or bfloat16.
    """
    if master is not None:
        return master
    return param_data.astype(FLOAT32) if param_data.dtype.itemsize == 2 else param_data


def store_param(param_data: Any, working: Any) -> None:
    """Write an updated working array back into the parameter, rounding if it was widened."""
    if working is not param_data:
        param_data[...] = working


def with_l2(grad: Any, coeff: float, param_data: Any) -> Any:
    """``grad + coeff * param`` in the compute dtype (Paddle's L2Decay added to the gradient)."""
    dtype = compute_dtype(param_data.dtype)
    return grad.astype(dtype, copy=False) + dtype.type(coeff) * param_data.astype(dtype, copy=False)
