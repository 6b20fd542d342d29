"""Every differentiable op, and the Tensor methods and operators that call them."""
from __future__ import annotations

from ..autograd.tensor import Tensor
from .compare import (allclose, equal, greater_equal, greater_than, isfinite, isnan, less_equal,
                      less_than, logical_and, logical_not, logical_or, logical_xor, not_equal)
from .compare import equal_all, isclose, isinf, isneginf, isposinf, isreal
from .creation import (arange, eye, full, full_like, normal, ones, ones_like, rand, randint, randn,
                       randperm, seed, to_tensor, uniform, zeros, zeros_like)
from .linalg import matmul
from .math import (add, astype, cast, clip, divide, gelu, maximum, minimum, multiply,
                   pow, scale, subtract, where)
from .unary import (abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, deg2rad, erf, erfinv, exp,
                    expm1, floor, frac, log, log1p, log2, log10, logit, neg, rad2deg, reciprocal, relu, round,
                    rsqrt, sgn, sigmoid, sign, sin, sinh, sqrt, square, stanh, tan, tanh, trunc)
from .binary import (addmm, atan2, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
                     bitwise_right_shift, bitwise_xor, copysign, floor_divide, floor_mod, fmax, fmin,
                     heaviside, hypot, lerp, logaddexp, mod, remainder)
from .reduction import argmax, argmin, log_softmax, logsumexp, max, mean, min, softmax, sum
from .reduction import all, amax, amin, any, count_nonzero, nanmean, nansum, prod
from .cumulative import cummax, cummin, cumprod, cumsum, logcumsumexp
from .statistics import median, nanmedian, quantile, std, var
from .unary import digamma, lgamma
from .shape import concat, expand, flatten, getitem, reshape, split, squeeze, stack, transpose, unsqueeze
from .inplace import fill_, inplace_forms, normal_, uniform_, zero_
from .math import add_n, clamp, div, mul, sub, true_divide
from .compare import eq, ge, greater, gt, is_complex, is_floating_point, is_integer, le, less, lt, ne, signbit
from .unary import gammaln, nan_to_num, negative, positive, sinc
from .binary import frexp, gcd, lcm, ldexp, nextafter
from .statistics import nanquantile
from .cumulative import cumulative_trapezoid, diff, trapezoid
from .inplace import increment

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
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "cos",
    "cosh",
    "deg2rad",
    "erf",
    "erfinv",
    "expm1",
    "floor",
    "frac",
    "log1p",
    "log2",
    "log10",
    "logit",
    "rad2deg",
    "reciprocal",
    "round",
    "rsqrt",
    "sgn",
    "sign",
    "sin",
    "sinh",
    "stanh",
    "tan",
    "trunc",
    "addmm",
    "atan2",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "copysign",
    "floor_divide",
    "floor_mod",
    "fmax",
    "fmin",
    "heaviside",
    "hypot",
    "lerp",
    "logaddexp",
    "mod",
    "remainder",
    "equal_all",
    "isclose",
    "isinf",
    "isneginf",
    "isposinf",
    "isreal",
    "all",
    "amax",
    "amin",
    "any",
    "count_nonzero",
    "nanmean",
    "nansum",
    "prod",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "logcumsumexp",
    "median",
    "nanmedian",
    "quantile",
    "std",
    "var",
]
_INPLACE = inplace_forms(globals())
globals().update(_INPLACE)
__all__ += ["digamma", "lgamma"]
__all__ += [
    "add_n", "clamp", "div", "mul", "sub", "true_divide", "eq", "ge", "greater", "gt", "is_complex",
    "is_floating_point", "is_integer", "le", "less", "lt", "ne", "signbit", "gammaln", "nan_to_num", "negative",
    "positive", "sinc", "frexp", "gcd", "lcm", "ldexp", "nextafter", "nanquantile", "cumulative_trapezoid",
    "diff", "trapezoid", "increment"
]
__all__ += sorted(_INPLACE) + ["fill_", "normal_", "uniform_", "zero_"]


def _swap(op):
    """The reflected form of a binary op (``2 - t`` calls ``t.__rsub__(2)``)."""
    return lambda self, other: op(other, self)


_METHODS = {
    "__add__": add, "__radd__": add, "__sub__": subtract, "__rsub__": _swap(subtract),
    "__mul__": multiply, "__rmul__": multiply, "__truediv__": divide, "__rtruediv__": _swap(divide),
    "__pow__": pow, "__rpow__": _swap(pow), "__neg__": neg, "__abs__": abs,
    "__matmul__": matmul, "__rmatmul__": _swap(matmul), "__getitem__": getitem,
    "__eq__": equal, "__ne__": not_equal, "__lt__": less_than, "__le__": less_equal,
    "__gt__": greater_than, "__ge__": greater_equal, "__invert__": bitwise_not,
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
_METHODS.update({name: globals()[name] for name in (
    "acos", "acosh", "addmm", "all", "amax", "amin", "any", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "copysign", "cos", "cosh", "count_nonzero", "cummax", "cummin", "cumprod", "cumsum", "deg2rad",
    "equal_all", "erf", "erfinv", "expm1", "floor", "floor_divide", "floor_mod", "fmax", "fmin", "frac",
    "heaviside", "hypot", "isclose", "isinf", "isneginf", "isposinf", "isreal", "lerp", "log10", "log1p",
    "log2", "logaddexp", "logcumsumexp", "logical_and", "logical_or", "logical_xor", "logit", "median", "mod",
    "nanmean", "nanmedian", "nansum", "prod", "quantile", "rad2deg", "reciprocal", "remainder", "round",
    "rsqrt", "sgn", "sign", "sin", "sinh", "stanh", "std", "tan", "trunc", "var", "fill_", "normal_",
    "uniform_", "zero_", "digamma", "lgamma",
    "clamp", "div", "mul", "sub", "eq", "ge", "greater", "gt", "is_complex", "is_floating_point", "is_integer",
    "le", "less", "lt", "ne", "signbit", "gammaln", "nan_to_num", "negative", "positive", "sinc", "frexp",
    "gcd", "lcm", "ldexp", "nextafter", "nanquantile", "cumulative_trapezoid", "diff", "trapezoid",
)})
_METHODS.update(_INPLACE)
_METHODS.update({
    "__mod__": remainder, "__rmod__": _swap(remainder), "__floordiv__": floor_divide,
    "__rfloordiv__": _swap(floor_divide), "__and__": bitwise_and, "__rand__": bitwise_and,
    "__or__": bitwise_or, "__ror__": bitwise_or, "__xor__": bitwise_xor, "__rxor__": bitwise_xor,
    "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
})
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(lambda self: transpose(self, list(range(self.ndim))[::-1]))
