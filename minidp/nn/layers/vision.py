"""Padding, resampling, pixel-rearranging and block (un)folding layers, and the distance layers."""
from __future__ import annotations

from typing import Any, Optional

from ...autograd.tensor import Tensor
from .. import functional as F
from ..layer import Layer


class _Pad(Layer):
    """Pads the spatial axes; an int pads every side by that much."""
    _spatial = 0
    _default_format = ""

    def __init__(self, padding: Any, mode: str = "constant", value: float = 0.0, data_format: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        super().__init__()
        if isinstance(padding, int):
            padding = [padding] * (2 * self._spatial)
        elif not isinstance(padding, Tensor) and len(padding) != 2 * self._spatial:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * self._spatial} values, "
                             f"got {padding!r}")
        self.padding, self.mode, self.value = padding, mode, value
        self.data_format = data_format or self._default_format

    def forward(self, x: Tensor) -> Tensor:
        return F.pad(x, self.padding, self.mode, self.value, self.data_format)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, mode={self.mode}, value={self.value}, data_format={self.data_format}"


class Pad1D(_Pad):
    """Pads [N, C, L] inputs by [left, right]."""
    _spatial = 1
    _default_format = "NCL"


class Pad2D(_Pad):
    """Pads [N, C, H, W] inputs by [left, right, top, bottom]."""
    _spatial = 2
    _default_format = "NCHW"


class Pad3D(_Pad):
    """Pads [N, C, D, H, W] inputs by [left, right, top, bottom, front, back]."""
    _spatial = 3
    _default_format = "NCDHW"


class ZeroPad2D(Pad2D):
    """Zero padding of [N, C, H, W] inputs by [left, right, top, bottom]."""

    def __init__(self, padding: Any, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__(padding, "constant", 0.0, data_format)


class Upsample(Layer):
    """Resize by ``size`` or ``scale_factor`` (see :func:`minidp.nn.functional.interpolate`)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool = False,
                 align_mode: int = 0, data_format: Optional[str] = None, recompute_scale_factor: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.align_mode, self.data_format = align_corners, align_mode, data_format
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode,
                             self.data_format, self.recompute_scale_factor)

    def extra_repr(self) -> str:
        return f"size={self.size}, scale_factor={self.scale_factor}, mode={self.mode}"


class UpsamplingNearest2D(Upsample):
    """Nearest-neighbour resizing of [N, C, H, W] inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW",
                 name: Optional[str] = None) -> None:
        super().__init__(size, scale_factor, "nearest", data_format=data_format)


