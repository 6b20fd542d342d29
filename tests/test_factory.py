"""Layers made from table rows (``minidp/nn/layers/factory.py``): every one has Paddle's
constructor parameters, forwards only options its function takes, keeps and shows them as
Paddle does, keeps Paddle's class relations and names itself in argument errors."""

import inspect

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from minidp.nn.layers.factory import FunctionalLayer

# Constructor parameters of Paddle 3.3.1's layers (names and defaults, in order), recorded with
# inspect.signature from Paddle itself: every table layer must take the same ones.
PADDLE_SIGNATURES = {
    "AdaptiveAvgPool1D": "(output_size, name=None)",
    "AdaptiveAvgPool2D": "(output_size, data_format='NCHW', name=None)",
    "AdaptiveAvgPool3D": "(output_size, data_format='NCDHW', name=None)",
    "AdaptiveMaxPool1D": "(output_size, return_mask=False, name=None)",
    "AdaptiveMaxPool2D": "(output_size, return_mask=False, name=None)",
    "AdaptiveMaxPool3D": "(output_size, return_mask=False, name=None)",
    "AlphaDropout": "(p=0.5, name=None)",
    "AvgPool1D": "(kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None)",
    "AvgPool2D": (
        "(kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, "
        "divisor_override=None, data_format='NCHW', name=None)"
    ),
    "AvgPool3D": (
        "(kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, "
        "divisor_override=None, data_format='NCDHW', name=None)"
    ),
    "BCELoss": "(weight=None, reduction='mean', name=None)",
    "BCEWithLogitsLoss": "(weight=None, reduction='mean', pos_weight=None, name=None)",
    "CELU": "(alpha=1.0, name=None)",
    "ChannelShuffle": "(groups, data_format='NCHW', name=None)",
    "CircularPad1D": "(padding, data_format='NCL', name=None)",
    "CircularPad2D": "(padding, data_format='NCHW', name=None)",
    "CircularPad3D": "(padding, data_format='NCDHW', name=None)",
    "ConstantPad1D": "(padding, value, data_format='NCL', name=None)",
    "ConstantPad2D": "(padding, value, data_format='NCHW', name=None)",
    "ConstantPad3D": "(padding, value, data_format='NCDHW', name=None)",
    "CosineEmbeddingLoss": "(margin=0, reduction='mean', name=None)",
    "CosineSimilarity": "(axis=1, eps=1e-08)",
    "CrossEntropyLoss": (
        "(weight=None, ignore_index=-100, reduction='mean', soft_label=False, axis=-1, "
        "use_softmax=True, label_smoothing=0.0, name=None)"
    ),
    "Dropout": "(p=0.5, inplace=False, axis=None, mode='upscale_in_train', name=None)",
    "Dropout2D": "(p=0.5, data_format='NCHW', name=None)",
    "Dropout3D": "(p=0.5, data_format='NCDHW', name=None)",
    "ELU": "(alpha=1.0, name=None)",
    "FeatureAlphaDropout": "(p=0.5, name=None)",
    "Flatten": "(start_axis=1, stop_axis=-1)",
    "Fold": "(output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None)",
    "GELU": "(approximate=False, name=None)",
    "GLU": "(axis=-1, name=None)",
    "GaussianNLLLoss": "(full=False, epsilon=1e-06, reduction='mean', name=None)",
    "Hardshrink": "(threshold=0.5, name=None)",
    "Hardsigmoid": "(name=None)",
    "Hardswish": "(name=None)",
    "Hardtanh": "(min=-1.0, max=1.0, name=None)",
    "HingeEmbeddingLoss": "(margin=1.0, reduction='mean', name=None)",
    "HuberLoss": "(reduction='mean', delta=1.0, is_huber=True, name=None)",
    "KLDivLoss": "(reduction='mean', log_target=False)",
    "L1Loss": "(reduction='mean', name=None)",
    "LPPool1D": ("(norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format='NCL', name=None)"),
    "LPPool2D": ("(norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format='NCHW', name=None)"),
    "LeakyReLU": "(negative_slope=0.01, name=None)",
    "LogSigmoid": "(name=None)",
    "LogSoftmax": "(axis=-1, name=None)",
    "MSELoss": "(reduction='mean')",
    "MarginRankingLoss": "(margin=0.0, reduction='mean', name=None)",
    "MaxPool1D": "(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None)",
    "MaxPool2D": (
        "(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format='NCHW', name=None)"
    ),
    "MaxPool3D": (
        "(kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format='NCDHW', name=None)"
    ),
    "MaxUnPool1D": "(kernel_size, stride=None, padding=0, data_format='NCL', output_size=None, name=None)",
    "MaxUnPool2D": "(kernel_size, stride=None, padding=0, data_format='NCHW', output_size=None, name=None)",
    "MaxUnPool3D": "(kernel_size, stride=None, padding=0, data_format='NCDHW', output_size=None, name=None)",
    "Maxout": "(groups, axis=1, name=None)",
    "Mish": "(name=None)",
    "MultiLabelMarginLoss": "(reduction='mean', name=None)",
    "MultiLabelSoftMarginLoss": "(weight=None, reduction='mean', name=None)",
    "MultiMarginLoss": "(p=1, margin=1.0, weight=None, reduction='mean', name=None)",
    "NLLLoss": "(weight=None, ignore_index=-100, reduction='mean', name=None)",
    "Pad1D": "(padding, mode='constant', value=0.0, data_format='NCL', name=None)",
    "Pad2D": "(padding, mode='constant', value=0.0, data_format='NCHW', name=None)",
    "Pad3D": "(padding, mode='constant', value=0.0, data_format='NCDHW', name=None)",
    "PairwiseDistance": "(p=2.0, epsilon=1e-06, keepdim=False, name=None)",
    "PixelShuffle": "(upscale_factor, data_format='NCHW', name=None)",
    "PixelUnshuffle": "(downscale_factor, data_format='NCHW', name=None)",
    "PoissonNLLLoss": "(log_input=True, full=False, epsilon=1e-08, reduction='mean', name=None)",
    "RReLU": "(lower=0.125, upper=0.3333333333333333, name=None)",
    "ReLU": "(name=None)",
    "ReLU6": "(name=None)",
    "ReflectionPad1D": "(padding, data_format='NCL', name=None)",
    "ReflectionPad2D": "(padding, data_format='NCHW', name=None)",
    "ReflectionPad3D": "(padding, data_format='NCDHW', name=None)",
    "ReplicationPad1D": "(padding, data_format='NCL', name=None)",
    "ReplicationPad2D": "(padding, data_format='NCHW', name=None)",
    "ReplicationPad3D": "(padding, data_format='NCDHW', name=None)",
    "SELU": "(scale=1.0507009873554805, alpha=1.6732632423543772, name=None)",
    "Sigmoid": "(name=None)",
    "Silu": "(inplace=False, name=None)",
    "SmoothL1Loss": "(reduction='mean', delta=1.0, is_huber=True, name=None)",
    "SoftMarginLoss": "(reduction='mean', name=None)",
    "Softmax": "(axis=-1, name=None)",
    "Softplus": "(beta=1, threshold=20, name=None)",
    "Softshrink": "(threshold=0.5, name=None)",
    "Softsign": "(name=None)",
    "Swish": "(name=None)",
    "Tanh": "(name=None)",
    "Tanhshrink": "(name=None)",
    "ThresholdedReLU": "(threshold=1.0, value=0.0, name=None)",
    "TransformerDecoderLayer": (
        "(d_model, nhead, dim_feedforward, dropout=0.1, activation='relu', "
        "attn_dropout=None, act_dropout=None, normalize_before=False, "
        "weight_attr=None, bias_attr=None, layer_norm_eps=1e-05)"
    ),
    "TransformerEncoderLayer": (
        "(d_model, nhead, dim_feedforward, dropout=0.1, activation='relu', "
        "attn_dropout=None, act_dropout=None, normalize_before=False, "
        "weight_attr=None, bias_attr=None, layer_norm_eps=1e-05)"
    ),
    "TripletMarginLoss": "(margin=1.0, p=2.0, epsilon=1e-06, swap=False, reduction='mean', name=None)",
    "TripletMarginWithDistanceLoss": ("(distance_function=None, margin=1.0, swap=False, reduction='mean', name=None)"),
    "Unfold": "(kernel_sizes, dilations=1, paddings=0, strides=1, name=None)",
    "Upsample": (
        "(size=None, scale_factor=None, mode='nearest', align_corners=False, align_mode=0, "
        "data_format=None, recompute_scale_factor=None, name=None)"
    ),
    "UpsamplingBilinear2D": "(size=None, scale_factor=None, data_format='NCHW', name=None)",
    "UpsamplingNearest2D": "(size=None, scale_factor=None, data_format='NCHW', name=None)",
    "ZeroPad1D": "(padding, data_format='NCL', name=None)",
    "ZeroPad2D": "(padding, data_format='NCHW', name=None)",
    "ZeroPad3D": "(padding, data_format='NCDHW', name=None)",
}


