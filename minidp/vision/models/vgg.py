"""VGG 11/13/16/19: stacks of 3x3 convolutions (optionally batch-normalised) and a 3-layer head."""

from __future__ import annotations

from typing import Any

from ... import nn
from ...core.tensor import Tensor
from .blocks import classify, load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19"]

_URL = "https://paddle-hapi.bj.bcebos.com/models/"
MODEL_URLS = {
    "vgg16": (_URL + "vgg16.pdparams", "89bbffc0f87d260be9b8cdc169c991c4"),
    "vgg19": (_URL + "vgg19.pdparams", "23b18bb13d8894f60f54e642be79a0dd"),
}
# Output channels of each 3x3 convolution; "M" is a 2x2 max-pool.
CONFIGS = {
    11: [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    13: [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    16: [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    19: [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Layer):
    """VGG around a ``features`` stack: 7x7 adaptive pooling (``with_pool``) and, for
    ``num_classes > 0``, the classifier Linear-ReLU-Dropout twice then Linear."""

    def __init__(self, features: nn.Layer, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.features, self.num_classes, self.with_pool = features, num_classes, with_pool
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7))
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, num_classes),
            )

    def forward(self, x: Tensor) -> Tensor:
        return classify(self, self.features(x), "avgpool", "classifier")


def make_layers(config: list, batch_norm: bool = False) -> nn.Sequential:
    """The feature stack of one VGG configuration (3 input channels)."""
    layers, in_channels = [], 3
    for item in config:
        if item == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2D(in_channels, item, kernel_size=3, padding=1))
        layers.extend([nn.BatchNorm2D(item), nn.ReLU()] if batch_norm else [nn.ReLU()])
        in_channels = item
    return nn.Sequential(*layers)


def _vgg(depth: int, pretrained: bool, batch_norm: bool, **kwargs: Any) -> VGG:
    arch = f"vgg{depth}" + ("_bn" if batch_norm else "")
    if pretrained and arch not in MODEL_URLS:
        raise ValueError(f"Paddle publishes no pretrained weights for {arch}: pass pretrained=False")
    model = VGG(make_layers(CONFIGS[depth], batch_norm), **kwargs)
    return load_pretrained(model, arch, *MODEL_URLS[arch]) if pretrained else model


def vgg11(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-11 (configuration A)."""
    return _vgg(11, pretrained, batch_norm, **kwargs)


def vgg13(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-13 (configuration B)."""
    return _vgg(13, pretrained, batch_norm, **kwargs)


def vgg16(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-16 (configuration D)."""
    return _vgg(16, pretrained, batch_norm, **kwargs)


def vgg19(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-19 (configuration E)."""
    return _vgg(19, pretrained, batch_norm, **kwargs)
