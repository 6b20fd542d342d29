"""minidp.vision.datasets (MNIST, FashionMNIST, Cifar10/100, DatasetFolder, ImageFolder) read the
tiny synthetic files of tests/fixtures/datasets/ exactly as Paddle 3.3.1 does (recorded by
tools/record_paddle_datasets.py), and refuse bad input and crafted pickles clearly. Downloads are
tested in tests/test_download.py."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

import minidp
from dataset_cases import CASES, FILES, as_record, describe, py2_batch_pickle
from minidp.vision import datasets

RECORDED = json.loads((FILES.parent / "paddle_datasets.json").read_text())["cases"]


@pytest.fixture(scope="module")
def paddle_items():
    with np.load(FILES.parent / "paddle_datasets.npz") as stored:
        return dict(stored)


@pytest.mark.parametrize("case_id, build, indices", CASES, ids=[case[0] for case in CASES])
def test_items_equal_paddles(case_id, build, indices, paddle_items):
    dataset = build(minidp.vision)
    found = describe(dataset)
    expected = RECORDED[case_id]
    assert found == {key: value for key, value in expected.items() if "/" not in key}
    for index in indices:
        item = dataset[index]
        for part, value in enumerate(item):
            kind, array = as_record(value)
            assert [kind, str(array.dtype), list(array.shape), len(item), type(item).__name__] == expected[
                f"{index}/{part}"
            ], (case_id, index, part)
            np.testing.assert_array_equal(array, paddle_items[f"{case_id}/{index}/{part}"])


def _idx_pair(tmp_path: Path, count: int, label_count: int | None = None) -> tuple:
    images, labels = tmp_path / "images.gz", tmp_path / "labels.gz"
    pixels = np.arange(count * 4, dtype=np.uint8).tobytes()
    images.write_bytes(gzip.compress(struct.pack(">IIII", 2051, count, 2, 2) + pixels))
    label_count = count if label_count is None else label_count
    labels.write_bytes(gzip.compress(struct.pack(">II", 2049, label_count) + bytes(range(label_count))))
    return str(images), str(labels)


def test_mnist_reads_any_count_of_images(tmp_path):
    # Paddle reads 100 images at a time and fails on other counts; minidp reads what the header says.
    images, labels = _idx_pair(tmp_path, 3)
    mnist = datasets.MNIST(images, labels, backend="cv2")
    assert len(mnist) == 3
    image, label = mnist[2]
    np.testing.assert_array_equal(image, [[8, 9], [10, 11]])
    assert image.dtype == np.float32 and label.tolist() == [2] and label.dtype == np.int64


def test_mnist_refuses_mismatched_or_foreign_files(tmp_path):
    images, labels = _idx_pair(tmp_path, 3, label_count=2)
    with pytest.raises(ValueError, match="3 images.*2 labels"):
        datasets.MNIST(images, labels)
    with pytest.raises(ValueError, match="magic number 2051"):
        datasets.MNIST(labels, labels)
    with pytest.raises(ValueError, match="not a gzipped idx file"):
        datasets.MNIST(str(FILES / "folder" / "class_a" / "1.png"), labels)


def test_bad_arguments_name_the_argument_and_the_fix(tmp_path):
    images, labels = _idx_pair(tmp_path, 1)
    with pytest.raises(ValueError, match="MNIST: mode should be 'train' or 'test', got 'valid'"):
        datasets.MNIST(images, labels, mode="valid")
    with pytest.raises(ValueError, match="Cifar10: backend should be 'pil'.*'cv2'.*got 'tensor'"):
        datasets.Cifar10(str(FILES / "cifar-10-python.tar.gz"), backend="tensor")
    with pytest.raises(ValueError, match="label_path is None and download=False.*t10k-labels"):
        datasets.FashionMNIST(images, mode="test", download=False)
    with pytest.raises(FileNotFoundError, match="data_file '.*nowhere.tar.gz' is not a file"):
        datasets.Cifar100(str(tmp_path / "nowhere.tar.gz"))
    with pytest.raises(TypeError, match="image_path should be a file path or None, got int"):
        datasets.MNIST(3, labels)
    with pytest.raises(ValueError, match="is not a tar archive"):
        datasets.Cifar10(images)
    with pytest.raises(ValueError, match="no member named like 'data_batch'"):
        datasets.Cifar10(str(FILES / "cifar-100-python.tar.gz"))
    with pytest.raises(FileNotFoundError, match="root .* is not a folder"):
        datasets.DatasetFolder(str(tmp_path / "missing"))
    with pytest.raises(TypeError, match="extensions should be a list or tuple"):
        datasets.ImageFolder(str(FILES / "folder"), extensions=".png")
    with pytest.raises(RuntimeError, match=r"no files with the extensions \.jpg under"):
        datasets.ImageFolder(str(FILES / "folder"), extensions=[".jpg"])


def test_is_valid_file_chooses_the_files_where_no_extensions_are_given():
    folder = datasets.DatasetFolder(str(FILES / "folder"), is_valid_file=lambda path: path.endswith(".txt"))
    assert [Path(path).name for path, _ in folder.samples] == ["notes.txt"]
    loaded = datasets.ImageFolder(str(FILES / "folder"), loader=lambda path: Path(path).name)
    assert loaded[1] == ["2.PNG"]


def test_cv2_backend_folder_items_are_rgb_arrays():
    minidp.vision.set_image_backend("cv2")
    try:
        image, label = datasets.DatasetFolder(str(FILES / "folder"))[0]
    finally:
        minidp.vision.set_image_backend("pil")
    assert isinstance(image, np.ndarray) and image.shape == (4, 4, 3) and label == 0
    np.testing.assert_array_equal(image, np.asarray(datasets.DatasetFolder(str(FILES / "folder"))[0][0]))


def _cifar_archive(tmp_path: Path, batch: bytes) -> str:
    path = tmp_path / "crafted.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(batch)
        archive.addfile(info, io.BytesIO(batch))
    return str(path)


class _RunsCode:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_crafted_cifar_batch_is_refused_without_running_it(tmp_path, capsys):
    with pytest.raises(
        ValueError, match=r"Cifar10: .*data_batch_1' is a pickle that refers to (__builtin__|builtins)\.print"
    ):
        datasets.Cifar10(_cifar_archive(tmp_path, pickle.dumps({b"data": _RunsCode()}, protocol=2)))
    assert "never run" not in capsys.readouterr().out
    wrong = py2_batch_pickle(np.zeros((2, 3072), np.uint8), [1], b"labels")
    with pytest.raises(ValueError, match="one label per image"):
        datasets.Cifar10(_cifar_archive(tmp_path, wrong))
    with pytest.raises(ValueError, match="no b'data' array of 3x32x32 images"):
        datasets.Cifar10(_cifar_archive(tmp_path, pickle.dumps({b"data": [1], b"labels": [1]}, protocol=2)))


def test_a_loader_batches_the_items():
    loader = minidp.io.DataLoader(datasets.Cifar10(str(FILES / "cifar-10-python.tar.gz"), backend="cv2"), batch_size=4)
    images, labels = next(iter(loader))
    assert images.shape == [4, 32, 32, 3] and labels.shape == [4] and labels.numpy().tolist() == [1, 2, 3, 7]
