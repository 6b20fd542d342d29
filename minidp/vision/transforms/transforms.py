"""Paddle's transform classes: callables that apply one image function, some with random
parameters.

The random ones draw from Python's ``random`` module and NumPy's global generator with the same
calls, in the same order, as Paddle's, so ``random.seed(s); numpy.random.seed(s)`` reproduces
Paddle's crops, flips and jitters exactly (``minidp.seed`` does not reach them, as ``paddle.seed``
does not).

``keys`` names what each element of a tuple input is: ``"image"`` is transformed, any element
without an ``_apply_<key>`` method is refused at construction, and elements beyond ``keys`` pass
through unchanged, as in Paddle.
"""

from __future__ import annotations

import math
import numbers
import random
from typing import Any, Callable, Sequence

import numpy

from .. import image as _image
from . import functional as F

__all__ = [
    "BaseTransform",
    "Compose",
    "ToTensor",
    "Resize",
    "RandomResizedCrop",
    "CenterCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "Normalize",
    "Transpose",
    "BrightnessTransform",
    "ContrastTransform",
    "SaturationTransform",
    "HueTransform",
    "ColorJitter",
    "RandomCrop",
    "Pad",
    "RandomRotation",
    "Grayscale",
]


class Compose:
    """Applies ``transforms`` one after the other."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = transforms

    def __call__(self, data: Any) -> Any:
        for transform in self.transforms:
            data = transform(data)
        return data

    def __repr__(self) -> str:
        return "Compose(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class BaseTransform:
    """A transform of an image, or of a tuple whose elements ``keys`` names ("image", ...).

    Subclasses define ``_apply_image`` (and ``_apply_<key>`` for other kinds of input); one call
    first runs ``_get_params(inputs)`` (stored in ``self.params``) so that every element of a tuple
    sees the same random draw."""

    def __init__(self, keys: Sequence[str] | None = None) -> None:
        if keys is None:
            keys = ("image",)
        elif isinstance(keys, str) or not isinstance(keys, Sequence):
            raise ValueError(f"keys should be a sequence of names such as ('image',), got {keys!r}")
        for key in keys:
            if getattr(self, f"_apply_{key}", None) is None:
                raise NotImplementedError(f"{type(self).__name__} cannot transform {key!r} (no _apply_{key})")
        self.keys = keys
        self.params = None

    def _get_params(self, inputs: tuple) -> Any:
        return None

    def __call__(self, inputs: Any) -> Any:
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        self.params = self._get_params(inputs)
        outputs = [getattr(self, f"_apply_{key}")(item) for key, item in zip(self.keys, inputs)]
        outputs.extend(inputs[len(self.keys) :])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _apply_image(self, image: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not transform images")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ToTensor(BaseTransform):
    """An image as a float32 Tensor in [0, 1] (uint8 input), ``CHW`` unless ``data_format='HWC'``."""

    def __init__(self, data_format: str = "CHW", keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        F._check_format(data_format)
        self.data_format = data_format

    def _apply_image(self, img: Any) -> Any:
        return F.to_tensor(img, self.data_format)


class Resize(BaseTransform):
    """Resizes to ``size``: (height, width), or an int for the short side (aspect ratio kept)."""

    def __init__(self, size: Any, interpolation: str = "bilinear", keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        if not isinstance(size, int) and not (isinstance(size, Sequence) and len(size) == 2):
            raise TypeError(f"size should be an int or a (height, width) pair, got {size!r}")
        self.size, self.interpolation = size, interpolation

    def _apply_image(self, img: Any) -> Any:
        return F.resize(img, self.size, self.interpolation)


def _pair(size: Any, name: str) -> tuple:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 2:
        return tuple(size)
    raise TypeError(f"{name} should be an int or a (height, width) pair, got {size!r}")


class RandomResizedCrop(BaseTransform):
    """Crops a random region (area a ``scale`` fraction of the image, aspect ratio within
    ``ratio``, 10 tries before falling back to a central crop), then resizes it to ``size``."""

    def __init__(
        self,
        size: Any,
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4, 4.0 / 3),
        interpolation: str = "bilinear",
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(keys)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"scale and ratio should each be (min, max), got scale={scale}, ratio={ratio}")
        self.size, self.scale, self.ratio, self.interpolation = _pair(size, "size"), scale, ratio, interpolation

    def _region(self, img: Any, attempts: int = 10) -> tuple:
        width, height = _image.image_size(img)
        area = height * width
        for _ in range(attempts):
            target_area = numpy.random.uniform(*self.scale) * area
            aspect_ratio = math.exp(numpy.random.uniform(*(math.log(r) for r in self.ratio)))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return random.randint(0, height - h), random.randint(0, width - w), h, w
        w, h = width, height
        if width / height < min(self.ratio):
            h = int(round(w / min(self.ratio)))
        elif width / height > max(self.ratio):
            w = int(round(h * max(self.ratio)))
        return (height - h) // 2, (width - w) // 2, h, w

    def _apply_image(self, img: Any) -> Any:
        return F.resize(F.crop(img, *self._region(img)), self.size, self.interpolation)


class CenterCrop(BaseTransform):
    """Crops the middle ``size`` region (an int for a square)."""

    def __init__(self, size: Any, keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        self.size = _pair(size, "size")

    def _apply_image(self, img: Any) -> Any:
        return F.center_crop(img, self.size)


class _RandomFlip(BaseTransform):
    flip: Callable

    def __init__(self, prob: float = 0.5, keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError(f"prob should be a probability in [0, 1], got {prob!r}")
        self.prob = prob

    def _apply_image(self, img: Any) -> Any:
        return type(self).flip(img) if random.random() < self.prob else img


class RandomHorizontalFlip(_RandomFlip):
    """Mirrors the image left to right with probability ``prob``."""

    flip = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    """Mirrors the image top to bottom with probability ``prob``."""

    flip = staticmethod(F.vflip)


class Normalize(BaseTransform):
    """``(img - mean) / std`` per channel; a single number stands for all three channels."""

    def __init__(
        self,
        mean: Any = 0.0,
        std: Any = 1.0,
        data_format: str = "CHW",
        to_rgb: bool = False,
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(keys)
        F._check_format(data_format)
        self.mean = [mean] * 3 if isinstance(mean, numbers.Number) else mean
        self.std = [std] * 3 if isinstance(std, numbers.Number) else std
        self.data_format, self.to_rgb = data_format, to_rgb

    def _apply_image(self, img: Any) -> Any:
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Transpose(BaseTransform):
    """Reorders the axes (``HWC`` to ``CHW`` by default); a PIL image becomes an array first."""

    def __init__(self, order: Sequence[int] = (2, 0, 1), keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        self.order = order

    def _apply_image(self, img: Any) -> Any:
        if not hasattr(img, "transpose") or _image.is_pil_image(img):
            img = numpy.asarray(img)
        if isinstance(img, numpy.ndarray) and img.ndim == 2:
            img = img[:, :, None]
        return img.transpose(self.order)


def _factor_range(value: Any, name: str, center: float = 1, bound: tuple = (0, math.inf), clip: bool = True):
    """The interval a jitter factor is drawn from, or None where it is always ``center``."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"{name} should be non-negative when a single number, got {value}")
        low, high = center - value, center + value
        value = [max(low, 0) if clip else low, high]
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} should be an increasing pair within {bound}, got {value}")
    else:
        raise TypeError(f"{name} should be a number or a (min, max) pair, got {value!r}")
    return None if value[0] == value[1] == center else value