def _parameters(cls):
    params = inspect.signature(cls).parameters.values()
    return "(" + ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params) + ")"


def _table_layers():
    return sorted(
        name
        for name, value in vars(nn).items()
        if isinstance(value, type) and issubclass(value, FunctionalLayer) and value.__name__ == name
    )


def test_every_table_layer_has_paddles_constructor_parameters():
    assert set(_table_layers()) <= set(PADDLE_SIGNATURES)
    for name, expected in PADDLE_SIGNATURES.items():
        assert _parameters(getattr(nn, name)) == expected, name


def test_every_table_row_forwards_only_options_its_function_takes():
    for name in _table_layers():
        layer = getattr(nn, name)
        accepted = set(inspect.signature(layer._function).parameters)
        options = set(layer._signature.parameters) - {"name"} | set(layer._fixed)
        options |= {"training"} if layer._passes_training else set()
        assert options <= accepted, (name, options - accepted)


def test_table_layers_keep_their_options_and_show_them_like_paddle():
    layer = nn.LeakyReLU(0.2)
    assert layer.negative_slope == 0.2 and repr(layer) == "LeakyReLU(negative_slope=0.2)"
    x = minidp.to_tensor(np.array([-1.0, 2.0]))
    layer.negative_slope = 0.5
    np.testing.assert_allclose(layer(x).numpy(), [-0.5, 2.0])
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.MSELoss()) == "MSELoss()"
    label = minidp.to_tensor(np.array([0.0, 0.0]))
    assert float(nn.MSELoss("sum")(input=x, label=label)) == 5.0 and nn.ReLU()(x=x).numpy().tolist() == [0.0, 2.0]
    assert repr(nn.MaxPool2D(2)) == "MaxPool2D(kernel_size=2, stride=None, padding=0)"
    assert repr(nn.Dropout()) == "Dropout(p=0.5, axis=None, mode=upscale_in_train, inplace=False)"
    assert repr(nn.ReflectionPad2D(1)) == (
        "ReflectionPad2D(padding=[1, 1, 1, 1], mode=reflect, value=0.0, data_format=NCHW)"
    )
    assert repr(nn.ConstantPad1D([1, 2], 3.0)) == (
        "ConstantPad1D(padding=[1, 2], mode=constant, value=3.0, data_format=NCL)"
    )
    assert nn.Softmax.__doc__ == "Softmax along ``axis``." and nn.Softmax.__module__ == "minidp.nn.layers.activation"
    assert not hasattr(nn.ReLU(), "name")


