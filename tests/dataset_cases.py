"""Tiny files in the real formats of Paddle's vision datasets, for tests/test_datasets.py and
tools/record_paddle_datasets.py: an MNIST pair of gzipped idx files (100 images, the smallest count
Paddle's reader accepts: it reads 100 at a time), CIFAR-10/100 python archives whose batches are
pickled as Python 2 wrote them, and a folder of PNGs. ``write_all(folder)`` writes them; the
committed copies are in tests/fixtures/datasets/."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
from pathlib import Path

import numpy as np

FILES = Path(__file__).resolve().parent / "fixtures" / "datasets"
MNIST_COUNT = 100


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def mnist_files() -> dict:
    """``{name: bytes}``: images (sparse strokes so the gzip stays small) and labels 0..9."""
    rng = np.random.default_rng(0)
    images = np.zeros((MNIST_COUNT, 28, 28), np.uint8)
    for image in images:
        rows, cols = rng.integers(4, 24, 6), rng.integers(4, 24, 6)
        image[rows, cols] = rng.integers(1, 256, 6)
    labels = (np.arange(MNIST_COUNT) * 7 % 10).astype(np.uint8)
    return {
        "mnist-images-idx3-ubyte.gz": _gzip(struct.pack(">IIII", 2051, MNIST_COUNT, 28, 28) + images.tobytes()),
        "mnist-labels-idx1-ubyte.gz": _gzip(struct.pack(">II", 2049, MNIST_COUNT) + labels.tobytes()),
    }


def _short_string(data: bytes) -> bytes:
    return b"U" + bytes([len(data)]) + data


def py2_batch_pickle(data: np.ndarray, labels: list, label_key: bytes) -> bytes:
    """A CIFAR batch dict pickled with protocol 2 as Python 2's cPickle and NumPy wrote it: keys and
    strings as BINSTRING opcodes, the array through ``numpy.core.multiarray._reconstruct``."""
    out = [b"\x80\x02}(", _short_string(b"batch_label"), _short_string(b"synthetic batch")]
    out.append(_short_string(label_key) + b"](" + b"".join(b"K" + bytes([v]) for v in labels) + b"e")
    out.append(_short_string(b"data"))
    out.append(b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + _short_string(b"b") + b"\x87R")
    dtype = b"cnumpy\ndtype\n" + _short_string(b"u1") + b"K\x00K\x01\x87R(K\x03" + _short_string(b"|")
    dtype += b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
    raw = data.tobytes()
    state = b"(K\x01M" + struct.pack("<H", data.shape[0]) + b"M" + struct.pack("<H", data.shape[1]) + b"\x86"
    state += dtype + b"\x89T" + struct.pack("<I", len(raw)) + raw + b"tb"
    out.append(state)
    out.append(b"u.")
    return b"".join(out)


def _tar_gz(members: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _cifar_images(seed: int, count: int) -> np.ndarray:
    """``count`` images of 3x32x32 as flat rows: ramps differing by image and channel, so they compress."""
    ramp = np.add.outer(np.arange(32), 3 * np.arange(32))
    images = [(ramp * (c + 1) + 40 * i + 17 * seed) % 256 for i in range(count) for c in range(3)]
    return np.stack(images).astype(np.uint8).reshape(count, 3072)


def cifar_files() -> dict:
    """``{name: bytes}``: a CIFAR-10 archive (two train batches of 3, a test batch of 2, the meta
    file) and a CIFAR-100 one (train of 3, test of 2, fine and coarse labels)."""
    cifar10 = {
        "cifar-10-batches-py/batches.meta": py2_batch_pickle(np.zeros((1, 3072), np.uint8), [0], b"labels"),
        "cifar-10-batches-py/data_batch_2": py2_batch_pickle(_cifar_images(2, 3), [7, 8, 9], b"labels"),
        "cifar-10-batches-py/data_batch_1": py2_batch_pickle(_cifar_images(1, 3), [1, 2, 3], b"labels"),
        "cifar-10-batches-py/test_batch": py2_batch_pickle(_cifar_images(3, 2), [4, 5], b"labels"),
    }
    cifar100 = {
        "cifar-100-python/train": py2_batch_pickle(_cifar_images(4, 3), [11, 52, 99], b"fine_labels"),
        "cifar-100-python/test": py2_batch_pickle(_cifar_images(5, 2), [0, 63], b"fine_labels"),
    }
    return {"cifar-10-python.tar.gz": _tar_gz(cifar10), "cifar-100-python.tar.gz": _tar_gz(cifar100)}


def folder_images() -> dict:
    """``{relative path: HWC uint8 array or None}``: PNGs in class folders (one nested), and a
    text file (None) that the image filter must skip."""
    rng = np.random.default_rng(7)
    shapes = {
        "folder/class_b/x.png": (5, 4, 3),
        "folder/class_a/2.PNG": (3, 6, 3),
        "folder/class_a/1.png": (4, 4, 3),
        "folder/class_b/deep/y.png": (2, 3, 3),
    }
    images = {path: rng.integers(0, 256, shape, dtype=np.uint8) for path, shape in shapes.items()}
    images["folder/class_a/notes.txt"] = None
    return images


def write_all(folder: Path = FILES) -> None:
    """Write every synthetic file under ``folder``."""
    from PIL import Image

    for name, data in {**mnist_files(), **cifar_files()}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for name, image in folder_images().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if image is None:
            (folder / name).write_text("not an image\n")
        else:
            Image.fromarray(image).save(folder / name, format="PNG")


def _mnist(vision, **kwargs):
    images, labels = FILES / "mnist-images-idx3-ubyte.gz", FILES / "mnist-labels-idx1-ubyte.gz"
    return vision.datasets.MNIST(str(images), str(labels), **kwargs)


def _cifar(cls_name: str, archive: str):
    return lambda vision, **kwargs: getattr(vision.datasets, cls_name)(str(FILES / archive), **kwargs)


def _to_tensor(vision):
    return vision.transforms.Compose([vision.transforms.ToTensor(), vision.transforms.Normalize([0.5], [0.5])])


# (case id, build(vision module) -> dataset, indices to record). The same builds run on Paddle
# (tools/record_paddle_datasets.py) and on minidp (tests/test_datasets.py).
CASES = [
    ("mnist_pil", lambda v: _mnist(v), [0, 1, 99]),
    ("mnist_cv2", lambda v: _mnist(v, backend="cv2"), [0, 57]),
    (
        "mnist_test_fashion",
        lambda v: v.datasets.FashionMNIST(
            str(FILES / "mnist-images-idx3-ubyte.gz"), str(FILES / "mnist-labels-idx1-ubyte.gz"), mode="test"
        ),
        [3],
    ),
    ("mnist_pil_tensor", lambda v: _mnist(v, transform=_to_tensor(v)), [5]),
    ("mnist_cv2_tensor", lambda v: _mnist(v, transform=v.transforms.ToTensor(), backend="cv2"), [5]),
    ("cifar10_train_pil", lambda v: _cifar("Cifar10", "cifar-10-python.tar.gz")(v), [0, 2, 3, 5]),
    ("cifar10_test_cv2", lambda v: _cifar("Cifar10", "cifar-10-python.tar.gz")(v, mode="TEST", backend="cv2"), [0, 1]),
    (
        "cifar10_cv2_tensor",
        lambda v: _cifar("Cifar10", "cifar-10-python.tar.gz")(v, transform=v.transforms.ToTensor(), backend="cv2"),
        [4],
    ),
    ("cifar100_train", lambda v: _cifar("Cifar100", "cifar-100-python.tar.gz")(v), [0, 1, 2]),
    (
        "cifar100_test_tensor",
        lambda v: _cifar("Cifar100", "cifar-100-python.tar.gz")(v, mode="test", transform=_to_tensor(v)),
        [1],
    ),
    ("folder", lambda v: v.datasets.DatasetFolder(str(FILES / "folder")), [0, 1, 2, 3]),
    ("folder_png_only", lambda v: v.datasets.DatasetFolder(str(FILES / "folder"), extensions=(".png",)), [0]),
    ("image_folder", lambda v: v.datasets.ImageFolder(str(FILES / "folder")), [0, 3]),
    (
        "image_folder_tensor",
        lambda v: v.datasets.ImageFolder(str(FILES / "folder"), transform=v.transforms.ToTensor()),
        [2],
    ),
]


def describe(dataset) -> dict:
    """What is compared besides the items: length and, for folder datasets, classes and samples
    (paths relative to tests/fixtures/datasets)."""
    found = {"len": len(dataset)}
    if hasattr(dataset, "classes"):
        found["classes"] = list(dataset.classes)
        found["class_to_idx"] = dict(dataset.class_to_idx)
        found["targets"] = [int(t) for t in dataset.targets]
    if hasattr(dataset, "samples"):
        found["samples"] = [
            [str(Path(s[0]).relative_to(FILES)), int(s[1])] if isinstance(s, tuple) else str(Path(s).relative_to(FILES))
            for s in dataset.samples
        ]
    return found


def as_record(value) -> tuple:
    """``(kind, array)`` of an item's part: kind names what it was (PIL mode, ndarray, Tensor, int)."""
    if hasattr(value, "getbands"):
        return f"PIL:{value.mode}", np.asarray(value)
    if isinstance(value, np.ndarray):
        return "ndarray", value
    if isinstance(value, int):
        return "int", np.array(value)
    return "Tensor", np.asarray(value.numpy())
