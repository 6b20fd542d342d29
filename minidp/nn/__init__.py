"""Neural-network building blocks: Layer, the layers and losses, initializers, clipping.

``minidp.nn.functional`` holds the same operations as functions.
"""

from ..core.tensor import Parameter
from . import functional, initializer
from .clip import ClipGradByGlobalNorm
from .clip import ClipGradByNorm, ClipGradByValue
from .layers import Conv1DTranspose, Conv2DTranspose
from .layers import (
    ChannelShuffle,
    CircularPad1D,
    CircularPad2D,
    CircularPad3D,
    ConstantPad1D,
    ConstantPad2D,
    ConstantPad3D,
    Fold,
    HuberLoss,
    LayerDict,
    MultiLabelMarginLoss,
    ParameterDict,
    ReflectionPad1D,
    ReflectionPad2D,
    ReflectionPad3D,
    ReplicationPad1D,
    ReplicationPad2D,
    ReplicationPad3D,
    TripletMarginWithDistanceLoss,
    Unfold,
    ZeroPad1D,
    ZeroPad3D,
)
from . import utils
from ..core.layer import Layer
from .layers import (
    GELU,
    AvgPool2D,
    BatchNorm1D,
    BatchNorm2D,
    BCEWithLogitsLoss,
    Conv2D,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    L1Loss,
    LayerList,
    LayerNorm,
    Linear,
    LogSoftmax,
    MaxPool2D,
    MSELoss,
    NLLLoss,
    ParameterList,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from .layers import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Maxout,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    Silu,
    Softplus,
    Softshrink,
    Softsign,
    Swish,
    Tanhshrink,
    ThresholdedReLU,
)
from .layers import Softmax2D
from .layers import (
    AdaptiveAvgPool1D,
    AdaptiveAvgPool2D,
    AdaptiveMaxPool1D,
    AdaptiveMaxPool2D,
    AlphaDropout,
    AvgPool1D,
    BatchNorm,
    BatchNorm3D,
    BCELoss,
    Bilinear,
    Conv1D,
    CosineEmbeddingLoss,
    CosineSimilarity,
    Dropout2D,
    Dropout3D,
    FeatureAlphaDropout,
    GaussianNLLLoss,
    GroupNorm,
    HingeEmbeddingLoss,
    InstanceNorm1D,
    InstanceNorm2D,
    InstanceNorm3D,
    KLDivLoss,
    LocalResponseNorm,
    MarginRankingLoss,
    MaxPool1D,
    MultiHeadAttention,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    Pad1D,
    Pad2D,
    Pad3D,
    PairwiseDistance,
    PixelShuffle,
    PixelUnshuffle,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    SyncBatchNorm,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    TripletMarginLoss,
    Unflatten,
    Upsample,
    UpsamplingBilinear2D,
    UpsamplingNearest2D,
    ZeroPad2D,
)
from .layers import GRU, LSTM, RNN, BiRNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from .layers import RNNCellBase
from .layers import AdaptiveAvgPool3D, AdaptiveMaxPool3D, AvgPool3D, Conv3D, MaxPool3D
from .layers import LPPool1D, LPPool2D, MaxUnPool1D, MaxUnPool2D
from .layers import Conv3DTranspose
from .layers import CTCLoss
from .layers import SpectralNorm
from ..core.param_attr import ParamAttr

