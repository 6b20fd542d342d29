"""MobileNet V1, V2 and V3 (small and large): depthwise-separable convolutions, inverted residuals
and, for V3, squeeze-excitation with hard-swish."""

from __future__ import annotations

from functools import partial
from typing import Any

from ... import nn
from ...core.tensor import Tensor
from .blocks import ConvNormActivation, classify, load_pretrained, make_divisible

__all__ = [
    "MobileNetV1",
    "MobileNetV2",
    "MobileNetV3Small",
    "MobileNetV3Large",
    "mobilenet_v1",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
]

_URL = "https://paddle-hapi.bj.bcebos.com/models/"
MODEL_URLS = {
    "mobilenetv1_1.0": (_URL + "mobilenetv1_1.0.pdparams", "3033ab1975b1670bef51545feb65fc45"),
    "mobilenetv2_1.0": (_URL + "mobilenet_v2_x1.0.pdparams", "0340af0a901346c8d46f4529882fb63d"),
    "mobilenet_v3_small_x1.0": (_URL + "mobilenet_v3_small_x1.0.pdparams", "34fe0e7c1f8b00b2b056ad6788d0590c"),
    "mobilenet_v3_large_x1.0": (_URL + "mobilenet_v3_large_x1.0.pdparams", "118db5792b4e183b925d8e8e334db3df"),
}


