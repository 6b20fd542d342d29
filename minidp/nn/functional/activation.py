"""Activations. The elementwise ones are defined here from their forward and derivative, through
the table mechanism of :mod:`minidp.ops.elementwise`: one ``unary_op`` line each for those without
parameters, :func:`~minidp.ops.elementwise.elementwise` with closures over the parameters for the
others (composing ops would record several tape nodes and cost up to four times as much). The
rest (prelu, glu, gumbel_softmax, ...) compose ops that already have gradients.

Derivatives keep the input's dtype (a float32 activation sends float32 gradients back).
"""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ...core.tensor import Tensor
from ...ops import (
    argmax,
    gelu,
    log_softmax,
    max,
    multiply,
    relu,
    reshape,
    sigmoid,
    softmax,
    split,
    tanh,
    uniform,
    where,
)
from ...core.op_util import wrap
from ...ops.elementwise import KEEP, elementwise, unary_op
from ...ops.inplace import inplace_form
from ...ops.unary import _sigmoid
from ._util import check_tensor

_SELU_SCALE = 1.0507009873554805
_SELU_ALPHA = 1.6732632423543772


def _pick(xp: Any, condition: Any, a: Any, b: Any, x: Any) -> Any:
    """``where(condition, a, b)`` in x's dtype (NumPy makes float64 from Python numbers)."""
    return xp.where(condition, a, b).astype(x.dtype, copy=False)


def _softplus(xp: Any, v: Any) -> Any:
    """log(1 + e ** v) without overflow."""
    return xp.maximum(v, 0) + xp.log1p(xp.exp(-xp.abs(v)))


def _elu(xp: Any, v: Any, alpha: float) -> Any:
    """v where v > 0, else alpha * (e ** v - 1): the curve of elu and selu."""
    return xp.where(v > 0, v, alpha * xp.expm1(xp.minimum(v, 0)))


def _silu_slope(xp: Any, v: Any, y: Any) -> Any:
    s = _sigmoid(xp, v)
    return s * (1 + v * (1 - s))


def _mish_slope(xp: Any, v: Any, y: Any) -> Any:
    t = xp.tanh(_softplus(xp, v))
    return t + v * _sigmoid(xp, v) * (1 - t * t)


# The activations without parameters, one table line each (see minidp.ops.elementwise):
# name = unary_op(name, doc, dtype rule, forward (xp, x), dy/dx (xp, x, y)).
_silu = unary_op("silu", "x * sigmoid(x).", KEEP, lambda xp, v: v * _sigmoid(xp, v), _silu_slope)
mish = unary_op("mish", "x * tanh(softplus(x)).", KEEP, lambda xp, v: v * xp.tanh(_softplus(xp, v)), _mish_slope)
softsign = unary_op(
    "softsign", "x / (1 + |x|).", KEEP, lambda xp, v: v / (1 + xp.abs(v)), lambda xp, v, y: 1 / ((1 + xp.abs(v)) ** 2)
)
tanhshrink = unary_op(
    "tanhshrink", "x - tanh(x).", KEEP, lambda xp, v: v - xp.tanh(v), lambda xp, v, y: xp.tanh(v) ** 2
)
hardswish = unary_op(
    "hardswish",
    "x * clip(x + 3, 0, 6) / 6.",
    KEEP,
    lambda xp, v: v * xp.clip(v + 3, 0, 6) / 6,
    lambda xp, v, y: _pick(xp, v < -3, 0.0, _pick(xp, v > 3, 1.0, (2 * v + 3) / 6, v), v),
)
log_sigmoid = unary_op(
    "log_sigmoid",
    "log(sigmoid(x)) = -softplus(-x), stable for large |x|.",
    KEEP,
    lambda xp, v: -_softplus(xp, -v),
    lambda xp, v, y: _sigmoid(xp, -v),
)


def _clip(x: Tensor, low: float, high: float, op: str) -> Tensor:
    """clip(x, low, high), with gradient 0 at the bounds as Paddle's relu6 and hardtanh have."""
    return elementwise(
        x,
        lambda xp, v: xp.clip(v, low, high).astype(v.dtype, copy=False),
        lambda xp, v, y: (v > low) & (v < high),
        KEEP,
        op,
    )


def relu6(x: Tensor, name: Optional[str] = None) -> Tensor:
    """min(max(x, 0), 6)."""
    return _clip(x, 0, 6, "relu6")


def hardtanh(x: Tensor, min: float = -1.0, max: float = 1.0, name: Optional[str] = None) -> Tensor:
    """clip(x, min, max)."""
    return _clip(x, min, max, "hardtanh")


