"""Paddle's ``paddle.vision.transforms.functional``: each image function for PIL images (through
Pillow, as Paddle calls it, so results are Paddle's to the pixel) and for NumPy ``HWC`` arrays
(through :mod:`.functional_numpy`); ``to_tensor`` and ``normalize`` also take minidp Tensors.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy

from ...core.tensor import Tensor
from ...ops.creation import to_tensor as _tensor
from .. import image as _image
from . import functional_numpy as _np

__all__ = [
    "to_tensor",
    "resize",
    "pad",
    "crop",
    "center_crop",
    "hflip",
    "vflip",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_saturation",
    "adjust_hue",
    "rotate",
    "to_grayscale",
    "normalize",
]

_PIL_MODES = ("nearest", "bilinear", "bicubic", "box", "lanczos", "hamming")
_PADDING_MODES = ("constant", "edge", "reflect", "symmetric")


def _kind(img: Any, name: str = "img") -> str:
    if _image.is_pil_image(img):
        return "pil"
    if _image.is_numpy_image(img):
        return "numpy"
    raise TypeError(
        f"{name} should be a PIL image or a NumPy array of shape HW or HWC, got "
        f"{type(img).__name__}{getattr(img, 'shape', '')}"
    )


def _pil_resample(interpolation: str) -> Any:
    if interpolation not in _PIL_MODES:
        raise ValueError(f"interpolation should be one of {_PIL_MODES}, got {interpolation!r}")
    return getattr(_image.pillow().Resampling, interpolation.upper())


def _check_format(data_format: str) -> None:
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"data_format should be 'CHW' or 'HWC', got {data_format!r}")


def to_tensor(pic: Any, data_format: str = "CHW") -> Tensor:
    """An image as a Tensor, ``CHW`` (or ``HWC``); uint8 pixels become float32 in [0, 1], other
    dtypes are kept. A Tensor is taken as ``CHW`` already."""
    _check_format(data_format)
    if isinstance(pic, Tensor):
        return pic if data_format == "CHW" else pic.transpose([1, 2, 0])
    if _kind(pic, "pic") == "pil":
        scale = {"1": 255, "I": None, "I;16": None, "F": None}
        dtype = {"I": numpy.int32, "I;16": numpy.int32, "F": numpy.float32, "1": numpy.uint8}.get(pic.mode)
        array = numpy.asarray(pic, dtype)
        if scale.get(pic.mode):
            array = array * numpy.uint8(scale[pic.mode])
        channels = 3 if pic.mode == "YCbCr" else 1 if pic.mode == "I;16" else len(pic.mode)
        pic = array.reshape(pic.size[1], pic.size[0], channels)
    array = pic[:, :, None] if pic.ndim == 2 else pic
    if data_format == "CHW":
        array = array.transpose(2, 0, 1)
    if array.dtype == numpy.uint8:
        array = array.astype(numpy.float32) / numpy.float32(255)
    return _tensor(numpy.ascontiguousarray(array))


def _target_size(width: int, height: int, size: Any) -> tuple | None:
    """(height, width) to resize to; None where an int ``size`` already matches the short side."""
    if isinstance(size, int):
        if (width <= height and width == size) or (height <= width and height == size):
            return None
        if width < height:
            return int(size * height / width), size
        return size, int(size * width / height)
    if isinstance(size, Sequence) and len(size) == 2:
        return tuple(size)
    raise TypeError(f"size should be an int (the short side) or a (height, width) pair, got {size!r}")


def resize(img: Any, size: Any, interpolation: str = "bilinear") -> Any:
    """``img`` resized to ``size``: a (height, width) pair, or an int giving the short side's length
    (the long side keeps the aspect ratio, rounded down)."""
    kind = _kind(img)
    target = _target_size(*_image.image_size(img), size)
    if target is None:
        return img
    if kind == "pil":
        return img.resize(target[::-1], _pil_resample(interpolation))
    return _np.resize(img, target, interpolation)


def _padding(padding: Any) -> tuple:
    """(left, top, right, bottom) from an int, a (left/right, top/bottom) pair or four values."""
    if isinstance(padding, numbers.Number):
        return (int(padding),) * 4
    if isinstance(padding, (list, tuple)) and len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        return tuple(padding)
    raise ValueError(f"padding should be an int or a sequence of 2 or 4 ints, got {padding!r}")


def pad(img: Any, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> Any:
    """``img`` with borders: ``padding`` as int, (left/right, top/bottom) or (left, top, right,
    bottom); ``padding_mode`` 'constant' (with ``fill``), 'edge', 'reflect' or 'symmetric'."""
    kind = _kind(img)
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode should be one of {_PADDING_MODES}, got {padding_mode!r}")
    left, top, right, bottom = _padding(padding)
    if kind == "numpy":
        return _np.pad(img, left, top, right, bottom, fill, padding_mode)
    if padding_mode == "constant":
        from PIL import ImageOps

        fill = tuple(fill) if isinstance(fill, list) else fill
        return ImageOps.expand(img, border=(left, top, right, bottom), fill=fill)
    palette = img.getpalette() if img.mode == "P" else None
    padded = _image.pillow().fromarray(_np.pad(numpy.asarray(img), left, top, right, bottom, fill, padding_mode))
    if palette is not None:
        padded.putpalette(palette)
    return padded


def crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """The ``height`` x ``width`` region of ``img`` whose top-left pixel is (``top``, ``left``)."""
    if _kind(img) == "pil":
        return img.crop((left, top, left + width, top + height))
    return img[top : top + height, left : left + width]


def center_crop(img: Any, output_size: Any) -> Any:
    """The middle region of ``img`` of ``output_size`` (an int for a square, or (height, width))."""
    _kind(img)
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    width, height = _image.image_size(img)
    top, left = int(round((height - output_size[0]) / 2.0)), int(round((width - output_size[1]) / 2.0))
    return crop(img, top, left, output_size[0], output_size[1])


def hflip(img: Any) -> Any:
    """``img`` mirrored left to right."""
    if _kind(img) == "pil":
        return img.transpose(_image.pillow().Transpose.FLIP_LEFT_RIGHT)
    return img[:, ::-1].copy()


def vflip(img: Any) -> Any:
    """``img`` mirrored top to bottom."""
    if _kind(img) == "pil":
        return img.transpose(_image.pillow().Transpose.FLIP_TOP_BOTTOM)
    return img[::-1].copy()


def _enhance(img: Any, factor: float, name: str, pil_enhancer: str, towards: Any) -> Any:
    if not isinstance(factor, numbers.Number) or factor < 0:
        raise ValueError(f"{name} should be a non-negative number, got {factor!r}")
    if _kind(img) == "pil":
        from PIL import ImageEnhance

        return getattr(ImageEnhance, pil_enhancer)(img).enhance(factor)
    return _np.blend(img, towards(img), factor)


def adjust_brightness(img: Any, brightness_factor: float) -> Any:
    """``img`` scaled by ``brightness_factor``: 0 is black, 1 the image itself."""
    return _enhance(img, brightness_factor, "brightness_factor", "Brightness", lambda _: 0.0)


def adjust_contrast(img: Any, contrast_factor: float) -> Any:
    """``img`` pushed away from (or towards) its mean grey: 0 is a flat grey image, 1 the image itself."""

    def mean_grey(array: numpy.ndarray) -> float:
        return float(numpy.round(_np.grey(numpy.round(array)).mean())) if array.ndim == 3 else float(array.mean())

    return _enhance(img, contrast_factor, "contrast_factor", "Contrast", mean_grey)


def adjust_saturation(img: Any, saturation_factor: float) -> Any:
    """``img`` blended with its grey version: 0 is grey, 1 the image itself, 2 twice as saturated."""
    return _enhance(img, saturation_factor, "saturation_factor", "Color", lambda a: _np.grey(a)[:, :, None])


def adjust_hue(img: Any, hue_factor: float) -> Any:
    """``img`` with its hue turned by ``hue_factor`` (in [-0.5, 0.5]) of a full turn of the colour
    wheel; grey-level images come back unchanged."""
    if not isinstance(hue_factor, numbers.Number) or not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor should be a number in [-0.5, 0.5], got {hue_factor!r}")
    if _kind(img) == "numpy":
        return img if img.ndim == 2 or img.shape[2] == 1 else _np.adjust_hue(img, hue_factor)
    if img.mode in ("L", "1", "I", "F"):
        return img
    Image = _image.pillow()
    h, s, v = img.convert("HSV").split()
    shifted = (numpy.asarray(h, numpy.int16) + int(hue_factor * 255)) % 256
    return Image.merge("HSV", (Image.fromarray(shifted.astype(numpy.uint8), "L"), s, v)).convert(img.mode)


def rotate(
    img: Any, angle: float, interpolation: str = "nearest", expand: bool = False, center: Any = None, fill: Any = 0
) -> Any:
    """``img`` turned ``angle`` degrees counter-clockwise about ``center`` (default its middle);
    ``expand`` grows the output to hold the whole turned image; uncovered pixels take ``fill``."""
    if _kind(img) == "numpy":
        return _np.rotate(img, angle, interpolation, expand, center, fill)
    fill = (fill,) * 3 if isinstance(fill, int) else fill
    return img.rotate(angle, _pil_resample(interpolation), expand, center, fillcolor=fill)


def to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """``img`` in grey levels, with 1 channel or 3 equal ones."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be 1 or 3, got {num_output_channels!r}")
    if _kind(img) == "numpy":
        return _np.to_grayscale(img, num_output_channels)
    grey = img.convert("L")
    if num_output_channels == 1:
        return grey
    array = numpy.asarray(grey)
    return _image.pillow().fromarray(numpy.dstack([array] * 3), "RGB")


def normalize(
    img: Any, mean: Sequence[float], std: Sequence[float], data_format: str = "CHW", to_rgb: bool = False
) -> Any:
    """``(img - mean) / std`` per channel. A Tensor gives a Tensor; a PIL image or array gives a
    float32 array in its layout (``data_format`` says where the channels are)."""
    _check_format(data_format)
    if isinstance(img, Tensor):
        shape = [-1, 1, 1] if data_format == "CHW" else [1, 1, -1]
        mean_t = _tensor(numpy.asarray(mean, numpy.float32).reshape(shape)).astype(img.dtype)
        std_t = _tensor(numpy.asarray(std, numpy.float32).reshape(shape)).astype(img.dtype)
        return (img - mean_t) / std_t
    if _kind(img) == "pil":
        img = numpy.asarray(img, numpy.float32)
    return _np.normalize(img, mean, std, data_format, to_rgb)
