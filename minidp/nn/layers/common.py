"""Linear, Flatten, Dropout and Identity."""
from __future__ import annotations

from typing import Any, Optional

from ...autograd.tensor import Tensor
from ...ops import flatten
from .. import functional as F
from ..layer import Layer


class Linear(Layer):
    """y = x @ weight + bias, with weight [in_features, out_features] (Paddle's layout).

    The weight starts Xavier-uniform and the bias at zero, as in Paddle; ``bias_attr=False``
    builds the layer without a bias.
    """

    def __init__(self, in_features: int, out_features: int, weight_attr: Any = None, bias_attr: Any = None,
                 name: Optional[str] = None) -> None:
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear: in_features and out_features must be positive, got "
                             f"{in_features} and {out_features}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter([in_features, out_features], attr=weight_attr)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._dtype}"


class Flatten(Layer):
    """Merge axes ``start_axis``..``stop_axis`` into one (by default all but the batch axis)."""

    def __init__(self, start_axis: int = 1, stop_axis: int = -1) -> None:
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, x: Tensor) -> Tensor:
        return flatten(x, self.start_axis, self.stop_axis)


class Dropout(Layer):
    """Randomly zero elements in training mode (see :func:`minidp.nn.functional.dropout`)."""

    def __init__(self, p: float = 0.5, axis: Any = None, mode: str = "upscale_in_train",
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.axis, self.training, self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}, axis={self.axis}, mode={self.mode}"


class Identity(Layer):
    """Returns its input unchanged (a placeholder in a Sequential)."""

    def forward(self, x: Any) -> Any:
        return x
