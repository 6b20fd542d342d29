"""Max, average and adaptive pooling layers (1-D, 2-D and 3-D)."""
from __future__ import annotations

from typing import Any, Optional

from ...autograd.tensor import Tensor
from .. import functional as F
from ..layer import Layer


class MaxPool2D(Layer):
    """Largest value of each window (see :func:`minidp.nn.functional.max_pool2d`)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
                 ceil_mode: bool = False, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format = return_mask, ceil_mode, data_format

    def forward(self, x: Tensor) -> Any:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Layer):
    """Mean of each window (see :func:`minidp.nn.functional.avg_pool2d`)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 exclusive: bool = True, divisor_override: Optional[int] = None, data_format: str = "NCHW",
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive, self.divisor_override = ceil_mode, exclusive, divisor_override
        self.data_format = data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.exclusive,
                            self.divisor_override, self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1D(Layer):
    """Largest value of each window of [N, C, L] inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
                 ceil_mode: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode = return_mask, ceil_mode

    def forward(self, x: Tensor) -> Any:
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1D(Layer):
    """Mean of each window of [N, C, L] inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
                 ceil_mode: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.ceil_mode = exclusive, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1D(Layer):
    """Mean over ``output_size`` adaptive windows of [N, C, L] inputs."""

    def __init__(self, output_size: int, name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2D(Layer):
    """Mean over adaptive windows of [N, C, H, W] inputs (``output_size`` 1 is global pooling)."""

    def __init__(self, output_size: Any, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size, self.data_format = output_size, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size, self.data_format)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1D(Layer):
    """Largest value of each adaptive window of [N, C, L] inputs."""

    def __init__(self, output_size: int, return_mask: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Tensor) -> Any:
        return F.adaptive_max_pool1d(x, self.output_size, self.return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, return_mask={self.return_mask}"


class AdaptiveMaxPool2D(Layer):
    """Largest value of each adaptive window of [N, C, H, W] inputs."""

    def __init__(self, output_size: Any, return_mask: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Tensor) -> Any:
        return F.adaptive_max_pool2d(x, self.output_size, self.return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, return_mask={self.return_mask}"


class MaxPool3D(Layer):
    """Largest value of each window of [N, C, D, H, W] inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
                 ceil_mode: bool = False, data_format: str = "NCDHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format = return_mask, ceil_mode, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3D(Layer):
    """Mean of each window of [N, C, D, H, W] inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 exclusive: bool = True, divisor_override: Optional[float] = None, data_format: str = "NCDHW",
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive, self.divisor_override = ceil_mode, exclusive, divisor_override
        self.data_format = data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.exclusive,
                            self.divisor_override, self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3D(Layer):
    """Mean over adaptive windows of [N, C, D, H, W] inputs."""

    def __init__(self, output_size: Any, data_format: str = "NCDHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size, self.data_format = output_size, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(x, self.output_size, self.data_format)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3D(Layer):
    """Largest value of each adaptive window of [N, C, D, H, W] inputs."""

    def __init__(self, output_size: Any, return_mask: bool = False, name: Optional[str] = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_max_pool3d(x, self.output_size, self.return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class LPPool1D(Layer):
    """L^p pooling of [N, C, L] inputs."""

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, data_format: str = "NCL", name: Optional[str] = None) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.padding = norm_type, kernel_size, stride, padding
        self.ceil_mode, self.data_format = ceil_mode, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.lp_pool1d(x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                           self.data_format)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}"


class LPPool2D(LPPool1D):
    """L^p pooling of [N, C, H, W] inputs."""

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format)

    def forward(self, x: Tensor) -> Tensor:
        return F.lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                           self.data_format)


class MaxUnPool1D(Layer):
    """The inverse of MaxPool1D(return_mask=True): ``forward(x, indices)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCL",
                 output_size: Any = None, name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.data_format, self.output_size = data_format, output_size

    def forward(self, x: Tensor, indices: Tensor) -> Tensor:
        return F.max_unpool1d(x, indices, self.kernel_size, self.stride, self.padding, self.data_format,
                              self.output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnPool2D(MaxUnPool1D):
    """The inverse of MaxPool2D(return_mask=True): ``forward(x, indices)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCHW",
                 output_size: Any = None, name: Optional[str] = None) -> None:
        super().__init__(kernel_size, stride, padding, data_format, output_size)

    def forward(self, x: Tensor, indices: Tensor) -> Tensor:
        return F.max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, self.data_format,
                              self.output_size)
