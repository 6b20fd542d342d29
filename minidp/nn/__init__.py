"""Neural-network building blocks: Layer, the layers and losses, initializers, clipping.

``minidp.nn.functional`` holds the same operations as functions. The layers come from
:mod:`minidp.nn.layers` and the clipping strategies from :mod:`minidp.nn.clip`, by their
``__all__``.
"""

from ..core.tensor import Parameter
from . import clip, functional, initializer, layer, layers
from .clip import *
from .layers import *
from . import loss
from . import utils
from ..core.layer import Layer
from ..core.param_attr import ParamAttr

# PyTorch-style spellings that Paddle also exports: the same classes under a second name.
Module, ModuleList, ModuleDict = Layer, LayerList, LayerDict
Conv1d, Conv2d, Conv3d = Conv1D, Conv2D, Conv3D
AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d = AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveAvgPool3D
AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d = AdaptiveMaxPool1D, AdaptiveMaxPool2D, AdaptiveMaxPool3D
UpsamplingBilinear2d, UpsamplingNearest2d = UpsamplingBilinear2D, UpsamplingNearest2D
ZeroPad1d, ZeroPad2d, ZeroPad3d = ZeroPad1D, ZeroPad2D, ZeroPad3D
ConstantPad1d, ConstantPad2d, ConstantPad3d = ConstantPad1D, ConstantPad2D, ConstantPad3D
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = ReflectionPad1D, ReflectionPad2D, ReflectionPad3D
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = ReplicationPad1D, ReplicationPad2D, ReplicationPad3D
CircularPad1d, CircularPad2d, CircularPad3d = CircularPad1D, CircularPad2D, CircularPad3D
LPPool1d, LPPool2d = LPPool1D, LPPool2D
MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = MaxUnPool1D, MaxUnPool2D, MaxUnPool3D
SiLU = Silu

__all__ = [
    *layers.__all__,
    *clip.__all__,
    "Layer",
    "Parameter",
    "ParamAttr",
    "functional",
    "initializer",
    "utils",
    "Module",
    "ModuleList",
    "ModuleDict",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "LPPool1d",
    "LPPool2d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "SiLU",
]
