"""Activation layers: thin wrappers around the activation ops."""
from __future__ import annotations

from typing import Any, Optional

from ...autograd.tensor import Tensor
from .. import functional as F
from ..initializer import Constant
from ..layer import Layer


class ReLU(Layer):
    """max(x, 0)."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class GELU(Layer):
    """Gaussian error linear unit (exact erf form, or the tanh approximation)."""

    def __init__(self, approximate: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class Tanh(Layer):
    """Hyperbolic tangent."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Layer):
    """Logistic sigmoid."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Softmax(Layer):
    """Softmax along ``axis``."""

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.axis)


class LogSoftmax(Layer):
    """Log-softmax along ``axis``."""

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.axis)


class _Activation(Layer):
    """A layer that applies one activation function with the arguments it was built with."""

    function = None

    def __init__(self, **arguments: Any) -> None:
        super().__init__()
        self._arguments = arguments

    def forward(self, x: Tensor) -> Tensor:
        return type(self).function(x, **self._arguments)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._arguments.items())


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    function = staticmethod(F.relu6)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class LeakyReLU(_Activation):
    """x where x > 0, else negative_slope * x."""

    function = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope: float = 0.01, name: Optional[str] = None) -> None:
        super().__init__(negative_slope=negative_slope)


class ELU(_Activation):
    """x where x > 0, else alpha * (e ** x - 1)."""

    function = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, name: Optional[str] = None) -> None:
        super().__init__(alpha=alpha)


class SELU(_Activation):
    """Scaled ELU with the self-normalising constants."""

    function = staticmethod(F.selu)

    def __init__(self, scale: float = 1.0507009873554805, alpha: float = 1.6732632423543772,
                 name: Optional[str] = None) -> None:
        super().__init__(scale=scale, alpha=alpha)


class CELU(_Activation):
    """max(0, x) + min(0, alpha * (e ** (x / alpha) - 1))."""

    function = staticmethod(F.celu)

    def __init__(self, alpha: float = 1.0, name: Optional[str] = None) -> None:
        super().__init__(alpha=alpha)


class Silu(_Activation):
    """x * sigmoid(x)."""

    function = staticmethod(F.silu)

    def __init__(self, inplace: bool = False, name: Optional[str] = None) -> None:
        super().__init__(inplace=inplace)


class Swish(_Activation):
    """x * sigmoid(x)."""

    function = staticmethod(F.swish)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    function = staticmethod(F.mish)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Softplus(_Activation):
    """log(1 + e ** (beta * x)) / beta, linear above ``threshold``."""

    function = staticmethod(F.softplus)

    def __init__(self, beta: float = 1, threshold: float = 20, name: Optional[str] = None) -> None:
        super().__init__(beta=beta, threshold=threshold)


class Softsign(_Activation):
    """x / (1 + |x|)."""

    function = staticmethod(F.softsign)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Softshrink(_Activation):
    """Shrink x toward 0 by ``threshold``; 0 inside [-threshold, threshold]."""

    function = staticmethod(F.softshrink)

    def __init__(self, threshold: float = 0.5, name: Optional[str] = None) -> None:
        super().__init__(threshold=threshold)


class Hardshrink(_Activation):
    """x where |x| > threshold, else 0."""

    function = staticmethod(F.hardshrink)

    def __init__(self, threshold: float = 0.5, name: Optional[str] = None) -> None:
        super().__init__(threshold=threshold)


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    function = staticmethod(F.tanhshrink)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Hardsigmoid(_Activation):
    """clip(x / 6 + 0.5, 0, 1)."""

    function = staticmethod(F.hardsigmoid)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Hardswish(_Activation):
    """x * clip(x + 3, 0, 6) / 6."""

    function = staticmethod(F.hardswish)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class Hardtanh(_Activation):
    """clip(x, min, max)."""

    function = staticmethod(F.hardtanh)

    def __init__(self, min: float = -1.0, max: float = 1.0, name: Optional[str] = None) -> None:
        super().__init__(min=min, max=max)


class LogSigmoid(_Activation):
    """log(sigmoid(x))."""

    function = staticmethod(F.log_sigmoid)

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__()


class ThresholdedReLU(_Activation):
    """x where x > threshold, else ``value``."""

    function = staticmethod(F.thresholded_relu)

    def __init__(self, threshold: float = 1.0, value: float = 0.0, name: Optional[str] = None) -> None:
        super().__init__(threshold=threshold, value=value)


class GLU(_Activation):
    """a * sigmoid(b) for the two halves a, b of x along ``axis``."""

    function = staticmethod(F.glu)

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        super().__init__(axis=axis)


class Maxout(_Activation):
    """The maximum over each run of ``groups`` channels along ``axis``."""

    function = staticmethod(F.maxout)

    def __init__(self, groups: int, axis: int = 1, name: Optional[str] = None) -> None:
        super().__init__(groups=groups, axis=axis)


class RReLU(Layer):
    """Leaky ReLU with a random slope in [lower, upper] while training, their mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, name: Optional[str] = None) -> None:
        super().__init__()
        self.lower, self.upper = lower, upper

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, training=self.training)


class PReLU(Layer):
    """Leaky ReLU whose negative slope is learned: one (``num_parameters=1``) or one per channel."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, weight_attr: Any = None,
                 data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self._data_format = data_format
        self._weight = self.create_parameter([num_parameters], attr=weight_attr,
                                             default_initializer=Constant(init))

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
