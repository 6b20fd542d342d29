"""save/load: checkpoints as NumPy arrays plus a JSON description of the structure, never pickle.

``load`` also reads Paddle's pickled checkpoints (``.pdparams``/``.pdopt``), through the
restricted unpickler of :mod:`minidp.paddle_checkpoint`.

Format (version 2). A checkpoint is a ZIP archive of stored (uncompressed) entries: one
``arrays/<i>.npy`` file per array, written and read with ``allow_pickle=False``, and
``minidp.json``, the manifest -- a format marker, the version, the SHA-256 of each array entry
(``"sha256"``, indexed like the entries) and the object tree, where each tensor or array is a
reference to one entry. Every entry is referenced exactly once.

Loading trusts nothing in the file and bounds what it can cost before allocating anything:
compressed, encrypted, duplicated, overlapping, missing or unlisted entries are refused; the
manifest is at most 32 MiB and 200 levels deep (checked before it is parsed); each array's NPY
header (dtype x shape) must match the entry's size, which the file's own size bounds; an entry
referenced twice is refused; each array's SHA-256 is checked, so an altered or swapped entry is
caught, and ZIP's CRC-32 is checked on the way. Every failure is a :class:`CheckpointError` (a
ValueError) naming the file and the entry (and the place in the object tree). Nothing read can
run code.

Compatibility: version-1 checkpoints (the same layout without the hashes) still load, with
every check above except the hash comparison; saving again writes version 2.

``save`` writes to a temporary file in the target directory (``.<name>.<host>.<pid>.<random>.tmp``),
flushes and fsyncs it, then renames it over the final name with ``os.replace`` (atomic on POSIX
and Windows), so a crash leaves either the old checkpoint or the new one, never a truncated one.
A writer killed mid-save cannot remove its temporary file: the next ``save`` to the same target
removes those whose writer, a process on the same host, no longer exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import socket
import struct
import tokenize
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy

from .core import backend
from .core.tensor import Tensor
from .ops.creation import to_tensor
from .paddle_checkpoint import PICKLE_MAGIC, load_paddle_checkpoint

__all__ = ["CheckpointError", "load", "save"]

FORMAT = "minidp-checkpoint"
VERSION = 2
_READABLE_VERSIONS = (1, 2)
_META = "minidp.json"
# Bounds on the manifest, checked before it is parsed: a state dict with 100,000 tensors needs
# about 15 MiB; a checkpoint's tree is rarely more than ten levels deep.
MAX_MANIFEST_BYTES = 32 << 20
MAX_MANIFEST_DEPTH = 200
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# Arrays are read (and the manifest's depth is measured) this many bytes at a time.
_CHUNK_BYTES = 16 << 20
# What zipfile, NumPy's header parser and json raise on malformed input; turned into CheckpointError.
_MALFORMED = (
    zipfile.BadZipFile,
    zlib.error,
    OSError,
    EOFError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    struct.error,
    NotImplementedError,
    RecursionError,
    UnicodeDecodeError,
    SyntaxError,
    tokenize.TokenError,
)
_CORRUPT = (
    "the checkpoint is corrupted, truncated or was not written by minidp.save: re-create it or use an earlier one"
)


class CheckpointError(ValueError):
    """A file ``minidp.load`` refuses; the message names the file and the entry at fault."""


def _array_name(index: int) -> str:
    return f"arrays/{index}.npy"


def _checked(array: numpy.ndarray, where: str) -> numpy.ndarray:
    """``array`` itself, after refusing object arrays (they could only be stored by pickling)."""
    if array.dtype.hasobject:
        raise TypeError(
            f"minidp.save: the array at {where} holds Python objects (dtype object); "
            "only numeric, boolean and string arrays can be saved"
        )
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
                raise TypeError(
                    f"minidp.save: dict key {key!r} at {where} is a {type(key).__name__}; keys "
                    "must be strings, numbers, booleans or None"
                )
            items.append([_encode(key, arrays, where), _encode(value, arrays, f"{where}[{key!r}]")])
        return ["dict", items]
    raise TypeError(
        f"minidp.save: cannot save {type(obj).__name__} at {where}; checkpoints hold tensors, "
        "NumPy arrays, numbers, strings, booleans, None and dicts/lists/tuples of them "
        "(save a layer's or optimizer's state_dict(), not the object)"
    )


class _HashingWriter:
    """A write-only file passing everything to ``target`` and hashing it on the way."""

    def __init__(self, target: BinaryIO) -> None:
        self.target, self.digest = target, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.target.write(data)


def _json_depth(text: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON ``text``, measured without parsing it
    (a parser would recurse once per level) in memory proportional to a chunk."""
    codes = numpy.frombuffer(_JSON_STRING.sub(b'""', text), numpy.uint8)
    deepest = level = 0
    for start in range(0, codes.size, _CHUNK_BYTES):
        part = codes[start : start + _CHUNK_BYTES]
        steps = (part == ord("[")).astype(numpy.int8) + (part == ord("{")) - (part == ord("]")) - (part == ord("}"))
        levels = numpy.cumsum(steps, dtype=numpy.int64) + level
        deepest, level = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def _manifest_problem(text: bytes) -> str | None:
    """Why the manifest ``text`` exceeds the bounds every reader enforces, or None."""
    if len(text) > MAX_MANIFEST_BYTES:
        return f"the manifest has {len(text)} bytes, more than the {MAX_MANIFEST_BYTES} allowed"
    depth = _json_depth(text)
    if depth > MAX_MANIFEST_DEPTH:
        return f"the manifest is nested {depth} levels deep, more than the {MAX_MANIFEST_DEPTH} allowed"
    return None


