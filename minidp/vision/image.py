"""What kind of image a vision function was handed, and Pillow, imported only when needed.

Pillow is optional: NumPy ``HWC`` arrays need nothing else. ``pillow()`` is called where a PIL
image is built or changed, so a missing Pillow is reported with the way to install it, not as a
bare ImportError at ``import minidp``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy

__all__ = ["get_image_backend", "set_image_backend", "image_load"]

_BACKENDS = ("pil", "cv2", "tensor")
_backend = "pil"


def pillow() -> ModuleType:
    """The ``PIL.Image`` module; a clear ImportError where Pillow is not installed."""
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError(
            "this needs Pillow for PIL images: install it (pip install Pillow), or pass the image as a "
            "NumPy HWC array instead"
        ) from error
    return Image


def is_pil_image(img: Any) -> bool:
    """True for a PIL image; never imports Pillow (an image can only exist if it was imported)."""
    image_module = sys.modules.get("PIL.Image")
    return image_module is not None and isinstance(img, image_module.Image)


def is_numpy_image(img: Any) -> bool:
    """True for a NumPy array laid out as an image: ``HW`` or ``HWC``."""
    return isinstance(img, numpy.ndarray) and img.ndim in (2, 3)


def image_size(img: Any) -> tuple:
    """``(width, height)`` of a PIL image or a NumPy ``HWC`` array, as Paddle's transforms use it."""
    if is_pil_image(img):
        return img.size
    if is_numpy_image(img):
        return img.shape[1], img.shape[0]
    raise TypeError(f"img should be a PIL image or a NumPy HW/HWC array, got {type(img).__name__}")


def set_image_backend(backend: str) -> None:
    """Choose how ``image_load`` and the image datasets read files: ``'pil'`` or ``'cv2'``.

    minidp reads ``'cv2'`` images with Pillow too and returns them as NumPy arrays in BGR order, the
    layout OpenCV gives; ``'tensor'`` is accepted for Paddle's sake and reads like ``'pil'``."""
    global _backend
    if backend not in _BACKENDS:
        raise ValueError(f"backend should be one of {_BACKENDS}, got {backend!r}")
    _backend = backend


def get_image_backend() -> str:
    """The backend ``set_image_backend`` chose (``'pil'`` by default)."""
    return _backend


def image_load(path: str, backend: str | None = None) -> Any:
    """Read an image file: a PIL RGB image (backend ``'pil'``) or a BGR ``HWC`` uint8 array (``'cv2'``)."""
    backend = _backend if backend is None else backend
    if backend not in _BACKENDS:
        raise ValueError(f"backend should be one of {_BACKENDS}, got {backend!r}")
    image = pillow().open(path)
    if backend == "cv2":
        return numpy.asarray(image.convert("RGB"))[:, :, ::-1].copy()
    return image
