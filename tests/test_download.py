"""minidp.utils.download and the datasets' downloads, against a local HTTP server only (never the
internet): Paddle's cache layout, the MD5 check, atomic writes, bounded timeouts and the errors
that name the URL, the file and the folder."""

from __future__ import annotations

import functools
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dataset_cases import FILES
from minidp.utils import download
from minidp.vision import datasets
from minidp.vision.datasets import cifar

ROOT = Path(__file__).resolve().parent.parent


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list = []

    def log_message(self, *args) -> None:
        type(self).requests.append(self.path)


@pytest.fixture
def server():
    """``http://127.0.0.1:<port>`` serving tests/fixtures/datasets/; the paths asked are in ``.requests``."""
    _Handler.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(FILES)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler.requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(download, "DATA_HOME", str(tmp_path / "dataset"))
    monkeypatch.setattr(download, "WEIGHTS_HOME", str(tmp_path / "weights"))
    monkeypatch.setattr(download, "RETRY_LIMIT", 2)
    return tmp_path


def _md5(name: str) -> str:
    return download.md5_of(str(FILES / name))


def test_mnist_downloads_into_paddles_cache_once(server, cache, monkeypatch):
    base, requests = server
    for part, name in (("IMAGE", "mnist-images-idx3-ubyte.gz"), ("LABEL", "mnist-labels-idx1-ubyte.gz")):
        monkeypatch.setattr(datasets.MNIST, f"TEST_{part}_URL", f"{base}/{name}")
        monkeypatch.setattr(datasets.MNIST, f"TEST_{part}_MD5", _md5(name))
    mnist = datasets.MNIST(mode="test", backend="cv2")
    assert mnist.image_path == str(cache / "dataset" / "mnist" / "mnist-images-idx3-ubyte.gz")
    reference = datasets.MNIST(str(FILES / "mnist-images-idx3-ubyte.gz"), str(FILES / "mnist-labels-idx1-ubyte.gz"))
    assert len(mnist) == 100 and mnist[7][1] == reference[7][1]
    assert sorted(os.listdir(cache / "dataset" / "mnist")) == [
        "mnist-images-idx3-ubyte.gz",
        "mnist-labels-idx1-ubyte.gz",
    ]
    datasets.MNIST(mode="test")  # cached and MD5-correct: nothing is fetched again
    assert len(requests) == 2


def test_cifar_downloads_through_its_module_urls(server, cache, monkeypatch):
    base, _ = server
    monkeypatch.setattr(cifar, "CIFAR100_URL", f"{base}/cifar-100-python.tar.gz")
    monkeypatch.setattr(cifar, "CIFAR100_MD5", _md5("cifar-100-python.tar.gz"))
    data = datasets.Cifar100(mode="test", backend="cv2")
    assert data.data_file == str(cache / "dataset" / "cifar" / "cifar-100-python.tar.gz")
    assert [int(data[i][1]) for i in range(len(data))] == [0, 63]


def test_a_wrong_md5_fails_and_leaves_no_file(server, cache):
    base, requests = server
    url = f"{base}/mnist-labels-idx1-ubyte.gz"
    with pytest.raises(RuntimeError, match=rf"cannot download {url} to .*2 tries.*MD5 .*put it in .*dataset/mnist"):
        download.get_dataset_path(url, "mnist", "0" * 32)
    assert len(requests) == 2 and os.listdir(cache / "dataset" / "mnist") == []
    with pytest.raises(RuntimeError, match="HTTP Error 404"):
        download.get_dataset_path(f"{base}/absent.gz", "mnist", "0" * 32)


def test_a_server_that_never_answers_times_out(cache, monkeypatch):
    monkeypatch.setattr(download, "TIMEOUT", 0.3)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # connections are queued and never answered
    try:
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="timed out"):
            download.get_weights_path_from_url(f"http://127.0.0.1:{silent.getsockname()[1]}/w.pdparams", "0" * 32)
        assert time.monotonic() - start < 5
    finally:
        silent.close()
    assert os.listdir(cache / "weights") == []
    with pytest.raises(ValueError, match="url should start with http"):
        download.get_weights_path_from_url("/local/w.pdparams")


def test_ranks_downloading_at_once_each_get_the_whole_file(server, cache):
    base, _ = server
    url, md5 = f"{base}/cifar-10-python.tar.gz", _md5("cifar-10-python.tar.gz")
    script = (
        "import sys; from minidp.utils import download; download.DATA_HOME = sys.argv[1]; "
        "print(download.get_dataset_path(sys.argv[2], 'cifar', sys.argv[3]))"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(cache / "dataset"), url, md5], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        outputs = [rank.communicate(timeout=60)[0].strip() for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
            rank.wait()
    path = str(cache / "dataset" / "cifar" / "cifar-10-python.tar.gz")
    assert [rank.returncode for rank in ranks] == [0, 0] and outputs == [path, path]
    assert os.listdir(cache / "dataset" / "cifar") == ["cifar-10-python.tar.gz"] and download.md5_of(path) == md5
    assert np.asarray(datasets.Cifar10(path)[0][0]).shape == (32, 32, 3)
