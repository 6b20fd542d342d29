"""The transform cases recorded from Paddle 3.3.1 (tools/record_paddle_vision.py) and replayed on
minidp (tests/test_transforms.py): one table, so both sides run the very same calls.

Each case is ``(id, image, seed, build)``: ``image`` names an input of ``images()``, ``seed``
(or None) seeds Python's ``random`` and NumPy's global generator before the call, and ``build(T)``
returns the callable from the transforms package ``T`` (Paddle's or minidp's). NumPy images are
recorded only for transforms that Paddle computes without OpenCV (not installed beside Paddle).
"""

from __future__ import annotations

import numpy as np


def images() -> dict:
    """The inputs: NumPy arrays; names ending in ``_pil`` are turned into PIL images by the caller."""
    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(9, 7), dtype=np.uint8)
    return {"rgb": rgb, "rgb_pil": rgb, "grey_pil": grey, "float": rgb.astype(np.float32) / 255}


def _f(name, *args, **kwargs):
    return lambda T: lambda img: getattr(T.functional, name)(img, *args, **kwargs)


def _c(name, *args, **kwargs):
    return lambda T: getattr(T, name)(*args, **kwargs)


CASES = [
    ("to_tensor_rgb", "rgb", None, _c("ToTensor")),
    ("to_tensor_hwc", "rgb", None, _c("ToTensor", data_format="HWC")),
    ("to_tensor_float", "float", None, _c("ToTensor")),
    ("to_tensor_pil", "rgb_pil", None, _c("ToTensor")),
    ("to_tensor_grey_pil", "grey_pil", None, _c("ToTensor")),
    ("normalize_hwc", "rgb", None, _c("Normalize", [120, 110, 100], [50, 60, 70], data_format="HWC")),
    ("normalize_to_rgb", "rgb", None, _c("Normalize", [120, 110, 100], [50, 60, 70], "HWC", True)),
    ("normalize_pil", "rgb_pil", None, _c("Normalize", 127.5, 127.5, data_format="HWC")),
    ("center_crop", "rgb", None, _c("CenterCrop", (5, 7))),
    ("center_crop_pil", "rgb_pil", None, _c("CenterCrop", 5)),
    ("crop", "rgb", None, _f("crop", 2, 3, 4, 6)),
    ("crop_pil", "rgb_pil", None, _f("crop", 2, 3, 4, 6)),
    ("random_crop", "rgb", 3, _c("RandomCrop", 6)),
    ("random_crop_pil_pad", "rgb_pil", 4, _c("RandomCrop", (14, 18), padding=2, fill=9)),
    ("random_crop_pil_if_needed", "grey_pil", 5, _c("RandomCrop", 10, pad_if_needed=True, padding_mode="edge")),
    ("transpose", "rgb", None, _c("Transpose")),
    ("transpose_pil", "grey_pil", None, _c("Transpose")),
    ("resize_pil", "rgb_pil", None, _c("Resize", (20, 24))),
    ("resize_short_pil", "rgb_pil", None, _c("Resize", 6)),
    ("resize_nearest_pil", "grey_pil", None, _c("Resize", (5, 4), "nearest")),
    ("resize_bicubic_pil", "rgb_pil", None, _c("Resize", 20, "bicubic")),
    ("random_resized_crop_pil", "rgb_pil", 11, _c("RandomResizedCrop", 8)),
    ("random_resized_crop_fallback_pil", "rgb_pil", 12, _c("RandomResizedCrop", (6, 5), scale=(2.0, 3.0))),
    ("hflip_pil", "rgb_pil", None, _f("hflip")),
    ("vflip_pil", "grey_pil", None, _f("vflip")),
    ("random_hflip_pil", "rgb_pil", 1, _c("RandomHorizontalFlip", 0.5)),
    ("random_vflip_pil", "rgb_pil", 2, _c("RandomVerticalFlip", 0.7)),
    ("pad_pil", "rgb_pil", None, _c("Pad", 2, fill=(10, 20, 30))),
    ("pad_reflect_pil", "rgb_pil", None, _c("Pad", [1, 2, 3, 4], padding_mode="reflect")),
    ("pad_symmetric_pil", "grey_pil", None, _c("Pad", (2, 1), padding_mode="symmetric")),
    ("brightness_pil", "rgb_pil", None, _f("adjust_brightness", 1.4)),
    ("contrast_pil", "rgb_pil", None, _f("adjust_contrast", 0.6)),
    ("saturation_pil", "rgb_pil", None, _f("adjust_saturation", 1.7)),
    ("hue_pil", "rgb_pil", None, _f("adjust_hue", 0.2)),
    ("hue_grey_pil", "grey_pil", None, _f("adjust_hue", -0.3)),
    ("brightness_transform_pil", "rgb_pil", 21, _c("BrightnessTransform", 0.5)),
    ("contrast_transform_pil", "rgb_pil", 22, _c("ContrastTransform", 0.5)),
    ("saturation_transform_pil", "rgb_pil", 23, _c("SaturationTransform", 0.5)),
    ("hue_transform_pil", "rgb_pil", 24, _c("HueTransform", 0.4)),
    ("color_jitter_pil", "rgb_pil", 25, _c("ColorJitter", 0.4, 0.4, 0.4, 0.1)),
    ("rotate_pil", "rgb_pil", None, _f("rotate", 30)),
    ("rotate_expand_pil", "rgb_pil", None, _f("rotate", 45, "bilinear", True, None, 7)),
    ("random_rotation_pil", "rgb_pil", 31, _c("RandomRotation", 90, center=(2, 3))),
    ("grayscale_pil", "rgb_pil", None, _c("Grayscale")),
    ("grayscale3_pil", "rgb_pil", None, _c("Grayscale", 3)),
]


def as_array(result) -> np.ndarray:
    """A transform's result as a NumPy array (PIL image, array or either framework's Tensor)."""
    return result.numpy() if hasattr(result, "numpy") else np.asarray(result)