def _build(kind: type, arch: str, pretrained: bool, scale: float, **kwargs: Any) -> nn.Layer:
    """``kind(scale=scale, **kwargs)``, with Paddle's weights for ``arch`` where ``pretrained``."""
    if pretrained and arch not in MODEL_URLS:
        raise ValueError(f"Paddle publishes no pretrained weights for {arch}: pass pretrained=False or scale=1.0")
    model = kind(scale=scale, **kwargs)
    return load_pretrained(model, arch, *MODEL_URLS[arch]) if pretrained else model


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise convolution then a 1x1 pointwise one, each with batch norm and ReLU."""

    def __init__(
        self, in_channels: int, out_channels1: int, out_channels2: int, num_groups: int, stride: int, scale: float
    ) -> None:
        super().__init__()
        self._depthwise_conv = ConvNormActivation(
            in_channels, int(out_channels1 * scale), 3, stride=stride, padding=1, groups=int(num_groups * scale)
        )
        self._pointwise_conv = ConvNormActivation(int(out_channels1 * scale), int(out_channels2 * scale), 1, padding=0)

    def forward(self, x: Tensor) -> Tensor:
        return self._pointwise_conv(self._depthwise_conv(x))


# (name, input channels, depthwise channels, pointwise channels, stride), before ``scale``.
_V1_BLOCKS = (
    [("conv2_1", 32, 32, 64, 1), ("conv2_2", 64, 64, 128, 2), ("conv3_1", 128, 128, 128, 1)]
    + [("conv3_2", 128, 128, 256, 2), ("conv4_1", 256, 256, 256, 1), ("conv4_2", 256, 256, 512, 2)]
    + [(f"conv5_{i}", 512, 512, 512, 1) for i in range(1, 6)]
    + [("conv5_6", 512, 512, 1024, 2), ("conv6", 1024, 1024, 1024, 1)]
)


class MobileNetV1(nn.Layer):
    """MobileNetV1 with channel multiplier ``scale``."""

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        self.conv1 = ConvNormActivation(3, int(32 * scale), 3, stride=2, padding=1)
        self.dwsl = [
            self.add_sublayer(name, DepthwiseSeparable(int(cin * scale), c1, c2, c1, stride, scale))
            for name, cin, c1, c2, stride in _V1_BLOCKS
        ]
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        for block in self.dwsl:
            x = block(x)
        return classify(self, x, "pool2d_avg", "fc")


class InvertedResidual(nn.Layer):
    """MobileNetV2's block: 1x1 expansion (ReLU6), 3x3 depthwise (ReLU6), 1x1 linear projection;
    added to the input where shapes allow."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: float, norm_layer: Any = nn.BatchNorm2D) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2, got {stride!r}")
        self.stride = stride
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvNormActivation(inp, hidden, 1, norm_layer=norm_layer, activation_layer=nn.ReLU6))
        layers += [
            ConvNormActivation(
                hidden, hidden, stride=stride, groups=hidden, norm_layer=norm_layer, activation_layer=nn.ReLU6
            ),
            nn.Conv2D(hidden, oup, 1, 1, 0, bias_attr=False),
            norm_layer(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


# (expansion, output channels, repeats, first stride) of each stage.
_V2_STAGES = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]


class MobileNetV2(nn.Layer):
    """MobileNetV2 with width multiplier ``scale`` (channels rounded to multiples of 8)."""

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.num_classes, self.with_pool = num_classes, with_pool
        channels = make_divisible(32 * scale, 8)
        self.last_channel = make_divisible(1280 * max(1.0, scale), 8)
        features = [ConvNormActivation(3, channels, stride=2, activation_layer=nn.ReLU6)]
        for expansion, out, repeats, stride in _V2_STAGES:
            out = make_divisible(out * scale, 8)
            for i in range(repeats):
                features.append(InvertedResidual(channels, out, stride if i == 0 else 1, expand_ratio=expansion))
                channels = out
        features.append(ConvNormActivation(channels, self.last_channel, 1, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        return classify(self, self.features(x), "pool2d_avg", "classifier")


class SqueezeExcitation(nn.Layer):
    """Scales each channel by a gate computed from the channel means (two 1x1 convolutions)."""

    def __init__(
        self, input_channels: int, squeeze_channels: int, activation: Any = nn.ReLU, scale_activation: Any = nn.Sigmoid
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc1 = nn.Conv2D(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2D(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input: Tensor) -> Tensor:
        gate = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
        return gate * input


class InvertedResidualV3(nn.Layer):
    """MobileNetV3's block: optional 1x1 expansion, depthwise ``filter_size`` convolution, optional
    squeeze-excitation, linear 1x1 projection; added to the input where shapes allow."""

    def __init__(
        self,
        in_channels: int,
        expanded_channels: int,
        out_channels: int,
        filter_size: int,
        stride: int,
        use_se: bool,
        activation_layer: Any,
        norm_layer: Any,
    ) -> None:
        super().__init__()
        self.use_res_connect = stride == 1 and in_channels == out_channels
        self.use_se, self.expand = use_se, in_channels != expanded_channels
        act = {"norm_layer": norm_layer, "activation_layer": activation_layer}
        if self.expand:
            self.expand_conv = ConvNormActivation(in_channels, expanded_channels, 1, padding=0, **act)
        self.bottleneck_conv = ConvNormActivation(
            expanded_channels, expanded_channels, filter_size, stride, (filter_size - 1) // 2, expanded_channels, **act
        )
        if use_se:
            self.mid_se = SqueezeExcitation(
                expanded_channels, make_divisible(expanded_channels // 4), scale_activation=nn.Hardsigmoid
            )
        self.linear_conv = ConvNormActivation(
            expanded_channels, out_channels, 1, padding=0, norm_layer=norm_layer, activation_layer=None
        )

    def forward(self, x: Tensor) -> Tensor:
        out = self.expand_conv(x) if self.expand else x
        out = self.bottleneck_conv(out)
        if self.use_se:
            out = self.mid_se(out)
        out = self.linear_conv(out)
        return x + out if self.use_res_connect else out


# (in, kernel, expanded, out, squeeze-excitation, activation, stride) per block, before ``scale``.
_V3_SMALL = [
    (16, 3, 16, 16, True, "relu", 2),
    (16, 3, 72, 24, False, "relu", 2),
    (24, 3, 88, 24, False, "relu", 1),
    (24, 5, 96, 40, True, "hardswish", 2),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 120, 48, True, "hardswish", 1),
    (48, 5, 144, 48, True, "hardswish", 1),
    (48, 5, 288, 96, True, "hardswish", 2),
    (96, 5, 576, 96, True, "hardswish", 1),
    (96, 5, 576, 96, True, "hardswish", 1),
]
_V3_LARGE = [
    (16, 3, 16, 16, False, "relu", 1),
    (16, 3, 64, 24, False, "relu", 2),
    (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hardswish", 2),
    (80, 3, 200, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 480, 112, True, "hardswish", 1),
    (112, 3, 672, 112, True, "hardswish", 1),
    (112, 5, 672, 160, True, "hardswish", 2),
    (160, 5, 960, 160, True, "hardswish", 1),
    (160, 5, 960, 160, True, "hardswish", 1),
]


class MobileNetV3(nn.Layer):
    """MobileNetV3 from a block table (see ``_V3_SMALL``), ``last_channel`` wide before the classes."""

    def __init__(
        self, config: list, last_channel: int, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True
    ) -> None:
        super().__init__()
        self.scale, self.last_channel, self.num_classes, self.with_pool = scale, last_channel, num_classes, with_pool
        blocks = [
            (make_divisible(cin * scale), k, make_divisible(exp * scale), make_divisible(out * scale), se, act, s)
            for cin, k, exp, out, se, act, s in config
        ]
        norm_layer = partial(nn.BatchNorm2D, epsilon=0.001, momentum=0.99)
        activations = {"relu": nn.ReLU, "hardswish": nn.Hardswish}
        first, last = blocks[0][0], blocks[-1][0] * 6
        self.conv = ConvNormActivation(3, first, 3, 2, 1, activation_layer=nn.Hardswish, norm_layer=norm_layer)
        self.blocks = nn.Sequential(
            *[
                InvertedResidualV3(cin, exp, out, k, s, se, activations[act], norm_layer)
                for cin, k, exp, out, se, act, s in blocks
            ]
        )
        self.lastconv = ConvNormActivation(
            blocks[-1][0], last, 1, 1, 0, norm_layer=norm_layer, activation_layer=nn.Hardswish
        )
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(last, last_channel), nn.Hardswish(), nn.Dropout(p=0.2), nn.Linear(last_channel, num_classes)
            )

    def forward(self, x: Tensor) -> Tensor:
        return classify(self, self.lastconv(self.blocks(self.conv(x))), "avgpool", "classifier")


class MobileNetV3Small(MobileNetV3):
    """MobileNetV3-Small (11 blocks, 1024 features before the classes at scale 1)."""

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__(_V3_SMALL, make_divisible(1024 * scale, 8), scale, num_classes, with_pool)


class MobileNetV3Large(MobileNetV3):
    """MobileNetV3-Large (15 blocks, 1280 features before the classes at scale 1)."""

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__(_V3_LARGE, make_divisible(1280 * scale, 8), scale, num_classes, with_pool)


def mobilenet_v1(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV1:
    """MobileNetV1; ``pretrained`` exists for scale 1.0."""
    return _build(MobileNetV1, f"mobilenetv1_{scale}", pretrained, scale, **kwargs)


def mobilenet_v2(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2; ``pretrained`` exists for scale 1.0."""
    return _build(MobileNetV2, f"mobilenetv2_{scale}", pretrained, scale, **kwargs)


def mobilenet_v3_small(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV3Small:
    """MobileNetV3-Small; ``pretrained`` exists for scale 1.0."""
    return _build(MobileNetV3Small, f"mobilenet_v3_small_x{scale}", pretrained, scale, **kwargs)


def mobilenet_v3_large(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV3Large:
    """MobileNetV3-Large; ``pretrained`` exists for scale 1.0."""
    return _build(MobileNetV3Large, f"mobilenet_v3_large_x{scale}", pretrained, scale, **kwargs)