def _write_archive(handle: BinaryIO, tree: list, arrays: list) -> None:
    digests = []
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for index, array in enumerate(arrays):
            with archive.open(_array_name(index), "w", force_zip64=True) as entry:
                writer = _HashingWriter(entry)
                numpy.lib.format.write_array(writer, array, allow_pickle=False)
            digests.append(writer.digest.hexdigest())
        meta = json.dumps({"format": FORMAT, "version": VERSION, "sha256": digests, "tree": tree}).encode()
        problem = _manifest_problem(meta)
        if problem:
            raise ValueError(f"minidp.save: cannot save this object: {problem}; save a flatter structure")
        archive.writestr(_META, meta)


def _host_tag() -> str:
    """This host's name as it appears in temporary file names (letters, digits and dashes)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _temporary_prefix(path: str) -> str:
    """The start of the temporary names of saves to ``path`` from this host (the final name's
    start: a name near the 255-byte limit would not leave room for the suffix)."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)[:160]}.{_host_tag()}.")


def _process_exists(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (assumed so where POSIX signals are unavailable)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists but belongs to another user
        return True
    return True


def _remove_stale_temporaries(path: str) -> None:
    """Delete the temporary files that earlier saves to ``path`` left behind when their writer was
    killed. Only files of this host's processes that no longer exist are removed: a live writer's
    file, and a file written from another host sharing the directory, are kept."""
    prefix = _temporary_prefix(path)
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"([1-9][0-9]{0,8})\.[0-9a-f]{8}\.tmp")
    for name in os.listdir(os.path.dirname(path)):
        match = pattern.fullmatch(name)
        if match and not _process_exists(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):  # another saver removed it first
                os.remove(os.path.join(os.path.dirname(path), name))


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
    to ``path`` atomically. Missing parent directories are created; temporary files that killed
    writers left for the same target are removed first.

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
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    _remove_stale_temporaries(path)
    temporary = f"{_temporary_prefix(path)}{os.getpid()}.{secrets.token_hex(4)}.tmp"
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


class _HashingReader:
    """A read-only file passing on what ``source`` gives, hashing and counting it."""

    def __init__(self, source: BinaryIO) -> None:
        self.source, self.digest, self.count = source, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        self.count += len(data)
        return data


