"""save/load: checkpoints as NumPy arrays plus a JSON description of the structure, never pickle.

A checkpoint is a ZIP archive (uncompressed, like ``.npz``) holding ``minidp.json`` -- a format
marker, a version and the object tree, where each tensor or array is a reference -- and one
``arrays/<i>.npy`` file per array, written and read with ``allow_pickle=False``. Loading
therefore never runs code from the file. ZIP's per-entry CRC-32 catches corrupted bytes.

``save`` writes to a temporary file in the target directory, flushes and fsyncs it, then renames
it over the final name with ``os.replace`` (atomic on POSIX and Windows), so a crash leaves
either the old checkpoint or the new one, never a truncated one.
"""
from __future__ import annotations

import json
import os
import secrets
import zipfile
import zlib
from typing import Any

import numpy

from . import backend
from .autograd.tensor import Tensor
from .ops.creation import to_tensor

__all__ = ["save", "load"]

FORMAT = "minidp-checkpoint"
VERSION = 1
_META = "minidp.json"


def _array_name(index: int) -> str:
    return f"arrays/{index}.npy"


def _checked(array: numpy.ndarray, where: str) -> numpy.ndarray:
    """``array`` itself, after refusing object arrays (they could only be stored by pickling)."""
    if array.dtype.hasobject:
        raise TypeError(f"minidp.save: the array at {where} holds Python objects (dtype object); "
                        "only numeric, boolean and string arrays can be saved")
    return array


def _reference(tag: str, array: numpy.ndarray, arrays: list, where: str) -> list:
    """The node of an array stored as ``arrays[i]``.

    An NPY header cannot name bfloat16 (an ml_dtypes type): such an array is stored as its
    uint16 bits and its node carries the dtype name.
    """
    array = _checked(array, where)
    if array.dtype == backend.BFLOAT16:
        arrays.append(array.view(numpy.uint16))
        return [tag, len(arrays) - 1, "bfloat16"]
    arrays.append(array)
    return [tag, len(arrays) - 1]


def _encode(obj: Any, arrays: list, where: str) -> list:
    """A JSON-able tagged node for ``obj``; arrays are appended to ``arrays`` and referenced by index."""
    if obj is None:
        return ["none"]
    if isinstance(obj, bool):
        return ["bool", obj]
    if isinstance(obj, int):
        return ["int", obj]
    if isinstance(obj, float):
        return ["float", obj]
    if isinstance(obj, str):
        return ["str", obj]
    if isinstance(obj, Tensor):
        return _reference("tensor", backend.to_host(obj._data), arrays, where)
    if isinstance(obj, numpy.ndarray):
        return _reference("ndarray", obj, arrays, where)
    if isinstance(obj, numpy.generic):
        return _reference("scalar", numpy.asarray(obj), arrays, where)
    if isinstance(obj, (list, tuple)):
        tag = "list" if isinstance(obj, list) else "tuple"
        return [tag, [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]]
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, numpy.generic) and key.dtype.kind in "biuf":
                key = key.item()  # a NumPy number key comes back as the Python number
            if not (key is None or isinstance(key, (str, int, float, bool))):
                raise TypeError(f"minidp.save: dict key {key!r} at {where} is a {type(key).__name__}; keys "
                                "must be strings, numbers, booleans or None")
            items.append([_encode(key, arrays, where), _encode(value, arrays, f"{where}[{key!r}]")])
        return ["dict", items]
    raise TypeError(f"minidp.save: cannot save {type(obj).__name__} at {where}; checkpoints hold tensors, "
                    "NumPy arrays, numbers, strings, booleans, None and dicts/lists/tuples of them "
                    "(save a layer's or optimizer's state_dict(), not the object)")


