"""Padding, resampling, pixel-rearranging and block (un)folding layers, and the distance layers:
one table row each."""

from __future__ import annotations

from typing import Any, Optional

from ...core.tensor import Tensor
from .. import functional as F
from .factory import REQUIRED, Check, FunctionalLayer, functional_layer

__all__ = [
    "ChannelShuffle",
    "CircularPad1D",
    "CircularPad2D",
    "CircularPad3D",
    "ConstantPad1D",
    "ConstantPad2D",
    "ConstantPad3D",
    "CosineSimilarity",
    "Fold",
    "Pad1D",
    "Pad2D",
    "Pad3D",
    "PairwiseDistance",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReflectionPad1D",
    "ReflectionPad2D",
    "ReflectionPad3D",
    "ReplicationPad1D",
    "ReplicationPad2D",
    "ReplicationPad3D",
    "Unfold",
    "Upsample",
    "UpsamplingBilinear2D",
    "UpsamplingNearest2D",
    "ZeroPad1D",
    "ZeroPad2D",
    "ZeroPad3D",
]

_FORMATS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


def _pad(x: Tensor, padding: Any, mode: str, value: float, data_format: str) -> Tensor:
    """F.pad with its ``pad`` argument named ``padding``, as the padding layers call it."""
    return F.pad(x, padding, mode, value, data_format)


def _padding_check(dims: int) -> Check:
    """Expands an int padding to every side of ``dims`` spatial axes; checks a list's length."""

    def check(layer: str, options: dict) -> dict:
        padding = options["padding"]
        if isinstance(padding, int):
            return {**options, "padding": [padding] * (2 * dims)}
        if not isinstance(padding, Tensor) and len(padding) != 2 * dims:
            raise ValueError(f"{layer}: padding must be an int or {2 * dims} values, got {padding!r}")
        return options

    return check


def _padding_layer(
    name: str, dims: int, params: dict, doc: str, fixed: Optional[dict] = None, base: type = FunctionalLayer
) -> type:
    """A layer padding ``dims`` spatial axes: ``padding``, then ``params``, then ``data_format``."""
    return functional_layer(
        name,
        _pad,
        {"padding": REQUIRED, **params, "data_format": _FORMATS[dims]},
        doc,
        fixed=fixed,
        base=base,
        check=_padding_check(dims),
        shown=("padding", "mode", "value", "data_format"),
    )


_ANY_MODE = {"mode": "constant", "value": 0.0}
Pad1D = _padding_layer("Pad1D", 1, _ANY_MODE, "Pads [N, C, L] inputs by [left, right].")
Pad2D = _padding_layer("Pad2D", 2, _ANY_MODE, "Pads [N, C, H, W] inputs by [left, right, top, bottom].")
Pad3D = _padding_layer("Pad3D", 3, _ANY_MODE, "Pads [N, C, D, H, W] inputs by [left, right, top, bottom, front, back].")

_VALUE = {"value": REQUIRED}
_CONSTANT = {"mode": "constant"}
ConstantPad1D = _padding_layer("ConstantPad1D", 1, _VALUE, "Pads [N, C, L] inputs with ``value``.", _CONSTANT, Pad1D)
ConstantPad2D = _padding_layer("ConstantPad2D", 2, _VALUE, "Pads [N, C, H, W] inputs with ``value``.", _CONSTANT, Pad2D)
ConstantPad3D = _padding_layer(
    "ConstantPad3D", 3, _VALUE, "Pads [N, C, D, H, W] inputs with ``value``.", _CONSTANT, Pad3D
)

