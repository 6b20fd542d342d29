"""Conv1D and Conv2D."""
from __future__ import annotations

import math
from typing import Any

from ...autograd.tensor import Tensor
from .. import functional as F
from .. import initializer as init
from ..functional._util import length_pair, pair
from ..layer import Layer


class Conv2D(Layer):
    """2-D convolution over [N, C, H, W] inputs with weight [out_channels, in_channels/groups, kh, kw].

    The weight starts as Paddle's: normal with std sqrt(2 / (in_channels * kh * kw)) (Paddle
    counts every input channel, whatever ``groups`` is); the bias at zero (``bias_attr=False``
    for none).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv2D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                             f"be divisible by groups ({groups})")
        kh, kw = pair(kernel_size, "Conv2D", "kernel_size")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._kernel_size = (kh, kw)
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = math.sqrt(2.0 / (in_channels * kh * kw))
        self.weight = self.create_parameter([out_channels, in_channels // groups, kh, kw], attr=weight_attr,
                                            default_initializer=init.Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)

    def extra_repr(self) -> str:
        return (f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}, "
                f"stride={self._stride}, padding={self._padding}, dilation={self._dilation}, "
                f"groups={self._groups}")


class Conv1D(Layer):
    """1-D convolution over [N, C, L] inputs with weight [out_channels, in_channels/groups, k].

    The weight starts normal with std sqrt(2 / (in_channels * k)), the bias at zero, as in Paddle.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCL") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv1D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv1D: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                             f"be divisible by groups ({groups})")
        _, k = length_pair(kernel_size, "Conv1D", "kernel_size")
        self._in_channels, self._out_channels, self._kernel_size = in_channels, out_channels, k
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = math.sqrt(2.0 / (in_channels * k))
        self.weight = self.create_parameter([out_channels, in_channels // groups, k], attr=weight_attr,
                                            default_initializer=init.Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)

    def extra_repr(self) -> str:
        return (f"{self._in_channels}, {self._out_channels}, kernel_size=[{self._kernel_size}], "
                f"stride={self._stride}, padding={self._padding}")