def leaky_relu(x: Tensor, negative_slope: float = 0.01, name: Optional[str] = None) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    return elementwise(
        x,
        lambda xp, v: xp.where(v > 0, v, v * negative_slope),
        lambda xp, v, y: _pick(xp, v > 0, 1.0, negative_slope, v),
        KEEP,
        "leaky_relu",
    )


def elu(x: Tensor, alpha: float = 1.0, name: Optional[str] = None) -> Tensor:
    """x where x > 0, else alpha * (e ** x - 1)."""
    return elementwise(
        x,
        lambda xp, v: _elu(xp, v, alpha),
        lambda xp, v, y: xp.where(v > 0, 1, y + alpha).astype(v.dtype, copy=False),
        KEEP,
        "elu",
    )


def selu(x: Tensor, scale: float = _SELU_SCALE, alpha: float = _SELU_ALPHA, name: Optional[str] = None) -> Tensor:
    """scale * (x where x > 0, else alpha * (e ** x - 1))."""
    return elementwise(
        x,
        lambda xp, v: scale * _elu(xp, v, alpha),
        lambda xp, v, y: scale * _pick(xp, v > 0, 1.0, alpha * xp.exp(xp.minimum(v, 0)), v),
        KEEP,
        "selu",
    )


def celu(x: Tensor, alpha: float = 1.0, name: Optional[str] = None) -> Tensor:
    """max(0, x) + min(0, alpha * (e ** (x / alpha) - 1))."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return elementwise(
        x,
        lambda xp, v: xp.where(v > 0, v, alpha * xp.expm1(xp.minimum(v, 0) / alpha)),
        lambda xp, v, y: _pick(xp, v > 0, 1.0, xp.exp(xp.minimum(v, 0) / alpha), v),
        KEEP,
        "celu",
    )


_silu_ = inplace_form(_silu, "silu")


def silu(x: Tensor, inplace: bool = False, name: Optional[str] = None) -> Tensor:
    """x * sigmoid(x); with ``inplace`` x itself is updated (see :mod:`minidp.ops.inplace`)."""
    return _silu_(x) if inplace else _silu(x)


def swish(x: Tensor, name: Optional[str] = None) -> Tensor:
    """x * sigmoid(x) (the same function as :func:`silu`)."""
    return _silu(x)


def softplus(x: Tensor, beta: float = 1, threshold: float = 20, name: Optional[str] = None) -> Tensor:
    """log(1 + e ** (beta * x)) / beta, and x itself where beta * x > threshold."""
    return elementwise(
        x,
        lambda xp, v: xp.where(v * beta > threshold, v, _softplus(xp, v * beta) / beta),
        lambda xp, v, y: _pick(xp, v * beta > threshold, 1.0, _sigmoid(xp, v * beta), v),
        KEEP,
        "softplus",
    )


def softshrink(x: Tensor, threshold: float = 0.5, name: Optional[str] = None) -> Tensor:
    """x - threshold above threshold, x + threshold below -threshold, 0 between."""
    return elementwise(
        x,
        lambda xp, v: _pick(xp, v > threshold, v - threshold, xp.where(v < -threshold, v + threshold, 0), v),
        lambda xp, v, y: xp.abs(v) > threshold,
        KEEP,
        "softshrink",
    )


def hardshrink(x: Tensor, threshold: float = 0.5, name: Optional[str] = None) -> Tensor:
    """x where |x| > threshold, else 0."""
    return elementwise(
        x,
        lambda xp, v: _pick(xp, xp.abs(v) > threshold, v, 0, v),
        lambda xp, v, y: xp.abs(v) > threshold,
        KEEP,
        "hardshrink",
    )


def hardsigmoid(x: Tensor, slope: float = 0.1666667, offset: float = 0.5, name: Optional[str] = None) -> Tensor:
    """clip(slope * x + offset, 0, 1)."""
    return elementwise(
        x,
        lambda xp, v: xp.clip(v * slope + offset, 0, 1),
        lambda xp, v, y: _pick(xp, (y > 0) & (y < 1), slope, 0.0, v),
        KEEP,
        "hardsigmoid",
    )


def thresholded_relu(x: Tensor, threshold: float = 1.0, value: float = 0.0, name: Optional[str] = None) -> Tensor:
    """x where x > threshold, else ``value``."""
    return elementwise(
        x,
        lambda xp, v: _pick(xp, v > threshold, v, value, v),
        lambda xp, v, y: v > threshold,
        KEEP,
        "thresholded_relu",
    )


def prelu(x: Tensor, weight: Tensor, data_format: str = "NCHW", name: Optional[str] = None) -> Tensor:
    """x where x > 0, else weight * x; ``weight`` has one slope or one per channel."""
    check_tensor("prelu", "x", x)
    check_tensor("prelu", "weight", weight)
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError(f"prelu: data_format must be like 'NCHW' or 'NHWC', got {data_format!r}")
    if weight.size != 1:
        channel_axis = 1 if data_format[1] == "C" else x.ndim - 1
        if x.ndim < 2 or x.shape[channel_axis] != weight.size:
            raise ValueError(
                f"prelu: weight has {weight.size} slopes but x (shape {x.shape}, {data_format}) "
                f"has {x.shape[channel_axis] if x.ndim >= 2 else 1} channels"
            )
        shape = [1] * x.ndim
        shape[channel_axis] = weight.size
        weight = reshape(weight, shape)
    return where(x > 0, x, multiply(weight, x))


def rrelu(
    x: Tensor, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, training: bool = True, name: Optional[str] = None
) -> Tensor:
    """leaky_relu with a slope drawn from U(lower, upper) per element in training, their mean in eval."""
    check_tensor("rrelu", "x", x)
    if not 0 <= lower <= upper <= 1:
        raise ValueError(f"rrelu: need 0 <= lower <= upper <= 1, got lower={lower}, upper={upper}")
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    slopes = uniform(x.shape, x.dtype, min=lower, max=upper)
    return where(x > 0, x, multiply(slopes, x))


def glu(x: Tensor, axis: int = -1, name: Optional[str] = None) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of x along ``axis``."""
    check_tensor("glu", "x", x)
    if x.shape[axis] % 2:
        raise ValueError(f"glu: axis {axis} of x (shape {x.shape}) must have even length")
    a, b = split(x, 2, axis=axis)
    return a * sigmoid(b)


