"""Conv1D, Conv2D, Conv3D and the transposed convolutions."""

from __future__ import annotations

import math
from typing import Any, Callable

from ...core.tensor import Tensor
from ...core.op_util import check_size
from .. import functional as F
from .. import initializer as init
from ..functional.sliding import per_axis
from ...core.layer import Layer

__all__ = [
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
]


class _Conv(Layer):
    """Shared set-up of the convolutions and their transposes: checked channels, groups and kernel,
    the options each call passes on (kept as ``_<name>`` attributes), and the parameters.

    A convolution's weight is [out_channels, in_channels/groups, *kernel], normal with std
    sqrt(2 / (in_channels * prod(kernel))) as in Paddle (which counts every input channel, whatever
    ``groups`` is); a transposed one's is [in_channels, out_channels/groups, *kernel], Xavier-uniform.
    The bias starts at zero (``bias_attr=False`` for none).
    """

    _function: Callable  # the functional form each subclass calls, as a staticmethod

    def _setup(
        self,
        nd: int,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        weight_attr: Any,
        bias_attr: Any,
        **options: Any,
    ) -> None:
        op = type(self).__name__
        padding_mode = options.pop("padding_mode", "zeros")
        if padding_mode != "zeros":
            raise ValueError(f"{op}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        in_channels = check_size(op, "in_channels", in_channels)
        out_channels = check_size(op, "out_channels", out_channels)
        groups = options["groups"] = check_size(op, "groups", options["groups"])
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{op}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        kernel = per_axis(kernel_size, nd, op, "kernel_size")
        self._in_channels, self._out_channels, self._kernel_size = in_channels, out_channels, kernel
        for key, value in options.items():
            setattr(self, f"_{key}", value)
        if isinstance(self, _ConvTranspose):
            self.weight = self.create_parameter([in_channels, out_channels // groups, *kernel], attr=weight_attr)
        else:
            std = math.sqrt(2.0 / (in_channels * math.prod(kernel)))
            self.weight = self.create_parameter(
                [out_channels, in_channels // groups, *kernel],
                attr=weight_attr,
                default_initializer=init.Normal(0.0, std),
            )
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return self._function(
            x,
            self.weight,
            self.bias,
            stride=self._stride,
            padding=self._padding,
            dilation=self._dilation,
            groups=self._groups,
            data_format=self._data_format,
        )

    def extra_repr(self) -> str:
        return (
            f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}, "
            f"stride={self._stride}, padding={self._padding}"
        )


class _ConvTranspose(_Conv):
    """The transposed convolutions: their weight is [in_channels, out_channels/groups, *kernel];
    ``forward(x, output_size=None)``."""

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        return self._function(
            x,
            self.weight,
            self.bias,
            stride=self._stride,
            padding=self._padding,
            output_padding=self._output_padding,
            dilation=self._dilation,
            groups=self._groups,
            output_size=output_size,
            data_format=self._data_format,
        )


class Conv2D(_Conv):
    """2-D convolution over [N, C, H, W] inputs with weight [out_channels, in_channels/groups, kh, kw].

    The weight starts as Paddle's: normal with std sqrt(2 / (in_channels * kh * kw)) (Paddle
    counts every input channel, whatever ``groups`` is); the bias at zero (``bias_attr=False``
    for none).
    """

    _function = staticmethod(F.conv2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__()
        self._setup(
            2,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            padding_mode=padding_mode,
            data_format=data_format,
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, dilation={self._dilation}, groups={self._groups}"


class Conv1D(_Conv):
    """1-D convolution over [N, C, L] inputs with weight [out_channels, in_channels/groups, k].

    The weight starts normal with std sqrt(2 / (in_channels * k)), the bias at zero, as in Paddle.
    """

    _function = staticmethod(F.conv1d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCL",
    ) -> None:
        super().__init__()
        self._setup(
            1,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            padding_mode=padding_mode,
            data_format=data_format,
        )


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (see :func:`minidp.nn.functional.conv2d_transpose`);
    ``forward(x, output_size=None)``."""

    _function = staticmethod(F.conv2d_transpose)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__()
        self._setup(
            2,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            dilation=dilation,
            groups=groups,
            data_format=data_format,
        )


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (see :func:`minidp.nn.functional.conv1d_transpose`)."""

    _function = staticmethod(F.conv1d_transpose)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        dilation: Any = 1,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCL",
    ) -> None:
        super().__init__()
        self._setup(
            1,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            dilation=dilation,
            groups=groups,
            data_format=data_format,
        )


class Conv3D(_Conv):
    """3-D convolution over [N, C, D, H, W] inputs with weight [out_channels, in_channels/groups, kd, kh, kw].

    The weight starts normal with std sqrt(2 / (in_channels * kd * kh * kw)), the bias at zero, as in Paddle.
    """

    _function = staticmethod(F.conv3d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__()
        self._setup(
            3,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            padding_mode=padding_mode,
            data_format=data_format,
        )


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution (see :func:`minidp.nn.functional.conv3d_transpose`);
    ``forward(x, output_size=None)``."""

    _function = staticmethod(F.conv3d_transpose)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__()
        self._setup(
            3,
            in_channels,
            out_channels,
            kernel_size,
            weight_attr,
            bias_attr,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            dilation=dilation,
            groups=groups,
            data_format=data_format,
        )