def test_table_layers_keep_their_class_relations():
    assert isinstance(nn.ZeroPad2D(1), nn.Pad2D) and isinstance(nn.CircularPad3D(1), nn.Pad3D)
    assert isinstance(nn.ConstantPad1D(1, 0.0), nn.Pad1D) and not isinstance(nn.Pad1D(1), nn.Pad2D)
    assert isinstance(nn.HuberLoss(), nn.SmoothL1Loss) and isinstance(nn.LPPool2D(2, 2), nn.LPPool1D)
    assert isinstance(nn.FeatureAlphaDropout(), nn.AlphaDropout) and isinstance(nn.UpsamplingNearest2D(), nn.Upsample)
    assert isinstance(nn.ReLU(), nn.Layer) and nn.ReLU is nn.layers.activation.ReLU


def test_table_layers_reject_bad_arguments_naming_the_layer():
    with pytest.raises(TypeError, match="Maxout: missing a required argument: 'groups'"):
        nn.Maxout()
    with pytest.raises(TypeError, match="ReLU: too many positional arguments"):
        nn.ReLU(None, 1)
    with pytest.raises(TypeError, match="GELU: got an unexpected keyword argument 'approx'"):
        nn.GELU(approx=True)
    with pytest.raises(ValueError, match="L1Loss: reduction must be one of"):
        nn.L1Loss("avg")
    with pytest.raises(ValueError, match="KLDivLoss: reduction must be 'mean', 'sum', 'none' or 'batchmean'"):
        nn.KLDivLoss("avg")
    with pytest.raises(ValueError, match="ZeroPad2D: padding must be an int or 4 values"):
        nn.ZeroPad2D([1, 2])


def test_dropout_takes_paddles_inplace_option():
    x = minidp.ones([4, 50])
    layer = nn.Dropout(0.5, True)
    assert layer.inplace and layer.axis is None
    out = layer(x)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0} and (x.numpy() == 0).any()
    kept = minidp.ones([4, 50])
    assert nn.Dropout(0.5)(kept) is not kept and (kept.numpy() == 1).all()
