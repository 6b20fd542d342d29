"""Fetching published files into Paddle's cache folders: datasets under ``DATA_HOME`` and model
weights under ``WEIGHTS_HOME``, the very folders Paddle uses, so a file either library fetched
serves both.

A file already in place with the right MD5 is used as it is. Otherwise it is fetched over HTTP(S)
with bounded timeouts (``TIMEOUT`` seconds to connect and between reads; Paddle waits forever),
written to a temporary file in the target folder and renamed into place only once complete and
MD5-checked, so an interrupted download, or ranks of a data-parallel job fetching at once, never
leave a partial file under the final name. After ``RETRY_LIMIT`` failed tries the error names the
URL, the file and the folder to put it in by hand.

To fetch from somewhere else (a mirror, a test server), change the dataset class's URL
attributes, as in Paddle; to cache elsewhere, set ``DATA_HOME`` / ``WEIGHTS_HOME`` here, or
``HOME`` before ``import minidp``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request

__all__ = ["get_weights_path_from_url"]

_HOME = os.path.expanduser("~")
if not os.access(_HOME, os.W_OK):
    _HOME = tempfile.gettempdir()  # Paddle falls back the same way where HOME is read-only

DATA_HOME = os.path.join(_HOME, ".cache", "paddle", "dataset")
WEIGHTS_HOME = os.path.join(_HOME, ".cache", "paddle", "hapi", "weights")
TIMEOUT = 30.0
RETRY_LIMIT = 3
_CHUNK = 1 << 20


def md5_of(path: str) -> str:
    """The hex MD5 of a file, read in 1 MiB pieces."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for piece in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(piece)
    return digest.hexdigest()


def _fetch_once(url: str, folder: str, md5sum: str | None) -> str:
    """Download ``url`` into a temporary file in ``folder``; its path once complete and checked."""
    descriptor, partial = tempfile.mkstemp(prefix=".download-", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            for piece in iter(lambda: response.read(_CHUNK), b""):
                out.write(piece)
        if md5sum is not None and md5_of(partial) != md5sum:
            raise ValueError(f"the file downloaded has MD5 {md5_of(partial)}, not the published {md5sum}")
    except BaseException:
        os.unlink(partial)
        raise
    return partial


def fetch(url: str, folder: str, md5sum: str | None = None) -> str:
    """The path of ``url``'s file name in ``folder``, downloading it there if it is missing or its
    MD5 is not ``md5sum``. Raises RuntimeError naming the URL, the file and the folder when every
    try failed (offline, timeout, HTTP error, wrong MD5)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url should start with http:// or https://, got {url!r}")
    path = os.path.join(folder, url.split("/")[-1])
    if os.path.isfile(path) and (md5sum is None or md5_of(path) == md5sum):
        return path
    os.makedirs(folder, exist_ok=True)
    errors = []
    for attempt in range(1, RETRY_LIMIT + 1):
        sys.stderr.write(f"minidp: {path} is missing or stale; downloading {url} (try {attempt}/{RETRY_LIMIT})\n")
        try:
            os.replace(_fetch_once(url, folder, md5sum), path)
            return path
        except (OSError, ValueError, urllib.error.URLError) as error:
            errors.append(f"{type(error).__name__}: {error}")
    raise RuntimeError(
        f"cannot download {url} to {path} ({RETRY_LIMIT} tries; last error {errors[-1]}). Without network "
        f"access, fetch the file elsewhere (MD5 {md5sum}) and put it in {folder}"
    )


def get_dataset_path(url: str, module_name: str, md5sum: str) -> str:
    """A dataset file's path under ``DATA_HOME/module_name``, fetched if needed (Paddle's
    ``paddle.dataset.common.download``, where the datasets keep their files)."""
    return fetch(url, os.path.join(DATA_HOME, module_name), md5sum)


def get_weights_path_from_url(url: str, md5sum: str | None = None) -> str:
    """The path of published weights under ``WEIGHTS_HOME``, downloaded there if missing."""
    return fetch(url, WEIGHTS_HOME, md5sum)
