"""Conv1D, Conv2D, Conv3D and the transposed convolutions."""

from __future__ import annotations

import math
from typing import Any

from ...core.tensor import Tensor
from ...core.op_util import check_size
from .. import functional as F
from .. import initializer as init
from ..functional._util import pair
from ..functional.sliding import per_axis
from ...core.layer import Layer


def _check_channels(op: str, in_channels: Any, out_channels: Any, groups: Any) -> tuple:
    """The channel counts and groups of a convolution, each a positive int."""
    return (
        check_size(op, "in_channels", in_channels),
        check_size(op, "out_channels", out_channels),
        check_size(op, "groups", groups),
    )


class Conv2D(Layer):
    """2-D convolution over [N, C, H, W] inputs with weight [out_channels, in_channels/groups, kh, kw].

    The weight starts as Paddle's: normal with std sqrt(2 / (in_channels * kh * kw)) (Paddle
    counts every input channel, whatever ``groups`` is); the bias at zero (``bias_attr=False``
    for none).
    """

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
        if padding_mode != "zeros":
            raise ValueError(f"Conv2D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        in_channels, out_channels, groups = _check_channels("Conv2D", in_channels, out_channels, groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2D: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        kh, kw = pair(kernel_size, "Conv2D", "kernel_size")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._kernel_size = (kh, kw)
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = math.sqrt(2.0 / (in_channels * kh * kw))
        self.weight = self.create_parameter(
            [out_channels, in_channels // groups, kh, kw], attr=weight_attr, default_initializer=init.Normal(0.0, std)
        )
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups, self._data_format
        )

    def extra_repr(self) -> str:
        return (
            f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}, "
            f"stride={self._stride}, padding={self._padding}, dilation={self._dilation}, "
            f"groups={self._groups}"
        )


class Conv1D(Layer):
    """1-D convolution over [N, C, L] inputs with weight [out_channels, in_channels/groups, k].

    The weight starts normal with std sqrt(2 / (in_channels * k)), the bias at zero, as in Paddle.
    """

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
        if padding_mode != "zeros":
            raise ValueError(f"Conv1D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        in_channels, out_channels, groups = _check_channels("Conv1D", in_channels, out_channels, groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv1D: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        (k,) = per_axis(kernel_size, 1, "Conv1D", "kernel_size")
        self._in_channels, self._out_channels, self._kernel_size = in_channels, out_channels, k
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = math.sqrt(2.0 / (in_channels * k))
        self.weight = self.create_parameter(
            [out_channels, in_channels // groups, k], attr=weight_attr, default_initializer=init.Normal(0.0, std)
        )
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(
            x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups, self._data_format
        )

    def extra_repr(self) -> str:
        return (
            f"{self._in_channels}, {self._out_channels}, kernel_size=[{self._kernel_size}], "
            f"stride={self._stride}, padding={self._padding}"
        )


class _ConvTranspose(Layer):
    """Shared set-up of the transposed convolutions: weight [in_channels, out_channels/groups, *kernel],
    Xavier-uniform as in Paddle, bias at zero."""

    def _setup(
        self,
        in_channels: int,
        out_channels: int,
        kernel: tuple,
        stride: Any,
        padding: Any,
        output_padding: Any,
        dilation: Any,
        groups: int,
        weight_attr: Any,
        bias_attr: Any,
        data_format: str,
    ) -> None:
        in_channels, out_channels, groups = _check_channels(type(self).__name__, in_channels, out_channels, groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{type(self).__name__}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                f"must be divisible by groups ({groups})"
            )
        self._in_channels, self._out_channels, self._kernel_size = in_channels, out_channels, kernel
        self._stride, self._padding, self._output_padding = stride, padding, output_padding
        self._dilation, self._groups, self._data_format = dilation, groups, data_format
        self.weight = self.create_parameter([in_channels, out_channels // groups, *kernel], attr=weight_attr)
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def extra_repr(self) -> str:
        return (
            f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}, "
            f"stride={self._stride}, padding={self._padding}"
        )


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (see :func:`minidp.nn.functional.conv2d_transpose`);
    ``forward(x, output_size=None)``."""

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
            in_channels,
            out_channels,
            pair(kernel_size, "Conv2DTranspose", "kernel_size"),
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            weight_attr,
            bias_attr,
            data_format,
        )

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        return F.conv2d_transpose(
            x,
            self.weight,
            self.bias,
            self._stride,
            self._padding,
            self._output_padding,
            self._dilation,
            self._groups,
            output_size,
            self._data_format,
        )


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (see :func:`minidp.nn.functional.conv1d_transpose`)."""

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
        (k,) = per_axis(kernel_size, 1, "Conv1DTranspose", "kernel_size")
        self._setup(
            in_channels,
            out_channels,
            (k,),
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            weight_attr,
            bias_attr,
            data_format,
        )

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        return F.conv1d_transpose(
            x,
            self.weight,
            self.bias,
            self._stride,
            self._padding,
            self._output_padding,
            self._groups,
            self._dilation,
            output_size,
            self._data_format,
        )


class Conv3D(Layer):
    """3-D convolution over [N, C, D, H, W] inputs with weight [out_channels, in_channels/groups, kd, kh, kw].

    The weight starts normal with std sqrt(2 / (in_channels * kd * kh * kw)), the bias at zero, as in Paddle.
    """

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
        if padding_mode != "zeros":
            raise ValueError(f"Conv3D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        in_channels, out_channels, groups = _check_channels("Conv3D", in_channels, out_channels, groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv3D: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        kernel = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
        if len(kernel) != 3 or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in kernel):
            raise ValueError(f"Conv3D: kernel_size must be a positive int or three of them, got {kernel_size!r}")
        self._in_channels, self._out_channels, self._kernel_size = in_channels, out_channels, kernel
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = math.sqrt(2.0 / (in_channels * math.prod(kernel)))
        self.weight = self.create_parameter(
            [out_channels, in_channels // groups, *kernel], attr=weight_attr, default_initializer=init.Normal(0.0, std)
        )
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv3d(
            x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups, self._data_format
        )

    def extra_repr(self) -> str:
        return (
            f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}, "
            f"stride={self._stride}, padding={self._padding}"
        )


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution (see :func:`minidp.nn.functional.conv3d_transpose`);
    ``forward(x, output_size=None)``."""

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
        kernel = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
        if len(kernel) != 3 or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in kernel):
            raise ValueError(
                f"Conv3DTranspose: kernel_size must be a positive int or three of them, got {kernel_size!r}"
            )
        self._setup(
            in_channels,
            out_channels,
            kernel,
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            weight_attr,
            bias_attr,
            data_format,
        )

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        return F.conv3d_transpose(
            x,
            self.weight,
            self.bias,
            self._stride,
            self._padding,
            self._output_padding,
            self._groups,
            self._dilation,
            output_size,
            self._data_format,
        )
