"""CIFAR-10 and CIFAR-100 from their python-version archives (tar.gz of pickled batches), read
with minidp's restricted unpickler: the batches are pickles, and pickles can run code."""

from __future__ import annotations

import io
import tarfile
from typing import Callable

import numpy

from ...dtypes import get_default_dtype
from ...io import Dataset
from ...paddle_checkpoint import load_restricted_pickle
from . import source
from .source import as_item, checked_backend, checked_mode

__all__ = ["Cifar10", "Cifar100"]

URL_PREFIX = "https://dataset.bj.bcebos.com/cifar/"
CIFAR10_URL = URL_PREFIX + "cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR100_URL = URL_PREFIX + "cifar-100-python.tar.gz"
CIFAR100_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"

# The archive members a mode reads: every member whose name contains the word (in sorted order).
MODE_FLAG_MAP = {"train10": "data_batch", "test10": "test_batch", "train100": "train", "test100": "test"}


def _read_batch(name: str, path: str, member: str, handle: io.BufferedIOBase) -> tuple:
    """``(data uint8 [n, 3072], labels)`` of one pickled batch (``labels`` or ``fine_labels``)."""
    where = f"{path}:{member}"
    batch = load_restricted_pickle(where, io.BytesIO(handle.read()), name, "CIFAR batch", encoding="bytes")
    data = batch.get(b"data") if isinstance(batch, dict) else None
    labels = batch.get(b"labels", batch.get(b"fine_labels")) if isinstance(batch, dict) else None
    if not (isinstance(data, numpy.ndarray) and data.ndim == 2 and data.shape[1] == 3 * 32 * 32):
        raise ValueError(f"{name}: {where!r} holds no b'data' array of 3x32x32 images")
    if not isinstance(labels, list) or len(labels) != len(data):
        raise ValueError(f"{name}: {where!r} holds no b'labels' (or b'fine_labels') list, one label per image")
    return data.astype(numpy.uint8, copy=False), labels


class Cifar10(Dataset):
    """CIFAR-10 (50000 train / 10000 test colour images of 32x32, 10 classes).

    ``data_file`` names the python-version ``.tar.gz``; left None, Paddle's cached copy in
    ``~/.cache/paddle/dataset/cifar`` is used (downloaded there if ``download``). Each item is
    ``(image, label)``: a PIL RGB image (backend 'pil') or an ``HWC`` array of the default float
    dtype (backend 'cv2'), after ``transform``; the label a 0-d int64 array."""

    def __init__(
        self,
        data_file: str | None = None,
        mode: str = "train",
        transform: Callable | None = None,
        download: bool = True,
        backend: str | None = None,
    ) -> None:
        name = type(self).__name__
        self.mode = checked_mode(name, mode)
        self.backend = checked_backend(name, backend)
        self._init_url_md5_flag()
        self.data_file = source.data_file(name, "data_file", data_file, self.data_url, self.data_md5, "cifar", download)
        self.transform = transform
        self._load_data()
        self.dtype = get_default_dtype()

    def _init_url_md5_flag(self) -> None:
        self.data_url, self.data_md5 = CIFAR10_URL, CIFAR10_MD5
        self.flag = MODE_FLAG_MAP[self.mode + "10"]

    def _load_data(self) -> None:
        name = type(self).__name__
        try:
            archive = tarfile.open(self.data_file, mode="r")
        except tarfile.TarError as error:
            raise ValueError(f"{name}: {self.data_file!r} is not a tar archive ({error})") from None
        with archive:
            members = sorted(m.name for m in archive if m.isfile() and self.flag in m.name)
            batches = [_read_batch(name, self.data_file, m, archive.extractfile(m)) for m in members]
        if not batches:
            raise ValueError(
                f"{name}: {self.data_file!r} has no member named like {self.flag!r} for mode {self.mode!r}"
            )
        self.images = numpy.concatenate([data for data, _ in batches]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self.labels = numpy.array([label for _, labels in batches for label in labels], numpy.int64)

    def __getitem__(self, idx: int) -> tuple:
        return as_item(self.images[idx], numpy.array(self.labels[idx]), self.backend, self.transform, self.dtype)

    def __len__(self) -> int:
        return len(self.labels)


class Cifar100(Cifar10):
    """CIFAR-100 (100 classes; the labels are the fine ones): as :class:`Cifar10`, from its own archive."""

    def _init_url_md5_flag(self) -> None:
        self.data_url, self.data_md5 = CIFAR100_URL, CIFAR100_MD5
        self.flag = MODE_FLAG_MAP[self.mode + "100"]
