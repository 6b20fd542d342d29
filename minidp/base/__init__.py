"""Paddle's ``paddle.base`` (the former ``fluid``), as far as dynamic-graph code uses it:
``base.dygraph`` (``guard``, ``enabled``, ...), ``ParamAttr``, the places and mode switches.
Its static-graph part (Program, Executor, ``core``, ...) is not offered: see docs/paddle.md."""

from . import dygraph
from ..core.backend import CPUPlace, CUDAPlace, is_compiled_with_cuda
from ..core.initializer import set_global_initializer
from ..core.param_attr import ParamAttr
from ..core.tensor import Tensor
from ..framework import in_dynamic_mode as in_dygraph_mode
from .dygraph import disable_dygraph, enable_dygraph

enable_imperative, disable_imperative = enable_dygraph, disable_dygraph

__all__ = [
    "dygraph",
    "CPUPlace",
    "CUDAPlace",
    "ParamAttr",
    "Tensor",
    "in_dygraph_mode",
    "enable_dygraph",
    "disable_dygraph",
    "enable_imperative",
    "disable_imperative",
    "is_compiled_with_cuda",
    "set_global_initializer",
]