class _Jitter(BaseTransform):
    adjust: Callable
    name: str

    def __init__(self, value: Any, keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        self.value = self._range(value)

    def _range(self, value: Any) -> Any:
        return _factor_range(value, self.name)

    def _apply_image(self, img: Any) -> Any:
        if self.value is None:
            return img
        return type(self).adjust(img, random.uniform(self.value[0], self.value[1]))


class BrightnessTransform(_Jitter):
    """Scales brightness by a factor drawn from [max(0, 1 - value), 1 + value]."""

    adjust, name = staticmethod(F.adjust_brightness), "brightness"


class ContrastTransform(_Jitter):
    """Scales contrast by a factor drawn from [max(0, 1 - value), 1 + value]."""

    adjust, name = staticmethod(F.adjust_contrast), "contrast"


class SaturationTransform(_Jitter):
    """Scales saturation by a factor drawn from [max(0, 1 - value), 1 + value]."""

    adjust, name = staticmethod(F.adjust_saturation), "saturation"


class HueTransform(_Jitter):
    """Turns the hue by a fraction drawn from [-value, value] (value at most 0.5)."""

    adjust, name = staticmethod(F.adjust_hue), "hue"

    def _range(self, value: Any) -> Any:
        return _factor_range(value, "hue", center=0, bound=(-0.5, 0.5), clip=False)


class ColorJitter(BaseTransform):
    """Brightness, contrast, saturation and hue jitters (those not 0), applied in a random order."""

    def __init__(
        self,
        brightness: Any = 0,
        contrast: Any = 0,
        saturation: Any = 0,
        hue: Any = 0,
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(keys)
        self.jitters = [
            kind(value, self.keys)
            for kind, value in (
                (BrightnessTransform, brightness),
                (ContrastTransform, contrast),
                (SaturationTransform, saturation),
                (HueTransform, hue),
            )
        ]

    def _apply_image(self, img: Any) -> Any:
        order = list(self.jitters)
        random.shuffle(order)
        return Compose(order)(img)


class RandomCrop(BaseTransform):
    """Crops a random ``size`` region, after optional ``padding`` (and padding up to ``size`` where
    ``pad_if_needed`` and the image is smaller)."""

    def __init__(
        self,
        size: Any,
        padding: Any = None,
        pad_if_needed: bool = False,
        fill: Any = 0,
        padding_mode: str = "constant",
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(keys)
        self.size = _pair(size, "size")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def _apply_image(self, img: Any) -> Any:
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        th, tw = self.size
        w, h = _image.image_size(img)
        if self.pad_if_needed and w < tw:
            img = F.pad(img, (tw - w, 0), self.fill, self.padding_mode)
        w, h = _image.image_size(img)
        if self.pad_if_needed and h < th:
            img = F.pad(img, (0, th - h), self.fill, self.padding_mode)
        w, h = _image.image_size(img)
        if h < th or w < tw:
            raise ValueError(
                f"RandomCrop: the image ({h}x{w}) is smaller than size {self.size}; pass pad_if_needed=True"
            )
        if (w, h) == (tw, th):
            return img
        return F.crop(img, random.randint(0, h - th), random.randint(0, w - tw), th, tw)


class Pad(BaseTransform):
    """Pads every side (see ``functional.pad`` for ``padding``, ``fill`` and ``padding_mode``)."""

    def __init__(
        self, padding: Any, fill: Any = 0, padding_mode: str = "constant", keys: Sequence[str] | None = None
    ) -> None:
        super().__init__(keys)
        F._padding(padding)
        if padding_mode not in F._PADDING_MODES:
            raise ValueError(f"padding_mode should be one of {F._PADDING_MODES}, got {padding_mode!r}")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img: Any) -> Any:
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomRotation(BaseTransform):
    """Rotates by an angle drawn from ``degrees`` (a number d means [-d, d])."""

    def __init__(
        self,
        degrees: Any,
        interpolation: str = "nearest",
        expand: bool = False,
        center: Any = None,
        fill: Any = 0,
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(keys)
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError(f"degrees should be non-negative when a single number, got {degrees}")
            degrees = (-degrees, degrees)
        elif not isinstance(degrees, Sequence) or len(degrees) != 2:
            raise ValueError(f"degrees should be a number or a (min, max) pair, got {degrees!r}")
        self.degrees, self.interpolation, self.expand, self.center, self.fill = (
            degrees,
            interpolation,
            expand,
            center,
            fill,
        )

    def _apply_image(self, img: Any) -> Any:
        angle = random.uniform(self.degrees[0], self.degrees[1])
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class Grayscale(BaseTransform):
    """Converts to grey levels, with 1 channel or 3 equal ones."""

    def __init__(self, num_output_channels: int = 1, keys: Sequence[str] | None = None) -> None:
        super().__init__(keys)
        if num_output_channels not in (1, 3):
            raise ValueError(f"num_output_channels should be 1 or 3, got {num_output_channels!r}")
        self.num_output_channels = num_output_channels

    def _apply_image(self, img: Any) -> Any:
        return F.to_grayscale(img, self.num_output_channels)