__all__ = [
    "Parameter",
    "Layer",
    "ParamAttr",
    "ClipGradByGlobalNorm",
    "functional",
    "initializer",
    "GELU",
    "AvgPool2D",
    "BatchNorm1D",
    "BatchNorm2D",
    "BCEWithLogitsLoss",
    "Conv2D",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "Identity",
    "L1Loss",
    "LayerList",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MaxPool2D",
    "MSELoss",
    "NLLLoss",
    "ParameterList",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
]
__all__ += [
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "SELU",
    "CELU",
    "Silu",
    "Swish",
    "Mish",
    "Softplus",
    "Softsign",
    "Softshrink",
    "Hardshrink",
    "Tanhshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LogSigmoid",
    "ThresholdedReLU",
    "GLU",
    "Maxout",
    "RReLU",
    "PReLU",
]
__all__ += ["Softmax2D"]
__all__ += [
    "AdaptiveAvgPool1D",
    "AdaptiveAvgPool2D",
    "AdaptiveMaxPool1D",
    "AdaptiveMaxPool2D",
    "AlphaDropout",
    "AvgPool1D",
    "BatchNorm",
    "BatchNorm3D",
    "BCELoss",
    "Bilinear",
    "Conv1D",
    "CosineEmbeddingLoss",
    "CosineSimilarity",
    "Dropout2D",
    "Dropout3D",
    "FeatureAlphaDropout",
    "GaussianNLLLoss",
    "GroupNorm",
    "HingeEmbeddingLoss",
    "InstanceNorm1D",
    "InstanceNorm2D",
    "InstanceNorm3D",
    "KLDivLoss",
    "LocalResponseNorm",
    "MarginRankingLoss",
    "MaxPool1D",
    "MultiHeadAttention",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "Pad1D",
    "Pad2D",
    "Pad3D",
    "PairwiseDistance",
    "PixelShuffle",
    "PixelUnshuffle",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "SyncBatchNorm",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TripletMarginLoss",
    "Unflatten",
    "Upsample",
    "UpsamplingBilinear2D",
    "UpsamplingNearest2D",
    "ZeroPad2D",
]
__all__ += ["GRU", "LSTM", "RNN", "BiRNN", "GRUCell", "LSTMCell", "SimpleRNN", "SimpleRNNCell"]
__all__ += ["ClipGradByNorm", "ClipGradByValue", "utils"]
__all__ += ["Conv1DTranspose", "Conv2DTranspose"]
__all__ += [
    "ChannelShuffle",
    "CircularPad1D",
    "CircularPad2D",
    "CircularPad3D",
    "ConstantPad1D",
    "ConstantPad2D",
    "ConstantPad3D",
    "Fold",
    "HuberLoss",
    "LayerDict",
    "MultiLabelMarginLoss",
    "ParameterDict",
    "ReflectionPad1D",
    "ReflectionPad2D",
    "ReflectionPad3D",
    "ReplicationPad1D",
    "ReplicationPad2D",
    "ReplicationPad3D",
    "TripletMarginWithDistanceLoss",
    "Unfold",
    "ZeroPad1D",
    "ZeroPad3D",
]

# PyTorch-style spellings that Paddle also exports: the same classes under a second name.
Module, ModuleList, ModuleDict = Layer, LayerList, LayerDict
Conv1d, Conv2d = Conv1D, Conv2D
AdaptiveAvgPool1d, AdaptiveAvgPool2d = AdaptiveAvgPool1D, AdaptiveAvgPool2D
AdaptiveMaxPool1d, AdaptiveMaxPool2d = AdaptiveMaxPool1D, AdaptiveMaxPool2D
UpsamplingBilinear2d, UpsamplingNearest2d = UpsamplingBilinear2D, UpsamplingNearest2D
ZeroPad1d, ZeroPad2d, ZeroPad3d = ZeroPad1D, ZeroPad2D, ZeroPad3D
ConstantPad1d, ConstantPad2d, ConstantPad3d = ConstantPad1D, ConstantPad2D, ConstantPad3D
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = ReflectionPad1D, ReflectionPad2D, ReflectionPad3D
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = ReplicationPad1D, ReplicationPad2D, ReplicationPad3D
CircularPad1d, CircularPad2d, CircularPad3d = CircularPad1D, CircularPad2D, CircularPad3D
__all__ += [
    "Module",
    "ModuleList",
    "ModuleDict",
    "Conv1d",
    "Conv2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
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
]
__all__ += ["RNNCellBase"]
__all__ += [
    "Conv3D",
    "AdaptiveAvgPool3D",
    "AdaptiveMaxPool3D",
    "AvgPool3D",
    "MaxPool3D",
    "Conv3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
]
Conv3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d = Conv3D, AdaptiveAvgPool3D, AdaptiveMaxPool3D
__all__ += ["LPPool1D", "LPPool2D", "MaxUnPool1D", "MaxUnPool2D", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d"]
LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d = LPPool1D, LPPool2D, MaxUnPool1D, MaxUnPool2D
__all__ += ["Conv3DTranspose"]
__all__ += ["CTCLoss"]
__all__ += ["SpectralNorm"]
__all__ += ["SiLU"]
SiLU = Silu
from .layers import MaxUnPool3D

__all__ += ["MaxUnPool3D", "MaxUnpool3d"]
MaxUnpool3d = MaxUnPool3D
