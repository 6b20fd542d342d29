"""LeNet: two convolutions and three fully connected layers for 28x28 grey digits."""

from __future__ import annotations

from ... import nn
from ...core.tensor import Tensor
from ...ops.shape import flatten

__all__ = ["LeNet"]


class LeNet(nn.Layer):
    """LeNet-5 as Paddle builds it (1x28x28 input); ``num_classes <= 0`` keeps only the features."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
        )
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, inputs: Tensor) -> Tensor:
        x = self.features(inputs)
        return self.fc(flatten(x, 1)) if self.num_classes > 0 else x