_ZERO, _REFLECT = {"mode": "constant", "value": 0.0}, {"mode": "reflect", "value": 0.0}
_REPLICATE, _CIRCULAR = {"mode": "replicate", "value": 0.0}, {"mode": "circular", "value": 0.0}
ZeroPad1D = _padding_layer("ZeroPad1D", 1, {}, "Zero padding of [N, C, L] inputs.", _ZERO, Pad1D)
ZeroPad2D = _padding_layer(
    "ZeroPad2D", 2, {}, "Zero padding of [N, C, H, W] inputs by [left, right, top, bottom].", _ZERO, Pad2D
)
ZeroPad3D = _padding_layer("ZeroPad3D", 3, {}, "Zero padding of [N, C, D, H, W] inputs.", _ZERO, Pad3D)
ReflectionPad1D = _padding_layer(
    "ReflectionPad1D", 1, {}, "Mirror padding (the edge is not repeated) of [N, C, L] inputs.", _REFLECT, Pad1D
)
ReflectionPad2D = _padding_layer("ReflectionPad2D", 2, {}, "Mirror padding of [N, C, H, W] inputs.", _REFLECT, Pad2D)
ReflectionPad3D = _padding_layer("ReflectionPad3D", 3, {}, "Mirror padding of [N, C, D, H, W] inputs.", _REFLECT, Pad3D)
ReplicationPad1D = _padding_layer(
    "ReplicationPad1D", 1, {}, "Edge-repeating padding of [N, C, L] inputs.", _REPLICATE, Pad1D
)
ReplicationPad2D = _padding_layer(
    "ReplicationPad2D", 2, {}, "Edge-repeating padding of [N, C, H, W] inputs.", _REPLICATE, Pad2D
)
ReplicationPad3D = _padding_layer(
    "ReplicationPad3D", 3, {}, "Edge-repeating padding of [N, C, D, H, W] inputs.", _REPLICATE, Pad3D
)
CircularPad1D = _padding_layer("CircularPad1D", 1, {}, "Wrap-around padding of [N, C, L] inputs.", _CIRCULAR, Pad1D)
CircularPad2D = _padding_layer("CircularPad2D", 2, {}, "Wrap-around padding of [N, C, H, W] inputs.", _CIRCULAR, Pad2D)
CircularPad3D = _padding_layer(
    "CircularPad3D", 3, {}, "Wrap-around padding of [N, C, D, H, W] inputs.", _CIRCULAR, Pad3D
)

Upsample = functional_layer(
    "Upsample",
    F.interpolate,
    {
        "size": None,
        "scale_factor": None,
        "mode": "nearest",
        "align_corners": False,
        "align_mode": 0,
        "data_format": None,
        "recompute_scale_factor": None,
    },
    "Resize by ``size`` or ``scale_factor`` (see :func:`minidp.nn.functional.interpolate`).",
    shown=("size", "scale_factor", "mode"),
)
_RESIZE_2D = {"size": None, "scale_factor": None, "data_format": "NCHW"}
UpsamplingNearest2D = functional_layer(
    "UpsamplingNearest2D",
    F.interpolate,
    _RESIZE_2D,
    "Nearest-neighbour resizing of [N, C, H, W] inputs.",
    fixed={"mode": "nearest"},
    base=Upsample,
)
UpsamplingBilinear2D = functional_layer(
    "UpsamplingBilinear2D",
    F.interpolate,
    _RESIZE_2D,
    "Bilinear resizing of [N, C, H, W] inputs with aligned corners (Paddle's choice).",
    fixed={"mode": "bilinear", "align_corners": True},
    base=Upsample,
)

PixelShuffle = functional_layer(
    "PixelShuffle",
    F.pixel_shuffle,
    {"upscale_factor": REQUIRED, "data_format": "NCHW"},
    "[N, C r^2, H, W] -> [N, C, H r, W r].",
    shown=("upscale_factor",),
)
PixelUnshuffle = functional_layer(
    "PixelUnshuffle",
    F.pixel_unshuffle,
    {"downscale_factor": REQUIRED, "data_format": "NCHW"},
    "[N, C, H r, W r] -> [N, C r^2, H, W].",
    shown=("downscale_factor",),
)
ChannelShuffle = functional_layer(
    "ChannelShuffle",
    F.channel_shuffle,
    {"groups": REQUIRED, "data_format": "NCHW"},
    "Interleave the channels of ``groups`` groups (ShuffleNet).",
    shown=("groups",),
)

_BLOCKS = {"kernel_sizes": REQUIRED, "dilations": 1, "paddings": 0, "strides": 1}
Unfold = functional_layer(
    "Unfold", F.unfold, _BLOCKS, "Sliding blocks as columns (see :func:`minidp.nn.functional.unfold`)."
)
Fold = functional_layer(
    "Fold",
    F.fold,
    {"output_sizes": REQUIRED, **_BLOCKS},
    "Columns summed back into an image (see :func:`minidp.nn.functional.fold`).",
)

CosineSimilarity = functional_layer(
    "CosineSimilarity",
    F.cosine_similarity,
    {"axis": 1, "eps": 1e-08},
    "Cosine similarity of two tensors along ``axis``.",
    takes_name=False,
)
PairwiseDistance = functional_layer(
    "PairwiseDistance",
    F.pairwise_distance,
    {"p": 2.0, "epsilon": 1e-06, "keepdim": False},
    "p-norm distance between the rows of two tensors.",
)
