"""MaxPool2D and AvgPool2D."""
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
