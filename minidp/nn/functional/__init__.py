"""Functional forms of the layers: ``import minidp.nn.functional as F``."""

from .activation import gelu, log_softmax, relu, sigmoid, softmax, tanh
from .activation import (
    celu,
    elu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_sigmoid,
    maxout,
    mish,
    prelu,
    relu6,
    rrelu,
    selu,
    silu,
    softplus,
    softshrink,
    softsign,
    swish,
    tanhshrink,
    thresholded_relu,
)
from .activation import elu_, hardtanh_, leaky_relu_, relu_, softmax_, tanh_, thresholded_relu_
from .common import dropout, linear
from .conv import conv2d
from .input import embedding
from .loss import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .norm import batch_norm, layer_norm
from .pooling import avg_pool2d, max_pool2d
from .common import alpha_dropout, dropout2d, dropout3d, feature_alpha_dropout
from .composite_loss import (
    cosine_embedding_loss,
    dice_loss,
    gaussian_nll_loss,
    margin_ranking_loss,
    multi_label_soft_margin_loss,
    multi_margin_loss,
    sigmoid_focal_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .distance import cosine_similarity, pairwise_distance
from .input import one_hot
from .loss import (
    binary_cross_entropy,
    hinge_embedding_loss,
    kl_div,
    log_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    softmax_with_cross_entropy,
    square_error_cost,
)
from .norm import group_norm, instance_norm, local_response_norm, normalize
from .padding import pad, zeropad2d
from .attention import scaled_dot_product_attention
from .common import bilinear
from .conv import conv1d
from .conv import conv1d_transpose, conv2d_transpose
from .common import dropout1d, label_smooth
from .composite_loss import multi_label_margin_loss
from .distance import pdist
from .fold import fold, unfold
from .input import sequence_mask
from .vision import channel_shuffle
from .volume import adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, conv3d, max_pool3d
from .pooling import lp_pool1d, lp_pool2d, max_unpool1d, max_unpool2d
from .volume import conv3d_transpose
from .volume import max_unpool3d
from .composite_loss import npair_loss
from .vision import temporal_shift
from .ctc import ctc_loss
from .grid import affine_grid, grid_sample
from .input import gather_tree
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    max_pool1d,
)
from .vision import interpolate, pixel_shuffle, pixel_unshuffle, upsample
from .gated import swiglu
from .norm import rms_norm

__all__ = [
    "linear",
    "dropout",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "layer_norm",
    "batch_norm",
    "embedding",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits",
    "relu",
    "gelu",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
]
__all__ += [
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "celu",
    "silu",
    "swish",
    "mish",
    "softplus",
    "softsign",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "log_sigmoid",
    "thresholded_relu",
    "prelu",
    "rrelu",
    "glu",
    "gumbel_softmax",
    "maxout",
]
__all__ += ["relu_", "elu_", "leaky_relu_", "hardtanh_", "softmax_", "thresholded_relu_", "tanh_"]
__all__ += [
    "alpha_dropout",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "cosine_embedding_loss",
    "dice_loss",
    "gaussian_nll_loss",
    "margin_ranking_loss",
    "multi_label_soft_margin_loss",
    "multi_margin_loss",
    "sigmoid_focal_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "cosine_similarity",
    "pairwise_distance",
    "one_hot",
    "binary_cross_entropy",
    "hinge_embedding_loss",
    "kl_div",
    "log_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax_with_cross_entropy",
    "square_error_cost",
    "group_norm",
    "instance_norm",
    "local_response_norm",
    "normalize",
    "pad",
    "zeropad2d",
    "interpolate",
    "pixel_shuffle",
    "pixel_unshuffle",
    "upsample",
]
__all__ += [
    "scaled_dot_product_attention",
    "bilinear",
    "conv1d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "max_pool1d",
]
__all__ += ["conv1d_transpose", "conv2d_transpose"]
__all__ += [
    "dropout1d",
    "label_smooth",
    "multi_label_margin_loss",
    "pdist",
    "fold",
    "unfold",
    "sequence_mask",
    "channel_shuffle",
]
__all__ += ["adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "conv3d", "max_pool3d"]
__all__ += ["lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d"]
__all__ += ["conv3d_transpose"]
__all__ += ["max_unpool3d"]
__all__ += ["npair_loss", "temporal_shift"]
__all__ += ["ctc_loss"]
__all__ += ["affine_grid", "grid_sample"]
__all__ += ["gather_tree"]
__all__ += ["logsigmoid", "swiglu"]
__all__ += ["rms_norm"]
logsigmoid = log_sigmoid
