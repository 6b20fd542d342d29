"""Neural-network building blocks: Layer, the layers and losses, initializers, clipping.

``minidp.nn.functional`` holds the same operations as functions.
"""
from ..autograd.tensor import Parameter
from . import functional, initializer
from .clip import ClipGradByGlobalNorm
from .layer import Layer
from .layers import (GELU, AvgPool2D, BatchNorm1D, BatchNorm2D, BCEWithLogitsLoss, Conv2D, CrossEntropyLoss,
                     Dropout, Embedding, Flatten, Identity, L1Loss, LayerList, LayerNorm, Linear, LogSoftmax,
                     MaxPool2D, MSELoss, NLLLoss, ParameterList, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .layers import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                     Maxout, Mish, PReLU, ReLU6, RReLU, Silu, Softplus, Softshrink, Softsign, Swish, Tanhshrink,
                     ThresholdedReLU)
from .layers import Softmax2D
from .param_attr import ParamAttr

__all__ = ["Parameter", "Layer", "ParamAttr", "ClipGradByGlobalNorm", "functional", "initializer", "GELU",
           "AvgPool2D", "BatchNorm1D", "BatchNorm2D", "BCEWithLogitsLoss", "Conv2D", "CrossEntropyLoss",
           "Dropout", "Embedding", "Flatten", "Identity", "L1Loss", "LayerList", "LayerNorm", "Linear",
           "LogSoftmax", "MaxPool2D", "MSELoss", "NLLLoss", "ParameterList", "ReLU", "Sequential", "Sigmoid",
           "Softmax", "Tanh"]
__all__ += ["ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "Silu", "Swish", "Mish", "Softplus", "Softsign", "Softshrink",
            "Hardshrink", "Tanhshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid",
            "ThresholdedReLU", "GLU", "Maxout", "RReLU", "PReLU"]
__all__ += ["Softmax2D"]
