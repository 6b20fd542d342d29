"""The models whose state_dict layout and forward pass are recorded from Paddle 3.3.1
(tools/record_paddle_vision.py) and checked on minidp (tests/test_models.py)."""

from __future__ import annotations

import numpy as np

# (constructor in paddle.vision.models / minidp.vision.models, keyword arguments); one VGG keeps
# its 25088x4096 classifier, which is slow to initialise, the others leave it out.
MODELS = [
    ("LeNet", {}),
    ("vgg11", {}),
    ("vgg13", {"batch_norm": True, "num_classes": 0}),
    ("vgg16", {"num_classes": 0}),
    ("vgg19", {"batch_norm": True, "with_pool": False, "num_classes": 0}),
    ("resnet18", {}),
    ("resnet34", {"num_classes": 7}),
    ("resnet50", {}),
    ("resnet101", {"with_pool": False, "num_classes": 0}),
    ("resnet152", {}),
    ("MobileNetV1", {}),
    ("MobileNetV1", {"scale": 0.5, "num_classes": 5}),
    ("MobileNetV2", {}),
    ("MobileNetV2", {"scale": 0.75}),
    ("MobileNetV3Small", {}),
    ("MobileNetV3Large", {"scale": 0.5}),
]

# (case id, constructor, keyword arguments, input shape) for the recorded forward passes.
FORWARD_CASES = [
    ("lenet", "LeNet", {}, (2, 1, 28, 28)),
    ("resnet18", "resnet18", {"num_classes": 10}, (1, 3, 32, 32)),
    ("mobilenet_v3_small", "MobileNetV3Small", {"scale": 0.5, "num_classes": 4}, (1, 3, 32, 32)),
]


def forward_weights(state: dict) -> dict:
    """Weights made up from each entry's name and shape alone, so both frameworks load the same
    ones without storing them: small normals, positive variances for batch norm."""
    weights = {}
    for index, (name, value) in enumerate(state.items()):
        shape = tuple(value.shape)
        rng = np.random.default_rng(index)
        array = rng.standard_normal(shape) * (1.0 / np.sqrt(max(1, int(np.prod(shape[1:])) if len(shape) > 1 else 4)))
        if name.endswith("_variance"):
            array = np.abs(array) + 0.5
        weights[name] = array.astype(np.float32)
    return weights
