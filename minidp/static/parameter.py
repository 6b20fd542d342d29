"""``create_parameter``: a free-standing trainable parameter, as dygraph scripts make one outside
any layer (Paddle's ``paddle.create_parameter`` and ``paddle.static.create_parameter``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy

from ..core import backend
from ..core.initializer import Initializer
from ..core.layer import Layer
from ..core.param_attr import ParamAttr
from ..core.tensor import Parameter

__all__ = ["create_parameter"]

_DTYPES = ("bool", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def _dtype_name(dtype: Any) -> Optional[str]:
    """The dtype's name, None for something that is no dtype."""
    if dtype is None:
        return None
    try:
        return backend.convert_dtype(dtype).name
    except (TypeError, ValueError, KeyError):
        return None


def create_parameter(
    shape: Sequence[int],
    dtype: Any,
    name: Optional[str] = None,
    attr: Optional[ParamAttr] = None,
    is_bias: bool = False,
    default_initializer: Optional[Initializer] = None,
) -> Parameter:
    """A new parameter of ``shape`` and ``dtype``, initialised like a layer's (``attr``'s
    initializer, else the global one, else ``default_initializer``, else zeros for a bias and
    Xavier-uniform otherwise) and named ``create_parameter_N.w_0`` (``.b_0`` for a bias) unless
    ``name`` or ``attr.name`` says otherwise; ``name`` is used only when ``attr`` is None."""
    if not isinstance(shape, (list, tuple, numpy.ndarray)):
        raise TypeError(f"create_parameter: shape must be a list or tuple of ints, got {type(shape).__name__}")
    for dim in shape:
        if isinstance(dim, bool) or not isinstance(dim, (int, numpy.integer)):
            raise TypeError(f"create_parameter: every item of shape must be an int, got {dim!r} in {list(shape)}")
    if _dtype_name(dtype) not in _DTYPES:
        raise TypeError(f"create_parameter: dtype must be one of {', '.join(_DTYPES)}; got {dtype!r}")
    if attr is not None and not isinstance(attr, ParamAttr):
        raise TypeError(f"create_parameter: attr must be a ParamAttr or None, got {type(attr).__name__}")
    if default_initializer is not None and not isinstance(default_initializer, Initializer):
        raise TypeError(
            f"create_parameter: default_initializer must be an initializer (minidp.nn.initializer.*), "
            f"got {type(default_initializer).__name__}"
        )
    if name is not None and not isinstance(name, str):
        raise TypeError(f"create_parameter: name must be a str or None, got {type(name).__name__}")
    if attr is None:
        attr = ParamAttr(name=name)
    owner = Layer(name_scope="create_parameter", dtype=dtype)
    return owner.create_parameter(
        shape, attr=attr, dtype=dtype, is_bias=is_bias, default_initializer=default_initializer
    )
