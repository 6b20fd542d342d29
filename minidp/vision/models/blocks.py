"""Pieces the vision models share: the conv-norm-activation block, channel rounding, the common
head (pool, flatten, classifier) and ``pretrained=True`` weights."""

from __future__ import annotations

from typing import Any, Callable

from ... import nn
from ...ops.shape import flatten
from ...serialization import load
from ...utils.download import get_weights_path_from_url


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``value`` rounded to a multiple of ``divisor`` (at least ``min_value``), never below 90% of it."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class ConvNormActivation(nn.Sequential):
    """Conv2D, then ``norm_layer`` and ``activation_layer`` where given; the convolution has a bias
    only without a norm (unless ``bias`` says), and padding keeps the size at stride 1."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        stride: int = 1,
        padding: Any = None,
        groups: int = 1,
        norm_layer: Callable | None = nn.BatchNorm2D,
        activation_layer: Callable | None = nn.ReLU,
        dilation: int = 1,
        bias: bool | None = None,
    ) -> None:
        padding = (kernel_size - 1) // 2 * dilation if padding is None else padding
        bias = norm_layer is None if bias is None else bias
        layers = [
            nn.Conv2D(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation,
                groups,
                bias_attr=None if bias else False,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)


def classify(model: nn.Layer, x: Any, pool: str, head: str) -> Any:
    """The end every classifier here shares: the pool layer named ``pool`` where ``with_pool``,
    then, where ``num_classes > 0``, flatten and the layer named ``head``."""
    if model.with_pool:
        x = getattr(model, pool)(x)
    if model.num_classes > 0:
        x = getattr(model, head)(flatten(x, 1))
    return x


def load_pretrained(model: nn.Layer, arch: str, url: str, md5: str) -> nn.Layer:
    """Loads Paddle's published weights for ``arch`` into ``model``: the file Paddle keeps in
    ``~/.cache/paddle/hapi/weights``, downloaded there first if missing (MD5-checked either way)."""
    model.set_state_dict(load(get_weights_path_from_url(url, md5)))
    return model
