"""Datasets read from a folder of image files: ``DatasetFolder`` (one sub-folder per class) and
``ImageFolder`` (every image under a folder, no labels), listed in Paddle's order."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Callable

import numpy

from ...dtypes import get_default_dtype
from ...io import Dataset
from ..image import get_image_backend, pillow

__all__ = ["DatasetFolder", "ImageFolder"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_valid_extension(filename: str, extensions: Sequence[str]) -> bool:
    """True where ``filename`` ends with one of ``extensions`` (case ignored)."""
    if not isinstance(extensions, (list, tuple)):
        raise TypeError(f"extensions should be a list or tuple of endings such as '.png', got {extensions!r}")
    return filename.lower().endswith(tuple(e.lower() for e in extensions))


def pil_loader(path: str) -> Any:
    """The image at ``path`` as an RGB PIL image."""
    with open(path, "rb") as handle:
        return pillow().open(handle).convert("RGB")


def cv2_loader(path: str) -> numpy.ndarray:
    """The image at ``path`` as an RGB ``HWC`` uint8 array, what Paddle's OpenCV loader gives (read here by Pillow)."""
    return numpy.asarray(pil_loader(path))


def default_loader(path: str) -> Any:
    """``cv2_loader`` where the image backend is 'cv2', else ``pil_loader``."""
    return cv2_loader(path) if get_image_backend() == "cv2" else pil_loader(path)


def _file_filter(extensions: Sequence[str] | None, is_valid_file: Callable | None) -> tuple:
    """``(extensions, path -> keep?)``: ``extensions`` decides where given (as in Paddle, also over
    ``is_valid_file``), else ``is_valid_file``, else the image extensions."""
    if extensions is None and is_valid_file is not None:
        if not callable(is_valid_file):
            raise TypeError(f"is_valid_file should be a function of a path, got {type(is_valid_file).__name__}")
        return None, is_valid_file
    extensions = IMG_EXTENSIONS if extensions is None else extensions
    if not isinstance(extensions, (list, tuple)):
        raise TypeError(f"extensions should be a list or tuple of endings such as '.png', got {extensions!r}")
    return extensions, lambda path: has_valid_extension(path, extensions)


def _walk(folder: str, keep: Callable) -> list:
    """Every file under ``folder`` that ``keep`` accepts, folders and names sorted, links followed."""
    found = []
    for root, _, names in sorted(os.walk(folder, followlinks=True)):
        found.extend(os.path.join(root, name) for name in sorted(names) if keep(os.path.join(root, name)))
    return found


def _checked_root(dataset: str, root: Any) -> str:
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"{dataset}: root should be a folder path, got {type(root).__name__}")
    if not os.path.isdir(os.path.expanduser(root)):
        raise FileNotFoundError(f"{dataset}: root {str(root)!r} is not a folder")
    return os.fspath(root)


class DatasetFolder(Dataset):
    """Samples stored as ``root/<class>/.../<file>``: classes are the sub-folders of ``root`` in
    sorted order, labelled 0, 1, ...; each item is ``(loader(path) after transform, class index)``.
    Files are kept by ``extensions`` (default: the image endings) or, without it, ``is_valid_file``."""

    def __init__(
        self,
        root: str,
        loader: Callable | None = None,
        extensions: Sequence[str] | None = None,
        transform: Callable | None = None,
        is_valid_file: Callable | None = None,
    ) -> None:
        self.root = _checked_root("DatasetFolder", root)
        self.transform = transform
        extensions, keep = _file_filter(extensions, is_valid_file)
        folder = os.path.expanduser(self.root)
        self.classes = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())
        self.class_to_idx = {name: index for index, name in enumerate(self.classes)}
        self.samples = [
            (path, index)
            for name, index in self.class_to_idx.items()
            for path in _walk(os.path.join(folder, name), keep)
        ]
        if not self.samples:
            raise RuntimeError(
                f"DatasetFolder: no files with {_what_is_kept(extensions)} in the class folders of {root}"
            )
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.targets = [index for _, index in self.samples]
        self.dtype = get_default_dtype()

    def __getitem__(self, index: int) -> tuple:
        path, target = self.samples[index]
        sample = self.loader(path)
        return (sample if self.transform is None else self.transform(sample)), target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(Dataset):
    """Every image under ``root`` (sub-folders included, sorted), without labels: each item is the
    one-element list ``[loader(path) after transform]``, as in Paddle."""

    def __init__(
        self,
        root: str,
        loader: Callable | None = None,
        extensions: Sequence[str] | None = None,
        transform: Callable | None = None,
        is_valid_file: Callable | None = None,
    ) -> None:
        self.root = _checked_root("ImageFolder", root)
        extensions, keep = _file_filter(extensions, is_valid_file)
        self.samples = _walk(os.path.expanduser(self.root), keep)
        if not self.samples:
            raise RuntimeError(f"ImageFolder: no files with {_what_is_kept(extensions)} under {root}")
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.transform = transform

    def __getitem__(self, index: int) -> list:
        sample = self.loader(self.samples[index])
        return [sample if self.transform is None else self.transform(sample)]

    def __len__(self) -> int:
        return len(self.samples)


def _what_is_kept(extensions: Sequence[str] | None) -> str:
    return "an accepted name (is_valid_file)" if extensions is None else "the extensions " + ",".join(extensions)