class UpsamplingBilinear2D(Upsample):
    """Bilinear resizing of [N, C, H, W] inputs with aligned corners (Paddle's choice)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW",
                 name: Optional[str] = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True, data_format=data_format)


class PixelShuffle(Layer):
    """[N, C r^2, H, W] -> [N, C, H r, W r]."""

    def __init__(self, upscale_factor: int, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.upscale_factor, self.data_format = upscale_factor, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_shuffle(x, self.upscale_factor, self.data_format)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Layer):
    """[N, C, H r, W r] -> [N, C r^2, H, W]."""

    def __init__(self, downscale_factor: int, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.downscale_factor, self.data_format = downscale_factor, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_unshuffle(x, self.downscale_factor, self.data_format)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class CosineSimilarity(Layer):
    """Cosine similarity of two tensors along ``axis``."""

    def __init__(self, axis: int = 1, eps: float = 1e-08) -> None:
        super().__init__()
        self.axis, self.eps = axis, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.axis, self.eps)

    def extra_repr(self) -> str:
        return f"axis={self.axis}, eps={self.eps}"


class PairwiseDistance(Layer):
    """p-norm distance between the rows of two tensors."""

    def __init__(self, p: float = 2.0, epsilon: float = 1e-06, keepdim: bool = False,
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.p, self.epsilon, self.keepdim = p, epsilon, keepdim

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.p}, epsilon={self.epsilon}, keepdim={self.keepdim}"


class _ModePad(_Pad):
    """A padding layer with its mode fixed by the class."""
    _mode = "constant"

    def __init__(self, padding: Any, data_format: Optional[str] = None, name: Optional[str] = None) -> None:
        super().__init__(padding, self._mode, 0.0, data_format)


class _ConstantPad(_Pad):
    def __init__(self, padding: Any, value: float, data_format: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(padding, "constant", value, data_format)


class ConstantPad1D(_ConstantPad, Pad1D):
    """Pads [N, C, L] inputs with ``value``."""


class ConstantPad2D(_ConstantPad, Pad2D):
    """Pads [N, C, H, W] inputs with ``value``."""


class ConstantPad3D(_ConstantPad, Pad3D):
    """Pads [N, C, D, H, W] inputs with ``value``."""


class ZeroPad1D(_ModePad, Pad1D):
    """Zero padding of [N, C, L] inputs."""


class ZeroPad3D(_ModePad, Pad3D):
    """Zero padding of [N, C, D, H, W] inputs."""


class ReflectionPad1D(_ModePad, Pad1D):
    """Mirror padding (the edge is not repeated) of [N, C, L] inputs."""
    _mode = "reflect"


class ReflectionPad2D(_ModePad, Pad2D):
    """Mirror padding of [N, C, H, W] inputs."""
    _mode = "reflect"


class ReflectionPad3D(_ModePad, Pad3D):
    """Mirror padding of [N, C, D, H, W] inputs."""
    _mode = "reflect"


class ReplicationPad1D(_ModePad, Pad1D):
    """Edge-repeating padding of [N, C, L] inputs."""
    _mode = "replicate"


class ReplicationPad2D(_ModePad, Pad2D):
    """Edge-repeating padding of [N, C, H, W] inputs."""
    _mode = "replicate"


class ReplicationPad3D(_ModePad, Pad3D):
    """Edge-repeating padding of [N, C, D, H, W] inputs."""
    _mode = "replicate"


class CircularPad1D(_ModePad, Pad1D):
    """Wrap-around padding of [N, C, L] inputs."""
    _mode = "circular"


class CircularPad2D(_ModePad, Pad2D):
    """Wrap-around padding of [N, C, H, W] inputs."""
    _mode = "circular"


class CircularPad3D(_ModePad, Pad3D):
    """Wrap-around padding of [N, C, D, H, W] inputs."""
    _mode = "circular"


class ChannelShuffle(Layer):
    """Interleave the channels of ``groups`` groups (ShuffleNet)."""

    def __init__(self, groups: int, data_format: str = "NCHW", name: Optional[str] = None) -> None:
        super().__init__()
        self.groups, self.data_format = groups, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.channel_shuffle(x, self.groups, self.data_format)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unfold(Layer):
    """Sliding blocks as columns (see :func:`minidp.nn.functional.unfold`)."""

    def __init__(self, kernel_sizes: Any, dilations: Any = 1, paddings: Any = 0, strides: Any = 1,
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.kernel_sizes, self.dilations, self.paddings, self.strides = kernel_sizes, dilations, paddings, strides

    def forward(self, x: Tensor) -> Tensor:
        return F.unfold(x, self.kernel_sizes, self.strides, self.paddings, self.dilations)

    def extra_repr(self) -> str:
        return f"kernel_sizes={self.kernel_sizes}, strides={self.strides}, paddings={self.paddings}"


class Fold(Layer):
    """Columns summed back into an image (see :func:`minidp.nn.functional.fold`)."""

    def __init__(self, output_sizes: Any, kernel_sizes: Any, dilations: Any = 1, paddings: Any = 0, strides: Any = 1,
                 name: Optional[str] = None) -> None:
        super().__init__()
        self.output_sizes, self.kernel_sizes = output_sizes, kernel_sizes
        self.dilations, self.paddings, self.strides = dilations, paddings, strides

    def forward(self, x: Tensor) -> Tensor:
        return F.fold(x, self.output_sizes, self.kernel_sizes, self.strides, self.paddings, self.dilations)

    def extra_repr(self) -> str:
        return f"output_sizes={self.output_sizes}, kernel_sizes={self.kernel_sizes}, strides={self.strides}"
