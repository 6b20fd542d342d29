"""MNIST and Fashion-MNIST from their idx files (gzipped), as Paddle's datasets read them."""

from __future__ import annotations

import gzip
import struct
from typing import Callable

import numpy

from ...io import Dataset
from ...dtypes import get_default_dtype
from .source import as_item, checked_backend, checked_mode, data_file

__all__ = ["MNIST", "FashionMNIST"]

_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049


def _read_idx(path: str, magic: int, header: str) -> tuple:
    """``(header fields after the magic, data bytes)`` of a gzipped idx file; ValueError if it is not one."""
    try:
        with gzip.open(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as error:
        raise ValueError(f"{path!r} is not a gzipped idx file ({error})") from None
    size = struct.calcsize(header)
    if len(raw) < size or struct.unpack_from(">I", raw)[0] != magic:
        raise ValueError(f"{path!r} is not an idx file of magic number {magic}")
    return struct.unpack_from(header, raw)[1:], raw[size:]


def read_images_and_labels(image_path: str, label_path: str) -> tuple:
    """``(images uint8 [N, rows, cols], labels uint8 [N])`` from the two idx files."""
    (count, rows, cols), pixels = _read_idx(image_path, _IMAGES_MAGIC, ">IIII")
    (label_count,), labels = _read_idx(label_path, _LABELS_MAGIC, ">II")
    if count != label_count or len(pixels) < count * rows * cols or len(labels) < count:
        raise ValueError(
            f"{image_path!r} ({count} images) and {label_path!r} ({label_count} labels) do not match, or one is "
            "truncated"
        )
    images = numpy.frombuffer(pixels, numpy.uint8, count * rows * cols).reshape(count, rows, cols)
    return images, numpy.frombuffer(labels, numpy.uint8, count)


class MNIST(Dataset):
    """The MNIST digits (60000 train / 10000 test images, 28x28 grey).

    ``image_path``/``label_path`` name the gzipped idx files; left None, Paddle's cached copies in
    ``~/.cache/paddle/dataset/mnist`` are used (downloaded there if ``download``). Each item is
    ``(image, label)``: a PIL 'L' image (backend 'pil') or a ``[28, 28]`` array of the default
    float dtype (backend 'cv2'), after ``transform``; the label an int64 array of shape ``[1]``."""

    NAME = "mnist"
    URL_PREFIX = "https://dataset.bj.bcebos.com/mnist/"
    TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
    TEST_IMAGE_MD5 = "9fb629c4189551a2d022fa330f9573f3"
    TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
    TEST_LABEL_MD5 = "ec29112dd5afa0611ce80d1b7f02629c"
    TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
    TRAIN_IMAGE_MD5 = "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
    TRAIN_LABEL_MD5 = "d53e105ee54ea40749a09fcbcd1e9432"

    def __init__(
        self,
        image_path: str | None = None,
        label_path: str | None = None,
        mode: str = "train",
        transform: Callable | None = None,
        download: bool = True,
        backend: str | None = None,
    ) -> None:
        name = type(self).__name__
        self.mode = checked_mode(name, mode)
        self.backend = checked_backend(name, backend)
        part = self.mode.upper()
        self.image_path = data_file(
            name,
            "image_path",
            image_path,
            getattr(self, f"{part}_IMAGE_URL"),
            getattr(self, f"{part}_IMAGE_MD5"),
            self.NAME,
            download,
        )
        self.label_path = data_file(
            name,
            "label_path",
            label_path,
            getattr(self, f"{part}_LABEL_URL"),
            getattr(self, f"{part}_LABEL_MD5"),
            self.NAME,
            download,
        )
        self.transform = transform
        self.images, labels = read_images_and_labels(self.image_path, self.label_path)
        self.labels = labels.astype(numpy.int64).reshape(-1, 1)
        self.dtype = get_default_dtype()

    def __getitem__(self, idx: int) -> tuple:
        # Paddle keeps MNIST's pixels as float32, so a 'cv2' transform sees floats in [0, 255].
        image = self.images[idx].astype(numpy.float32)
        return as_item(image, self.labels[idx].copy(), self.backend, self.transform, self.dtype)

    def __len__(self) -> int:
        return len(self.labels)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (clothing, the MNIST layout): as :class:`MNIST`, with Paddle's cache
    folder ``~/.cache/paddle/dataset/fashion-mnist``."""

    NAME = "fashion-mnist"
    URL_PREFIX = "https://dataset.bj.bcebos.com/fashion_mnist/"
    TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
    TEST_IMAGE_MD5 = "bef4ecab320f06d8554ea6380940ec79"
    TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
    TEST_LABEL_MD5 = "bb300cfdad3c16e7a12a480ee83cd310"
    TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
    TRAIN_IMAGE_MD5 = "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
    TRAIN_LABEL_MD5 = "25c81989df183df01b3e8a0aad5dffbe"