def gumbel_softmax(
    x: Tensor, temperature: float = 1.0, hard: bool = False, axis: int = -1, name: Optional[str] = None
) -> Tensor:
    """softmax((x + Gumbel noise) / temperature); with ``hard`` the forward value is one-hot at
    the arg-max, while the gradient is that of the soft sample (straight-through)."""
    check_tensor("gumbel_softmax", "x", x)
    if temperature <= 0:
        raise ValueError(f"gumbel_softmax: temperature must be positive, got {temperature}")
    noise = uniform(x.shape, x.dtype, min=1e-10, max=1.0)
    gumbel = -(-noise.log()).log()
    soft = softmax((x + gumbel) * (1.0 / temperature), axis=axis)
    if not hard:
        return soft
    data = soft._data
    xp = backend.get_array_module(data)
    axis = axis % data.ndim
    index = argmax(soft, axis=axis, keepdim=True)._data
    positions = xp.arange(data.shape[axis]).reshape((-1,) + (1,) * (data.ndim - axis - 1))
    one_hot = wrap((positions == index).astype(data.dtype))
    return one_hot - soft.detach() + soft


def maxout(x: Tensor, groups: int, axis: int = 1, name: Optional[str] = None) -> Tensor:
    """The maximum over each run of ``groups`` consecutive channels along ``axis``."""
    check_tensor("maxout", "x", x)
    axis = axis % x.ndim
    channels = x.shape[axis]
    if groups <= 0 or channels % groups:
        raise ValueError(f"maxout: {channels} channels cannot be split into groups of {groups}")
    shape = x.shape[:axis] + [channels // groups, groups] + x.shape[axis + 1 :]
    return max(reshape(x, shape), axis=axis + 1)


relu_ = inplace_form(relu, "relu")
elu_ = inplace_form(elu)
leaky_relu_ = inplace_form(leaky_relu)
hardtanh_ = inplace_form(hardtanh)
softmax_ = inplace_form(softmax, "softmax")
thresholded_relu_ = inplace_form(thresholded_relu)
tanh_ = inplace_form(tanh, "tanh")

__all__ = [
    "relu",
    "relu6",
    "gelu",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "leaky_relu",
    "elu",
    "selu",
    "celu",
    "silu",
    "swish",
    "mish",
    "softplus",
    "softsign",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "log_sigmoid",
    "thresholded_relu",
    "prelu",
    "rrelu",
    "glu",
    "gumbel_softmax",
    "maxout",
    "relu_",
    "elu_",
    "leaky_relu_",
    "hardtanh_",
    "softmax_",
    "thresholded_relu_",
    "tanh_",
]
