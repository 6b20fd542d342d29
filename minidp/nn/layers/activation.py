"""Activation layers: one table row per activation op; PReLU (a learned slope) and Softmax2D
(an input check) are written out."""

from __future__ import annotations

from typing import Any, Optional

from ...core.tensor import Tensor
from .. import functional as F
from ..initializer import Constant
from ...core.layer import Layer
from .factory import REQUIRED, functional_layer

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Maxout",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SELU",
    "Sigmoid",
    "Silu",
    "Softmax",
    "Softmax2D",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Swish",
    "Tanh",
    "Tanhshrink",
    "ThresholdedReLU",
]

ReLU = functional_layer("ReLU", F.relu, {}, "max(x, 0).")
GELU = functional_layer(
    "GELU", F.gelu, {"approximate": False}, "Gaussian error linear unit (exact erf form, or the tanh approximation)."
)
Tanh = functional_layer("Tanh", F.tanh, {}, "Hyperbolic tangent.")
Sigmoid = functional_layer("Sigmoid", F.sigmoid, {}, "Logistic sigmoid.")
Softmax = functional_layer("Softmax", F.softmax, {"axis": -1}, "Softmax along ``axis``.")
LogSoftmax = functional_layer("LogSoftmax", F.log_softmax, {"axis": -1}, "Log-softmax along ``axis``.")
ReLU6 = functional_layer("ReLU6", F.relu6, {}, "min(max(x, 0), 6).")
LeakyReLU = functional_layer(
    "LeakyReLU", F.leaky_relu, {"negative_slope": 0.01}, "x where x > 0, else negative_slope * x."
)
ELU = functional_layer("ELU", F.elu, {"alpha": 1.0}, "x where x > 0, else alpha * (e ** x - 1).")
SELU = functional_layer(
    "SELU",
    F.selu,
    {"scale": 1.0507009873554805, "alpha": 1.6732632423543772},
    "Scaled ELU with the self-normalising constants.",
)
CELU = functional_layer("CELU", F.celu, {"alpha": 1.0}, "max(0, x) + min(0, alpha * (e ** (x / alpha) - 1)).")
Silu = functional_layer("Silu", F.silu, {"inplace": False}, "x * sigmoid(x).")
Swish = functional_layer("Swish", F.swish, {}, "x * sigmoid(x).")
Mish = functional_layer("Mish", F.mish, {}, "x * tanh(softplus(x)).")
Softplus = functional_layer(
    "Softplus", F.softplus, {"beta": 1, "threshold": 20}, "log(1 + e ** (beta * x)) / beta, linear above ``threshold``."
)
Softsign = functional_layer("Softsign", F.softsign, {}, "x / (1 + |x|).")
Softshrink = functional_layer(
    "Softshrink",
    F.softshrink,
    {"threshold": 0.5},
    "Shrink x toward 0 by ``threshold``; 0 inside [-threshold, threshold].",
)
Hardshrink = functional_layer("Hardshrink", F.hardshrink, {"threshold": 0.5}, "x where |x| > threshold, else 0.")
Tanhshrink = functional_layer("Tanhshrink", F.tanhshrink, {}, "x - tanh(x).")
Hardsigmoid = functional_layer("Hardsigmoid", F.hardsigmoid, {}, "clip(x / 6 + 0.5, 0, 1).")
Hardswish = functional_layer("Hardswish", F.hardswish, {}, "x * clip(x + 3, 0, 6) / 6.")
Hardtanh = functional_layer("Hardtanh", F.hardtanh, {"min": -1.0, "max": 1.0}, "clip(x, min, max).")
LogSigmoid = functional_layer("LogSigmoid", F.log_sigmoid, {}, "log(sigmoid(x)).")
ThresholdedReLU = functional_layer(
    "ThresholdedReLU", F.thresholded_relu, {"threshold": 1.0, "value": 0.0}, "x where x > threshold, else ``value``."
)
GLU = functional_layer("GLU", F.glu, {"axis": -1}, "a * sigmoid(b) for the two halves a, b of x along ``axis``.")
Maxout = functional_layer(
    "Maxout",
    F.maxout,
    {"groups": REQUIRED, "axis": 1},
    "The maximum over each run of ``groups`` channels along ``axis``.",
)
RReLU = functional_layer(
    "RReLU",
    F.rrelu,
    {"lower": 1.0 / 8.0, "upper": 1.0 / 3.0},
    "Leaky ReLU with a random slope in [lower, upper] while training, their mean in eval mode.",
    training=True,
)


class PReLU(Layer):
    """Leaky ReLU whose negative slope is learned: one (``num_parameters=1``) or one per channel."""

    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        weight_attr: Any = None,
        data_format: str = "NCHW",
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        self._data_format = data_format
        self._weight = self.create_parameter([num_parameters], attr=weight_attr, default_initializer=Constant(init))

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self._weight, data_format=self._data_format)


class Softmax2D(Layer):
    """Softmax over the channels of a [C, H, W] or [N, C, H, W] tensor (axis -3)."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2D expects a 3-D or 4-D tensor, got shape {x.shape}")
        return F.softmax(x, axis=-3)
