"""Reverse-mode automatic differentiation: the tape, Tensor, hooks and PyLayer."""

from ..core.engine import is_grad_enabled, no_grad, set_grad_enabled
from .py_layer import PyLayer, PyLayerContext
from ..core.tensor import Parameter, Tensor

__all__ = ["Tensor", "Parameter", "no_grad", "is_grad_enabled", "set_grad_enabled", "PyLayer", "PyLayerContext"]
