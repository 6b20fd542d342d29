"""Functional forms of the layers: ``import minidp.nn.functional as F``."""
from .activation import gelu, log_softmax, relu, sigmoid, softmax, tanh
from .activation import (celu, elu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh,
                         leaky_relu, log_sigmoid, maxout, mish, prelu, relu6, rrelu, selu, silu, softplus,
                         softshrink, softsign, swish, tanhshrink, thresholded_relu)
from .activation import elu_, hardtanh_, leaky_relu_, relu_, softmax_, tanh_, thresholded_relu_
from .common import dropout, linear
from .conv import conv2d
from .input import embedding
from .loss import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .norm import batch_norm, layer_norm
from .pooling import avg_pool2d, max_pool2d

__all__ = ["linear", "dropout", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "batch_norm",
           "embedding", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
           "binary_cross_entropy_with_logits", "relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax"]
__all__ += ["relu6", "leaky_relu", "elu", "selu", "celu", "silu", "swish", "mish", "softplus", "softsign", "softshrink",
            "hardshrink", "tanhshrink", "hardsigmoid", "hardswish", "hardtanh", "log_sigmoid",
            "thresholded_relu", "prelu", "rrelu", "glu", "gumbel_softmax", "maxout"]
__all__ += ["relu_", "elu_", "leaky_relu_", "hardtanh_", "softmax_", "thresholded_relu_", "tanh_"]
