"""ResNet 18/34/50/101/152: residual blocks (basic for 18/34, bottleneck above) in four stages."""

from __future__ import annotations

from typing import Any

from ... import nn
from ...core.tensor import Tensor
from .blocks import classify, load_pretrained

__all__ = ["ResNet", "BasicBlock", "BottleneckBlock", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]

_URL = "https://paddle-hapi.bj.bcebos.com/models/"
MODEL_URLS = {
    "resnet18": (_URL + "resnet18.pdparams", "cf548f46534aa3560945be4b95cd11c4"),
    "resnet34": (_URL + "resnet34.pdparams", "8d2275cf8706028345f78ac0e1d31969"),
    "resnet50": (_URL + "resnet50.pdparams", "ca6f485ee1ab0492d38f323885b0ad80"),
    "resnet101": (_URL + "resnet101.pdparams", "02f35f034ca3858e1e54d4036443c92d"),
    "resnet152": (_URL + "resnet152.pdparams", "7ad16a2f1e7333859ff986138630fd7a"),
}
STAGES = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class BasicBlock(nn.Layer):
    """Two 3x3 convolutions with batch norm, added to the (downsampled) input."""

    expansion = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Layer | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Any = None,
    ) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        if dilation > 1:
            raise ValueError("BasicBlock supports dilation 1 only (as in Paddle)")
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm_layer(planes)
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class BottleneckBlock(nn.Layer):
    """1x1 reduce, 3x3, 1x1 expand (x4), each with batch norm, added to the (downsampled) input."""

    expansion = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Layer | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Any = None,
    ) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2D(inplanes, width, 1, bias_attr=False)
        self.bn1 = norm_layer(width)
        self.conv2 = nn.Conv2D(
            width, width, 3, padding=dilation, stride=stride, groups=groups, dilation=dilation, bias_attr=False
        )
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2D(width, planes * self.expansion, 1, bias_attr=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Layer):
    """ResNet of ``depth`` (18, 34, 50, 101 or 152) built from ``block``; ``width`` and ``groups``
    widen or group the bottleneck's 3x3 convolution."""

    def __init__(
        self,
        block: type,
        depth: int = 50,
        width: int = 64,
        num_classes: int = 1000,
        with_pool: bool = True,
        groups: int = 1,
    ) -> None:
        super().__init__()
        if depth not in STAGES:
            raise ValueError(f"depth should be one of {sorted(STAGES)}, got {depth!r}")
        self.groups, self.base_width, self.num_classes, self.with_pool = groups, width, num_classes, with_pool
        self.inplanes, self.dilation = 64, 1
        self.conv1 = nn.Conv2D(3, 64, kernel_size=7, stride=2, padding=3, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        for index, (planes, blocks) in enumerate(zip((64, 128, 256, 512), STAGES[depth])):
            setattr(self, f"layer{index + 1}", self._make_layer(block, planes, blocks, stride=1 if index == 0 else 2))
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block: type, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride, bias_attr=False),
                nn.BatchNorm2D(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, self.dilation)]
        self.inplanes = planes * block.expansion
        layers += [
            block(self.inplanes, planes, groups=self.groups, base_width=self.base_width) for _ in range(1, blocks)
        ]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return classify(self, x, "avgpool", "fc")


def _resnet(depth: int, pretrained: bool, **kwargs: Any) -> ResNet:
    model = ResNet(BasicBlock if depth < 50 else BottleneckBlock, depth, **kwargs)
    if pretrained:
        load_pretrained(model, f"resnet{depth}", *MODEL_URLS[f"resnet{depth}"])
    return model


def resnet18(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-18 (basic blocks 2-2-2-2)."""
    return _resnet(18, pretrained, **kwargs)


def resnet34(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-34 (basic blocks 3-4-6-3)."""
    return _resnet(34, pretrained, **kwargs)


def resnet50(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-50 (bottleneck blocks 3-4-6-3)."""
    return _resnet(50, pretrained, **kwargs)


def resnet101(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-101 (bottleneck blocks 3-4-23-3)."""
    return _resnet(101, pretrained, **kwargs)


def resnet152(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-152 (bottleneck blocks 3-8-36-3)."""
    return _resnet(152, pretrained, **kwargs)
