"""What the file-backed datasets share: checking ``mode`` and ``backend``, and finding a data file --
the path given, or Paddle's cached copy, downloaded if needed."""

from __future__ import annotations

import os
from typing import Any

import numpy

from ...utils.download import get_dataset_path
from ..image import get_image_backend, pillow

MODES = ("train", "test")


def checked_mode(dataset: str, mode: Any) -> str:
    """``mode`` lower-cased; a ValueError unless it is 'train' or 'test'."""
    if not isinstance(mode, str) or mode.lower() not in MODES:
        raise ValueError(f"{dataset}: mode should be 'train' or 'test', got {mode!r}")
    return mode.lower()


def checked_backend(dataset: str, backend: Any) -> str:
    """``backend``, or the one ``set_image_backend`` chose; a ValueError unless 'pil' or 'cv2'."""
    backend = get_image_backend() if backend is None else backend
    if backend not in ("pil", "cv2"):
        raise ValueError(f"{dataset}: backend should be 'pil' (PIL images) or 'cv2' (NumPy arrays), got {backend!r}")
    return backend


def data_file(dataset: str, argument: str, path: Any, url: str, md5: str, folder: str, download: bool) -> str:
    """The file to read: ``path`` where given (it must exist), else Paddle's cached copy of ``url``
    under ``DATA_HOME/folder``, downloaded if missing and ``download`` allows."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{dataset}: {argument} should be a file path or None, got {type(path).__name__}")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{dataset}: {argument} {str(path)!r} is not a file")
        return os.fspath(path)
    if not download:
        raise ValueError(
            f"{dataset}: {argument} is None and download=False: pass the path of the file, or download=True "
            f"to fetch {url} into Paddle's cache"
        )
    return get_dataset_path(url, folder, md5)


def as_item(image: numpy.ndarray, label: numpy.ndarray, backend: str, transform: Any, dtype: str) -> tuple:
    """One ``(image, label)`` as Paddle's datasets give it: ``image`` (an ``HW``/``HWC`` array) as a
    uint8 PIL image for backend 'pil', as it is for 'cv2'; then ``transform``; for 'cv2' the result is
    cast to ``dtype`` (the default float dtype when the dataset was built)."""
    if backend == "pil":
        image = pillow().fromarray(image.astype(numpy.uint8, copy=False))
    if transform is not None:
        image = transform(image)
    if backend == "cv2":
        image = image.astype(dtype)
    return image, label
