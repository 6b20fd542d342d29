"""Max, average, adaptive, L^p pooling and max-unpooling layers (1-D, 2-D and 3-D), one table row
each (see :mod:`minidp.nn.functional.pooling`)."""

from __future__ import annotations

from typing import Optional, Sequence

from ...core.tensor import Tensor
from .. import functional as F
from .factory import REQUIRED, FunctionalLayer, functional_layer

__all__ = [
    "AdaptiveAvgPool1D",
    "AdaptiveAvgPool2D",
    "AdaptiveAvgPool3D",
    "AdaptiveMaxPool1D",
    "AdaptiveMaxPool2D",
    "AdaptiveMaxPool3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "LPPool1D",
    "LPPool2D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxUnPool1D",
    "MaxUnPool2D",
    "MaxUnPool3D",
]

_WINDOW = {"kernel_size": REQUIRED, "stride": None, "padding": 0}
_SHOWN = ("kernel_size", "stride", "padding")

MaxPool1D = functional_layer(
    "MaxPool1D",
    F.max_pool1d,
    {**_WINDOW, "return_mask": False, "ceil_mode": False},
    "Largest value of each window of [N, C, L] inputs.",
    shown=_SHOWN,
)
MaxPool2D = functional_layer(
    "MaxPool2D",
    F.max_pool2d,
    {**_WINDOW, "return_mask": False, "ceil_mode": False, "data_format": "NCHW"},
    "Largest value of each window (see :func:`minidp.nn.functional.max_pool2d`).",
    shown=_SHOWN,
)
MaxPool3D = functional_layer(
    "MaxPool3D",
    F.max_pool3d,
    {**_WINDOW, "return_mask": False, "ceil_mode": False, "data_format": "NCDHW"},
    "Largest value of each window of [N, C, D, H, W] inputs.",
    shown=_SHOWN,
)
AvgPool1D = functional_layer(
    "AvgPool1D",
    F.avg_pool1d,
    {**_WINDOW, "exclusive": True, "ceil_mode": False},
    "Mean of each window of [N, C, L] inputs.",
    shown=_SHOWN,
)
AvgPool2D = functional_layer(
    "AvgPool2D",
    F.avg_pool2d,
    {**_WINDOW, "ceil_mode": False, "exclusive": True, "divisor_override": None, "data_format": "NCHW"},
    "Mean of each window (see :func:`minidp.nn.functional.avg_pool2d`).",
    shown=_SHOWN,
)
AvgPool3D = functional_layer(
    "AvgPool3D",
    F.avg_pool3d,
    {**_WINDOW, "ceil_mode": False, "exclusive": True, "divisor_override": None, "data_format": "NCDHW"},
    "Mean of each window of [N, C, D, H, W] inputs.",
    shown=_SHOWN,
)

AdaptiveAvgPool1D = functional_layer(
    "AdaptiveAvgPool1D",
    F.adaptive_avg_pool1d,
    {"output_size": REQUIRED},
    "Mean over ``output_size`` adaptive windows of [N, C, L] inputs.",
)
AdaptiveAvgPool2D = functional_layer(
    "AdaptiveAvgPool2D",
    F.adaptive_avg_pool2d,
    {"output_size": REQUIRED, "data_format": "NCHW"},
    "Mean over adaptive windows of [N, C, H, W] inputs (``output_size`` 1 is global pooling).",
    shown=("output_size",),
)
AdaptiveAvgPool3D = functional_layer(
    "AdaptiveAvgPool3D",
    F.adaptive_avg_pool3d,
    {"output_size": REQUIRED, "data_format": "NCDHW"},
    "Mean over adaptive windows of [N, C, D, H, W] inputs.",
    shown=("output_size",),
)
AdaptiveMaxPool1D = functional_layer(
    "AdaptiveMaxPool1D",
    F.adaptive_max_pool1d,
    {"output_size": REQUIRED, "return_mask": False},
    "Largest value of each adaptive window of [N, C, L] inputs.",
)
AdaptiveMaxPool2D = functional_layer(
    "AdaptiveMaxPool2D",
    F.adaptive_max_pool2d,
    {"output_size": REQUIRED, "return_mask": False},
    "Largest value of each adaptive window of [N, C, H, W] inputs.",
)
AdaptiveMaxPool3D = functional_layer(
    "AdaptiveMaxPool3D",
    F.adaptive_max_pool3d,
    {"output_size": REQUIRED, "return_mask": False},
    "Largest value of each adaptive window of [N, C, D, H, W] inputs.",
)

_LP_WINDOW = {"norm_type": REQUIRED, **_WINDOW, "ceil_mode": False}
_LP_SHOWN = ("norm_type",) + _SHOWN
LPPool1D = functional_layer(
    "LPPool1D", F.lp_pool1d, {**_LP_WINDOW, "data_format": "NCL"}, "L^p pooling of [N, C, L] inputs.", shown=_LP_SHOWN
)
LPPool2D = functional_layer(
    "LPPool2D",
    F.lp_pool2d,
    {**_LP_WINDOW, "data_format": "NCHW"},
    "L^p pooling of [N, C, H, W] inputs.",
    shown=_LP_SHOWN,
    base=LPPool1D,
)


class _MaxUnPool(FunctionalLayer):
    """A max-unpooling layer: Paddle's ``forward(x, indices, output_size=None)``."""

    def forward(self, x: Tensor, indices: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        """Unpool ``x`` by ``indices``; a non-empty ``output_size`` here wins over the constructor's, as in Paddle."""
        return self._function(x, indices, **{**self._options(), "output_size": output_size or self.output_size})


MaxUnPool1D = functional_layer(
    "MaxUnPool1D",
    F.max_unpool1d,
    {**_WINDOW, "data_format": "NCL", "output_size": None},
    "The inverse of MaxPool1D(return_mask=True): ``forward(x, indices, output_size=None)``.",
    shown=("output_size",),
    base=_MaxUnPool,
)
MaxUnPool2D = functional_layer(
    "MaxUnPool2D",
    F.max_unpool2d,
    {**_WINDOW, "data_format": "NCHW", "output_size": None},
    "The inverse of MaxPool2D(return_mask=True): ``forward(x, indices, output_size=None)``.",
    shown=("output_size",),
    base=MaxUnPool1D,
)
MaxUnPool3D = functional_layer(
    "MaxUnPool3D",
    F.max_unpool3d,
    {**_WINDOW, "data_format": "NCDHW", "output_size": None},
    "The inverse of MaxPool3D(return_mask=True): ``forward(x, indices, output_size=None)``.",
    shown=("output_size",),
    base=MaxUnPool1D,
)
