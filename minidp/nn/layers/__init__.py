"""The layer classes; import them from :mod:`minidp.nn`."""

from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .activation import (
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
from .activation import Softmax2D
from .common import Dropout, Flatten, Identity, Linear
from .container import LayerList, ParameterList, Sequential
from .conv import Conv2D
from .embedding import Embedding
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .norm import BatchNorm1D, BatchNorm2D, LayerNorm
from .pooling import AvgPool2D, MaxPool2D
from .common import AlphaDropout, Bilinear, Dropout2D, Dropout3D, FeatureAlphaDropout, Unflatten
from .conv import Conv1D
from .conv import Conv1DTranspose, Conv2DTranspose
from .container import LayerDict, ParameterDict
from .loss import HuberLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss
from .vision import (
    ChannelShuffle,
    CircularPad1D,
    CircularPad2D,
    CircularPad3D,
    ConstantPad1D,
    ConstantPad2D,
    ConstantPad3D,
    Fold,
    ReflectionPad1D,
    ReflectionPad2D,
    ReflectionPad3D,
    ReplicationPad1D,
    ReplicationPad2D,
    ReplicationPad3D,
    Unfold,
    ZeroPad1D,
    ZeroPad3D,
)
from .loss import (
    BCELoss,
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    KLDivLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .norm import (
    BatchNorm,
    BatchNorm3D,
    GroupNorm,
    InstanceNorm1D,
    InstanceNorm2D,
    InstanceNorm3D,
    LocalResponseNorm,
    SyncBatchNorm,
)
from .pooling import AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveMaxPool1D, AdaptiveMaxPool2D, AvgPool1D, MaxPool1D
from .rnn import GRU, LSTM, RNN, BiRNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from .rnn import RNNCellBase
from .conv import Conv3D
from .conv import Conv3DTranspose
from .loss import CTCLoss
from .norm import SpectralNorm
from .pooling import AdaptiveAvgPool3D, AdaptiveMaxPool3D, AvgPool3D, MaxPool3D
from .pooling import LPPool1D, LPPool2D, MaxUnPool1D, MaxUnPool2D
from .pooling import MaxUnPool3D
from .transformer import (
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .vision import (
    CosineSimilarity,
    Pad1D,
    Pad2D,
    Pad3D,
    PairwiseDistance,
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2D,
    UpsamplingNearest2D,
    ZeroPad2D,
)

__all__ = [
    "GELU",
    "LogSoftmax",
    "ReLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "Dropout",
    "Flatten",
    "Identity",
    "Linear",
    "LayerList",
    "ParameterList",
    "Sequential",
    "Conv2D",
    "Embedding",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "BatchNorm1D",
    "BatchNorm2D",
    "LayerNorm",
    "AvgPool2D",
    "MaxPool2D",
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
    "AlphaDropout",
    "Bilinear",
    "Dropout2D",
    "Dropout3D",
    "FeatureAlphaDropout",
    "Unflatten",
    "Conv1D",
    "BCELoss",
    "CosineEmbeddingLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "BatchNorm",
    "BatchNorm3D",
    "GroupNorm",
    "InstanceNorm1D",
    "InstanceNorm2D",
    "InstanceNorm3D",
    "LocalResponseNorm",
    "SyncBatchNorm",
    "AdaptiveAvgPool1D",
    "AdaptiveAvgPool2D",
    "AdaptiveMaxPool1D",
    "AdaptiveMaxPool2D",
    "AvgPool1D",
    "MaxPool1D",
    "MultiHeadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "CosineSimilarity",
    "Pad1D",
    "Pad2D",
    "Pad3D",
    "PairwiseDistance",
    "PixelShuffle",
    "PixelUnshuffle",
    "Upsample",
    "UpsamplingBilinear2D",
    "UpsamplingNearest2D",
    "ZeroPad2D",
]
__all__ += ["GRU", "LSTM", "RNN", "BiRNN", "GRUCell", "LSTMCell", "SimpleRNN", "SimpleRNNCell"]
__all__ += ["Conv1DTranspose", "Conv2DTranspose"]
__all__ += [
    "LayerDict",
    "ParameterDict",
    "HuberLoss",
    "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss",
    "ChannelShuffle",
    "CircularPad1D",
    "CircularPad2D",
    "CircularPad3D",
    "ConstantPad1D",
    "ConstantPad2D",
    "ConstantPad3D",
    "Fold",
    "ReflectionPad1D",
    "ReflectionPad2D",
    "ReflectionPad3D",
    "ReplicationPad1D",
    "ReplicationPad2D",
    "ReplicationPad3D",
    "Unfold",
    "ZeroPad1D",
    "ZeroPad3D",
]
__all__ += ["RNNCellBase"]
__all__ += ["Conv3D", "AdaptiveAvgPool3D", "AdaptiveMaxPool3D", "AvgPool3D", "MaxPool3D"]
__all__ += ["LPPool1D", "LPPool2D", "MaxUnPool1D", "MaxUnPool2D"]
__all__ += ["Conv3DTranspose"]
__all__ += ["CTCLoss"]
__all__ += ["SpectralNorm"]
__all__ += ["MaxUnPool3D"]
