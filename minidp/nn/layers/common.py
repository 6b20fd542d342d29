"""Linear, Bilinear, Unflatten and Identity, written out; Flatten and the dropout layers, one
table row each."""

from __future__ import annotations

from typing import Any, Optional

from ...core.tensor import Tensor
from ...ops import flatten, reshape
from ...core.op_util import check_size
from .. import functional as F
from ...core.layer import Layer
from .factory import functional_layer

__all__ = [
    "AlphaDropout",
    "Bilinear",
    "Dropout",
    "Dropout2D",
    "Dropout3D",
    "FeatureAlphaDropout",
    "Flatten",
    "Identity",
    "Linear",
    "Unflatten",
]

Flatten = functional_layer(
    "Flatten",
    flatten,
    {"start_axis": 1, "stop_axis": -1},
    "Merge axes ``start_axis``..``stop_axis`` into one (by default all but the batch axis).",
    shown=(),
    takes_name=False,
)
Dropout = functional_layer(
    "Dropout",
    F.dropout,
    {"p": 0.5, "inplace": False, "axis": None, "mode": "upscale_in_train"},
    "Randomly zero elements in training mode (see :func:`minidp.nn.functional.dropout`).",
    shown=("p", "axis", "mode", "inplace"),
    training=True,
)
Dropout2D = functional_layer(
    "Dropout2D",
    F.dropout2d,
    {"p": 0.5, "data_format": "NCHW"},
    "Zero whole channels of [N, C, H, W] inputs in training mode.",
    training=True,
)
Dropout3D = functional_layer(
    "Dropout3D",
    F.dropout3d,
    {"p": 0.5, "data_format": "NCDHW"},
    "Zero whole channels of [N, C, D, H, W] inputs in training mode.",
    training=True,
)
AlphaDropout = functional_layer(
    "AlphaDropout",
    F.alpha_dropout,
    {"p": 0.5},
    "Dropout that keeps the mean and variance of SELU activations.",
    training=True,
)
FeatureAlphaDropout = functional_layer(
    "FeatureAlphaDropout",
    F.feature_alpha_dropout,
    {"p": 0.5},
    "Alpha dropout of whole channels.",
    training=True,
    base=AlphaDropout,
)


class Linear(Layer):
    """y = x @ weight + bias, with weight [in_features, out_features] (Paddle's layout).

    The weight starts Xavier-uniform and the bias at zero, as in Paddle; ``bias_attr=False``
    builds the layer without a bias.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        in_features = check_size("Linear", "in_features", in_features)
        out_features = check_size("Linear", "out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter([in_features, out_features], attr=weight_attr)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._dtype}"


class Identity(Layer):
    """Returns its input unchanged (a placeholder in a Sequential); arguments are ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


class Unflatten(Layer):
    """Split axis ``axis`` into ``shape`` (the inverse of Flatten)."""

    def __init__(self, axis: int, shape: Any, name: Optional[str] = None) -> None:
        super().__init__()
        if not isinstance(shape, (list, tuple)) or not shape:
            raise TypeError(f"Unflatten: shape must be a non-empty list or tuple, got {shape!r}")
        self.axis, self.shape = axis, list(shape)

    def forward(self, x: Tensor) -> Tensor:
        axis = self.axis % x.ndim
        return reshape(x, x.shape[:axis] + self.shape + x.shape[axis + 1 :])

    def extra_repr(self) -> str:
        return f"axis={self.axis}, shape={self.shape}"


class Bilinear(Layer):
    """out[n, o] = x1[n] . weight[o] . x2[n] + bias[o], weight [out, in1, in2], bias [1, out].

    The weight starts Xavier-uniform and the bias at zero, as in Paddle.
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        in1_features = check_size("Bilinear", "in1_features", in1_features)
        in2_features = check_size("Bilinear", "in2_features", in2_features)
        out_features = check_size("Bilinear", "out_features", out_features)
        self._in1_features, self._in2_features, self._out_features = in1_features, in2_features, out_features
        self.weight = self.create_parameter([out_features, in1_features, in2_features], attr=weight_attr)
        self.bias = self.create_parameter([1, out_features], attr=bias_attr, is_bias=True)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self._in1_features}, in2_features={self._in2_features}, out_features={self._out_features}"
        )
