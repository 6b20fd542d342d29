"""Every differentiable op, and the Tensor methods and operators that call them."""
from __future__ import annotations

from ..autograd.tensor import Tensor
from .compare import (allclose, equal, greater_equal, greater_than, isfinite, isnan, less_equal,
                      less_than, logical_and, logical_not, logical_or, logical_xor, not_equal)
from .creation import (arange, eye, full, full_like, normal, ones, ones_like, rand, randint, randn,
                       randperm, seed, to_tensor, uniform, zeros, zeros_like)
from .linalg import matmul
from .math import (abs, add, astype, cast, clip, divide, exp, gelu, log, maximum, minimum, multiply,
                   neg, pow, relu, scale, sigmoid, sqrt, square, subtract, tanh, where)
from .reduction import argmax, argmin, log_softmax, logsumexp, max, mean, min, softmax, sum
from .shape import concat, expand, flatten, getitem, reshape, split, squeeze, stack, transpose, unsqueeze

__all__ = [
    "abs",
    "add",
    "allclose",
    "arange",
    "argmax",
    "argmin",
    "astype",
    "cast",
    "clip",
    "concat",
    "divide",
    "equal",
    "exp",
    "expand",
    "eye",
    "flatten",
    "full",
    "full_like",
    "gelu",
    "getitem",
    "greater_equal",
    "greater_than",
    "isfinite",
    "isnan",
    "less_equal",
    "less_than",
    "log",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "neg",
    "normal",
    "not_equal",
    "ones",
    "ones_like",
    "pow",
    "rand",
    "randint",
    "randn",
    "randperm",
    "relu",
    "reshape",
    "scale",
    "seed",
    "sigmoid",
    "softmax",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "tanh",
    "to_tensor",
    "transpose",
    "uniform",
    "unsqueeze",
    "where",
    "zeros",
    "zeros_like",
]


def _swap(op):
    """The reflected form of a binary op (``2 - t`` calls ``t.__rsub__(2)``)."""
    return lambda self, other: op(other, self)


_METHODS = {
    "__add__": add, "__radd__": add, "__sub__": subtract, "__rsub__": _swap(subtract),
    "__mul__": multiply, "__rmul__": multiply, "__truediv__": divide, "__rtruediv__": _swap(divide),
    "__pow__": pow, "__rpow__": _swap(pow), "__neg__": neg, "__abs__": abs,
    "__matmul__": matmul, "__rmatmul__": _swap(matmul), "__getitem__": getitem,
    "__eq__": equal, "__ne__": not_equal, "__lt__": less_than, "__le__": less_equal,
    "__gt__": greater_than, "__ge__": greater_equal, "__invert__": logical_not,
    "add": add, "subtract": subtract, "multiply": multiply, "divide": divide, "pow": pow,
    "neg": neg, "abs": abs, "exp": exp, "log": log, "sqrt": sqrt, "square": square, "tanh": tanh,
    "sigmoid": sigmoid, "relu": relu, "maximum": maximum, "minimum": minimum, "clip": clip,
    "scale": scale, "astype": astype, "cast": cast, "matmul": matmul, "mm": matmul,
    "sum": sum, "mean": mean, "max": max, "min": min, "argmax": argmax, "argmin": argmin,
    "logsumexp": logsumexp, "reshape": reshape, "transpose": transpose, "flatten": flatten,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "split": split, "expand": expand,
    "equal": equal, "not_equal": not_equal, "less_than": less_than, "less_equal": less_equal,
    "greater_than": greater_than, "greater_equal": greater_equal, "isnan": isnan,
    "isfinite": isfinite, "allclose": allclose, "logical_not": logical_not,
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(lambda self: transpose(self, list(range(self.ndim))[::-1]))