def _write_archive(handle: Any, tree: list, arrays: list) -> None:
    meta = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree})
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for index, array in enumerate(arrays):
            with archive.open(_array_name(index), "w", force_zip64=True) as entry:
                numpy.lib.format.write_array(entry, array, allow_pickle=False)
        archive.writestr(_META, meta)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable too (a no-op where directories cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj: Any, path: Any, protocol: int = 4) -> None:
    """Write ``obj`` (e.g. ``{"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}``)
    to ``path`` atomically. Missing parent directories are created.

    ``protocol`` (Paddle's pickle protocol, 2 to 4) is accepted for compatibility and has no
    effect: the format never uses pickle.
    """
    if protocol not in (2, 3, 4):
        raise ValueError(f"minidp.save: protocol must be 2, 3 or 4 (as in Paddle), got {protocol!r}")
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"minidp.save: path must be a string or os.PathLike, got {type(path).__name__}") from None
    if not path or path.endswith(os.sep):
        raise ValueError(f"minidp.save: {path!r} is not a file name")
    if os.path.isdir(path):
        raise IsADirectoryError(f"minidp.save: {path!r} is a directory; pass a file name inside it")
    arrays: list = []
    tree = _encode(obj, arrays, "obj")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # The final name's start (a name near the 255-byte limit would not leave room for the suffix).
    temporary = os.path.join(directory, f".{os.path.basename(path)[:180]}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            _write_archive(handle, tree, arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    _fsync_directory(directory)


class _Reader:
    """Decodes the tree of an open archive, reading each array when the tree reaches it."""

    def __init__(self, archive: zipfile.ZipFile, path: str, return_numpy: bool) -> None:
        self.archive, self.path, self.return_numpy = archive, path, return_numpy

    def corrupt(self, detail: str) -> ValueError:
        return ValueError(f"minidp.load: {self.path!r} is corrupted or truncated ({detail}); re-create the "
                          "checkpoint or use an earlier one")

    def array(self, index: Any) -> numpy.ndarray:
        if not isinstance(index, int):
            raise self.corrupt(f"bad array reference {index!r}")
        try:
            with self.archive.open(_array_name(index)) as entry:
                array = numpy.lib.format.read_array(entry, allow_pickle=False)
                if entry.read(1):
                    raise self.corrupt(f"trailing bytes after {_array_name(index)}")
        except KeyError:
            raise self.corrupt(f"missing {_array_name(index)}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
            raise self.corrupt(str(error)) from None
        except ValueError as error:
            if str(error).startswith("minidp.load"):
                raise
            raise self.corrupt(f"{_array_name(index)}: {error}") from None
        return array

    def stored(self, node: list) -> numpy.ndarray:
        """The array a "tensor", "ndarray" or "scalar" node refers to, in its dtype."""
        array = self.array(node[1] if len(node) > 1 else None)
        if len(node) == 3:
            if node[2] != "bfloat16" or array.dtype != numpy.uint16:
                raise self.corrupt(f"bad dtype note {node[2]!r:.40} for {array.dtype} data")
            array = array.view(backend.BFLOAT16)
        return array

    def decode(self, node: Any) -> Any:
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise self.corrupt(f"malformed structure node {node!r:.80}")
        tag = node[0]
        if tag == "none":
            return None
        if tag in ("bool", "int", "float", "str") and len(node) == 2:
            return node[1]
        if tag == "tensor":
            array = self.stored(node)
            return array if self.return_numpy else to_tensor(array)
        if tag == "ndarray":
            return self.stored(node)
        if tag == "scalar":
            return self.stored(node)[()]
        if tag == "list":
            return [self.decode(v) for v in node[1]]
        if tag == "tuple":
            return tuple(self.decode(v) for v in node[1])
        if tag == "dict":
            try:
                return {self.decode(k): self.decode(v) for k, v in node[1]}
            except TypeError:
                raise self.corrupt("a dict key that cannot be a key") from None
        raise self.corrupt(f"unknown structure tag {tag!r}")


def load(path: Any, return_numpy: bool = False) -> Any:
    """Read what :func:`save` wrote. Tensors come back as tensors at the current place (NumPy
    arrays with ``return_numpy=True``), NumPy arrays as NumPy arrays, other values as saved.

    Raises FileNotFoundError for a missing file and ValueError for a file that is not a
    minidp checkpoint or is truncated or corrupted; the message names the path.
    """
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"minidp.load: path must be a string or os.PathLike, got {type(path).__name__}") from None
    if not os.path.exists(path):
        raise FileNotFoundError(f"minidp.load: no checkpoint at {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"minidp.load: {path!r} is a directory, not a checkpoint file")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError(f"minidp.load: {path!r} is not a minidp checkpoint, or it is truncated (no valid "
                         "archive directory at its end)") from None
    with archive:
        reader = _Reader(archive, path, return_numpy)
        try:
            meta = json.loads(archive.read(_META).decode("utf-8"))
        except KeyError:
            raise ValueError(f"minidp.load: {path!r} is an archive but not a minidp checkpoint (it has no "
                             f"{_META}); was it written by another program?") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise reader.corrupt(str(error)) from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError(f"minidp.load: {path!r} is not a minidp checkpoint (format marker missing)")
        if meta.get("version") != VERSION:
            raise ValueError(f"minidp.load: {path!r} has checkpoint format version {meta.get('version')!r}; "
                             f"this minidp reads version {VERSION}")
        return reader.decode(meta.get("tree"))
