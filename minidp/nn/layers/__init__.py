"""The layer classes; import them from :mod:`minidp.nn`."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .activation import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                         Maxout, Mish, PReLU, ReLU6, RReLU, Silu, Softplus, Softshrink, Softsign, Swish, Tanhshrink,
                         ThresholdedReLU)
from .activation import Softmax2D
from .common import Dropout, Flatten, Identity, Linear
from .container import LayerList, ParameterList, Sequential
from .conv import Conv2D
from .embedding import Embedding
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .norm import BatchNorm1D, BatchNorm2D, LayerNorm
from .pooling import AvgPool2D, MaxPool2D

__all__ = ["GELU", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh", "Dropout", "Flatten", "Identity",
           "Linear", "LayerList", "ParameterList", "Sequential", "Conv2D", "Embedding", "BCEWithLogitsLoss",
           "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss", "BatchNorm1D", "BatchNorm2D", "LayerNorm",
           "AvgPool2D", "MaxPool2D"]
__all__ += ["ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "Silu", "Swish", "Mish", "Softplus", "Softsign", "Softshrink",
            "Hardshrink", "Tanhshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid",
            "ThresholdedReLU", "GLU", "Maxout", "RReLU", "PReLU"]
__all__ += ["Softmax2D"]