class _Reader:
    """Checks an open archive's entries and manifest, then decodes the tree, reading each array
    (after checking its size, before allocating it) when the tree reaches it."""

    def __init__(self, archive: zipfile.ZipFile, path: str, return_numpy: bool) -> None:
        self.archive, self.path, self.return_numpy = archive, path, return_numpy
        self.used: set = set()
        self.members = self.checked_members()
        self.digests: list | None = None
        self.count = 0

    def refuse(self, entry: str, detail: str, where: str = "", advice: str = _CORRUPT) -> CheckpointError:
        place = f" at {where}" if where else ""
        return CheckpointError(f"minidp.load: {self.path!r}, entry {entry!r}{place}: {detail}; {advice}")

    @contextlib.contextmanager
    def reading(self, entry: str, where: str = "") -> Any:
        """Turn what zipfile, json or NumPy raise while reading ``entry`` into a CheckpointError."""
        try:
            yield
        except CheckpointError:
            raise
        except _MALFORMED as error:
            raise self.refuse(entry, f"{type(error).__name__}: {error}", where) from None

    def checked_members(self) -> dict:
        """``name -> ZipInfo``, after checking that the entries are stored, unencrypted, unique and
        together no larger than the file (so overlapping entries cannot multiply its bytes)."""
        members = {}
        claimed, available = 0, os.path.getsize(self.path)
        for info in self.archive.infolist():
            name = info.filename
            if name in members:
                raise self.refuse(name, "the archive holds two entries of this name")
            if info.flag_bits & 0x1:
                raise self.refuse(name, "the entry is encrypted")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                raise self.refuse(
                    name,
                    f"the entry is compressed (method {info.compress_type}); minidp stores entries "
                    "uncompressed so that their sizes can be checked before anything is read",
                )
            claimed += info.file_size
            if claimed > available:
                raise self.refuse(
                    name,
                    f"the entries up to this one claim {claimed} bytes, more than the file's "
                    f"{available} (entries overlap)",
                )
            members[name] = info
        return members

    def manifest(self) -> Any:
        """The checked manifest's tree; sets the digests and the number of array entries."""
        info = self.members.get(_META)
        if info is None:
            raise self.refuse(
                _META,
                "the entry is missing, so this archive is not a minidp checkpoint",
                advice="was it written by another program?",
            )
        if info.file_size > MAX_MANIFEST_BYTES:
            raise self.refuse(
                _META, f"the manifest has {info.file_size} bytes, more than the {MAX_MANIFEST_BYTES} allowed"
            )
        with self.reading(_META):
            text = self.archive.read(info)
            problem = _manifest_problem(text)
            if problem:
                raise self.refuse(_META, problem)
            meta = json.loads(text.decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise self.refuse(
                _META,
                "the format marker is missing, so this is not a minidp checkpoint",
                advice="was it written by another program?",
            )
        version = meta.get("version")
        if version not in _READABLE_VERSIONS:
            raise self.refuse(
                _META,
                f"checkpoint format version {version!r:.20} is not one this minidp reads "
                f"(versions {', '.join(map(str, _READABLE_VERSIONS))})",
                advice="load it with the minidp version that wrote it",
            )
        self.count = len(self.members) - 1
        if version >= 2:
            self.digests = meta.get("sha256")
            if not (
                isinstance(self.digests, list)
                and all(isinstance(d, str) and _SHA256_HEX.fullmatch(d) for d in self.digests)
            ):
                raise self.refuse(_META, "the manifest's sha256 list is missing or malformed")
            self.count = len(self.digests)
        expected = {_META, *(_array_name(index) for index in range(self.count))}
        for name in sorted(set(self.members) ^ expected):
            reason = "is not listed in the manifest" if name in self.members else "is missing"
            raise self.refuse(name, f"the entry {reason}")
        return meta.get("tree")

    def array(self, index: Any, where: str) -> numpy.ndarray:
        """Array entry ``index``, read once: header checked against the entry's size, then data, then hash."""
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.count:
            raise self.refuse(_META, f"bad array reference {index!r:.40}", where)
        name = _array_name(index)
        if index in self.used:
            raise self.refuse(name, "the entry is referenced a second time (each array is stored once)", where)
        self.used.add(index)
        info = self.members[name]
        with self.reading(name, where), self.archive.open(info) as raw:
            entry = _HashingReader(raw)
            version = numpy.lib.format.read_magic(entry)
            if version not in ((1, 0), (2, 0)):
                raise self.refuse(name, f"NPY format version {version} (minidp writes 1.0 and 2.0)", where)
            read_header = (
                numpy.lib.format.read_array_header_1_0 if version == (1, 0) else numpy.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(entry)
            if dtype.hasobject:
                raise self.refuse(name, f"dtype {dtype} holds Python objects, which are never unpickled", where)
            if any(n < 0 for n in shape):
                raise self.refuse(name, f"the header declares shape {list(shape)!s:.60}, with a negative size", where)
            count = math.prod(shape)
            size, held = count * dtype.itemsize, info.file_size - entry.count
            if size != held:
                raise self.refuse(
                    name,
                    f"the header declares {dtype}{list(shape)!s:.60} ({size} bytes) but the entry "
                    f"holds {held} bytes of data",
                    where,
                )
            array = numpy.empty(count, dtype)
            data = array.view(numpy.uint8) if size else array
            filled = 0
            while filled < size:
                chunk = entry.read(min(_CHUNK_BYTES, size - filled))
                if not chunk:
                    raise self.refuse(name, f"the data ends after {filled} of {size} bytes", where)
                data[filled : filled + len(chunk)] = numpy.frombuffer(chunk, numpy.uint8)
                filled += len(chunk)
            if self.digests is not None and entry.digest.hexdigest() != self.digests[index]:
                raise self.refuse(name, "the entry's SHA-256 differs from the manifest's (altered or swapped)", where)
            # Inside the checks: NumPy refuses more dimensions than it supports (64) here.
            return array.reshape(shape[::-1]).transpose() if fortran_order else array.reshape(shape)

    def stored(self, node: list, where: str) -> numpy.ndarray:
        """The array a "tensor", "ndarray" or "scalar" node refers to, in its dtype."""
        if len(node) not in (2, 3):
            raise self.refuse(_META, f"malformed array node {node!r:.80}", where)
        array = self.array(node[1], where)
        if len(node) == 3:
            if node[2] != "bfloat16" or array.dtype != numpy.uint16:
                raise self.refuse(_array_name(node[1]), f"bad dtype note {node[2]!r:.40} for {array.dtype} data", where)
            array = array.view(backend.BFLOAT16)
        return array

    def decode(self, node: Any, where: str) -> Any:
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise self.refuse(_META, f"malformed structure node {node!r:.80}", where)
        tag, body = node[0], node[1:]
        if tag == "none" and not body:
            return None
        if tag in _SCALAR_TYPES and len(body) == 1 and type(body[0]) in _SCALAR_TYPES[tag]:
            return body[0]
        if tag == "tensor":
            array = self.stored(node, where)
            if self.return_numpy:
                return array
            with self.reading(_array_name(node[1]), where):
                return to_tensor(array)
        if tag == "ndarray":
            return self.stored(node, where)
        if tag == "scalar":
            return self.stored(node, where)[()]
        if tag in ("list", "tuple") and len(body) == 1 and isinstance(body[0], list):
            items = [self.decode(value, f"{where}[{i}]") for i, value in enumerate(body[0])]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and len(body) == 1 and isinstance(body[0], list):
            return self.decode_dict(body[0], where)
        raise self.refuse(_META, f"malformed structure node {node!r:.80}", where)

    def decode_dict(self, pairs: list, where: str) -> dict:
        result = {}
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise self.refuse(_META, f"malformed dict item {pair!r:.80}", where)
            key = self.decode(pair[0], where)
            try:
                result[key] = self.decode(pair[1], f"{where}[{key!r}]")
            except TypeError:
                raise self.refuse(_META, f"a dict key that cannot be a key ({type(key).__name__})", where) from None
        return result

    def tree(self) -> Any:
        """The decoded object, after checking that every array entry was used."""
        result = self.decode(self.manifest(), "obj")
        unused = sorted(set(range(self.count)) - self.used)
        if unused:
            raise self.refuse(_array_name(unused[0]), "the entry is not referenced by the manifest's tree")
        return result


_SCALAR_TYPES = {"bool": (bool,), "int": (int,), "float": (float,), "str": (str,)}


def load(path: Any, return_numpy: bool = False, keep_name_table: bool = False) -> Any:
    """Read what :func:`save` wrote. Tensors come back as tensors at the current place (NumPy
    arrays with ``return_numpy=True``), NumPy arrays as NumPy arrays, other values as saved.

    A file written by Paddle's ``paddle.save`` (a pickle) is read as Paddle reads it -- arrays
    become tensors, unless ``return_numpy`` -- admitting only containers, numbers, strings and
    NumPy arrays; a pickle that names anything else is refused, unexecuted, with a ValueError.
    ``keep_name_table`` keeps the name table Paddle stores in a layer's state dict
    (``StructuredToParameterName@@``), as ``paddle.load`` does when asked.

    Raises FileNotFoundError for a missing file and ValueError (:class:`CheckpointError` for
    minidp's own format) for a file that is not a checkpoint, or is truncated, corrupted, altered
    or crafted; the message names the path and the entry. See the module docstring for the checks.
    """
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"minidp.load: path must be a string or os.PathLike, got {type(path).__name__}") from None
    if not os.path.exists(path):
        raise FileNotFoundError(f"minidp.load: no checkpoint at {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"minidp.load: {path!r} is a directory, not a checkpoint file")
    with open(path, "rb") as handle:
        if handle.read(1) == PICKLE_MAGIC:
            handle.seek(0)
            return load_paddle_checkpoint(path, handle, return_numpy, keep_name_table)
    try:
        archive = zipfile.ZipFile(path)
    except _MALFORMED as error:
        raise CheckpointError(
            f"minidp.load: {path!r} is not a minidp checkpoint, or it is truncated (its archive "
            f"directory cannot be read: {type(error).__name__}: {error})"
        ) from None
    with archive:
        return _Reader(archive, path, return_numpy).tree()
