"""How Python objects travel between ranks: a small typed binary format, pickle only on request.

The object collectives (``all_gather_object``, ``broadcast_object_list``,
``scatter_object_list``, ``send_object_list``/``recv_object_list``) turn objects into bytes
with :func:`encode_object` and back with :func:`decode_object`.

Why a format of our own and not pickle or JSON: unpickling bytes that arrive from the network
runs whatever code the sender chose, so any process that can reach a rank's port could take
over the job; minidp therefore never unpickles network data unless the program asks for it.
JSON is safe but cannot tell a tuple from a list, has no bytes, no integer dict keys, no NaN,
and would carry arrays as base64 text. The typed format below keeps each of those exactly,
moves arrays as their raw bytes, and decoding only ever builds the containers, numbers,
strings and arrays listed here.

What it carries (exact types, so nothing is silently turned into something else): ``None``,
``bool``, ``int`` (any size), ``float``, ``complex``, ``str``, ``bytes``, ``list``, ``tuple``,
``dict`` and ``collections.OrderedDict`` (keys of the hashable kinds above), NumPy arrays and
NumPy scalars of boolean or numeric dtype, and minidp Tensors (Parameters included; they
arrive as Tensors on the receiver's current device, keeping ``stop_gradient``). Anything else
raises ``TypeError`` naming the type and the opt-in.

The opt-in: ``minidp.distributed.set_object_serializer('pickle')`` makes this process send
pickles and accept them. Call it on every rank, and only when every peer is trusted.

Layout: one format byte (``T`` typed, ``P`` pickle), then the value. A typed value is a one-byte
tag followed by its body; lengths and counts are unsigned 64-bit little-endian:

====  ======================================================================================
tag   body
====  ======================================================================================
N     (None)         ``1``/``0`` True/False         i  length, signed little-endian bytes
f     float64        c  two float64 (real, imag)    s  length, UTF-8    b  length, raw bytes
l/t   count, items   d/o  count, key and value pairs (dict / OrderedDict)
a     array: dtype string (length, ASCII, e.g. ``<f4``), ndim, shape, raw C-order bytes
g     NumPy scalar: as ``a`` with ndim 0       x  Tensor: stop_gradient byte, then as ``a``
====  ======================================================================================
"""

from __future__ import annotations

import collections
import pickle
import struct
from typing import Any, Callable, Dict, List, Tuple

import numpy

from ...core import backend as array_backend
from ...core.tensor import Tensor

SERIALIZERS = ("typed", "pickle")
MAX_DEPTH = 100

_TYPED, _PICKLED = b"T", b"P"
_COUNT = struct.Struct("<Q")
_FLOAT = struct.Struct("<d")
_COMPLEX = struct.Struct("<dd")
_ARRAY_KINDS = "biufc"
_OPT_IN = "minidp.distributed.set_object_serializer('pickle')"

_serializer = "typed"


def set_object_serializer(name: str) -> None:
    """Choose how this process sends objects and which it accepts: ``'typed'`` or ``'pickle'``.

    ``'typed'`` (the default) sends the safe format of this module and refuses pickles;
    ``'pickle'`` sends pickles and accepts both. Set the same value on every rank.
    """
    global _serializer
    if name not in SERIALIZERS:
        raise ValueError(f"object serializer must be one of {SERIALIZERS}, got {name!r}")
    _serializer = name


def get_object_serializer() -> str:
    """The serializer :func:`set_object_serializer` chose (``'typed'`` by default)."""
    return _serializer


def encode_object(obj: Any) -> bytes:
    """``obj`` as bytes in the current serializer's format."""
    if _serializer == "pickle":
        return _PICKLED + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    parts: List[bytes] = [_TYPED]
    _encode(obj, parts, 0)
    return b"".join(parts)


def decode_object(data: bytes, sender: str = "a peer") -> Any:
    """The object that :func:`encode_object` turned into ``data`` (``sender`` names the source
    in errors)."""
    kind, body = data[:1], memoryview(data)[1:]
    if kind == _PICKLED:
        if _serializer != "pickle":
            raise ValueError(
                f"{sender} sent a pickled object, which this rank refuses because unpickling "
                f"network data can run arbitrary code; if every rank is trusted, call {_OPT_IN} "
                "on every rank"
            )
        return pickle.loads(body)
    if kind != _TYPED:
        raise ValueError(f"the object bytes from {sender} are not in minidp's object format")
    reader = _Reader(body, sender)
    value = reader.value(0)
    if reader.offset != len(body):
        raise ValueError(
            f"the object bytes from {sender} have {len(body) - reader.offset} "
            "trailing bytes; the ranks may run different minidp versions"
        )
    return value


# --- encoding ---------------------------------------------------------------------------------
def _count(n: int) -> bytes:
    return _COUNT.pack(n)


def _encode_array(array: numpy.ndarray, parts: List[bytes], what: str) -> None:
    if array.dtype.kind not in _ARRAY_KINDS:
        raise TypeError(
            f"cannot send {what} of dtype {array.dtype}: the object format carries "
            f"boolean and numeric arrays only; to send it anyway, call {_OPT_IN}"
        )
    dtype = array.dtype.str.encode("ascii")
    parts += [_count(len(dtype)), dtype, _count(array.ndim)]
    parts += [_count(n) for n in array.shape]
    parts.append(numpy.ascontiguousarray(array).tobytes())


def _encode(obj: Any, parts: List[bytes], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"cannot send an object nested deeper than {MAX_DEPTH} levels (or one that contains itself)")
    kind = type(obj)
    if obj is None:
        parts.append(b"N")
    elif kind is bool:
        parts.append(b"1" if obj else b"0")
    elif kind is int:
        raw = obj.to_bytes(obj.bit_length() // 8 + 1, "little", signed=True)
        parts += [b"i", _count(len(raw)), raw]
    elif kind is float:
        parts += [b"f", _FLOAT.pack(obj)]
    elif kind is complex:
        parts += [b"c", _COMPLEX.pack(obj.real, obj.imag)]
    elif kind is str:
        raw = obj.encode("utf-8")
        parts += [b"s", _count(len(raw)), raw]
    elif kind is bytes:
        parts += [b"b", _count(len(obj)), obj]
    elif kind is list or kind is tuple:
        parts += [b"l" if kind is list else b"t", _count(len(obj))]
        for item in obj:
            _encode(item, parts, depth + 1)
    elif kind is dict or kind is collections.OrderedDict:
        parts += [b"d" if kind is dict else b"o", _count(len(obj))]
        for key, value in obj.items():
            _encode(key, parts, depth + 1)
            _encode(value, parts, depth + 1)
    elif kind is numpy.ndarray:
        parts.append(b"a")
        _encode_array(obj, parts, "a NumPy array")
    elif isinstance(obj, numpy.generic):
        parts.append(b"g")
        _encode_array(numpy.asarray(obj), parts, "a NumPy scalar")
    elif isinstance(obj, Tensor):
        parts += [b"x", b"1" if obj.stop_gradient else b"0"]
        _encode_array(array_backend.to_host(obj._data), parts, "a Tensor")
    else:
        raise TypeError(
            f"cannot send an object of type {kind.__module__}.{kind.__qualname__}: minidp's "
            "object format carries None, bool, int, float, complex, str, bytes, list, tuple, "
            "dict, OrderedDict, NumPy arrays and scalars and Tensors; convert it to those, or, "
            f"if every rank is trusted, call {_OPT_IN} to send pickles"
        )


# --- decoding ---------------------------------------------------------------------------------
class _Reader:
    """Walks typed bytes; every length is checked against what is left, so corrupt or hostile
    input raises ``ValueError`` and never makes the reader allocate more than it was sent."""

    def __init__(self, data: memoryview, sender: str) -> None:
        self.data = data
        self.offset = 0
        self.sender = sender
        self._decoders: Dict[bytes, Callable[[int], Any]] = {
            b"N": lambda depth: None,
            b"1": lambda depth: True,
            b"0": lambda depth: False,
            b"i": self._int,
            b"f": self._float,
            b"c": self._complex,
            b"s": self._str,
            b"b": self._bytes,
            b"l": self._list,
            b"t": self._tuple,
            b"d": self._dict,
            b"o": self._ordered_dict,
            b"a": self._array,
            b"g": self._scalar,
            b"x": self._tensor,
        }

    def _fail(self, problem: str) -> ValueError:
        return ValueError(f"the object bytes from {self.sender} are corrupt: {problem} at byte {self.offset + 1}")

    def take(self, n: int) -> memoryview:
        if n > len(self.data) - self.offset:
            raise self._fail(f"{n} bytes announced but only {len(self.data) - self.offset} left")
        chunk = self.data[self.offset : self.offset + n]
        self.offset += n
        return chunk

    def count(self) -> int:
        return _COUNT.unpack(self.take(_COUNT.size))[0]

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self._fail(f"nesting deeper than {MAX_DEPTH} levels")
        tag = bytes(self.take(1))
        decoder = self._decoders.get(tag)
        if decoder is None:
            raise self._fail(f"unknown tag {tag!r}")
        return decoder(depth)

    def _int(self, depth: int) -> int:
        return int.from_bytes(self.take(self.count()), "little", signed=True)

    def _float(self, depth: int) -> float:
        return _FLOAT.unpack(self.take(_FLOAT.size))[0]

    def _complex(self, depth: int) -> complex:
        return complex(*_COMPLEX.unpack(self.take(_COMPLEX.size)))

    def _str(self, depth: int) -> str:
        try:
            return str(self.take(self.count()), "utf-8")
        except UnicodeDecodeError as error:
            raise self._fail(f"invalid UTF-8 ({error.reason})") from None

    def _bytes(self, depth: int) -> bytes:
        return bytes(self.take(self.count()))

    def _items(self, depth: int) -> List[Any]:
        n = self.count()
        if n > len(self.data) - self.offset:  # every item takes at least one byte
            raise self._fail(f"{n} items announced")
        return [self.value(depth + 1) for _ in range(n)]

    def _list(self, depth: int) -> list:
        return self._items(depth)

    def _tuple(self, depth: int) -> tuple:
        return tuple(self._items(depth))

    def _pairs(self, depth: int) -> List[Tuple[Any, Any]]:
        n = self.count()
        if 2 * n > len(self.data) - self.offset:
            raise self._fail(f"{n} dict entries announced")
        pairs = []
        for _ in range(n):
            key = self.value(depth + 1)
            try:
                hash(key)
            except TypeError:
                raise self._fail(f"unhashable dict key of type {type(key).__name__}") from None
            pairs.append((key, self.value(depth + 1)))
        return pairs

    def _dict(self, depth: int) -> dict:
        return dict(self._pairs(depth))

    def _ordered_dict(self, depth: int) -> collections.OrderedDict:
        return collections.OrderedDict(self._pairs(depth))

    def _array(self, depth: int) -> numpy.ndarray:
        try:
            dtype = numpy.dtype(str(self.take(self.count()), "ascii"))
        except (TypeError, ValueError, UnicodeDecodeError):
            raise self._fail("an unreadable array dtype") from None
        if dtype.kind not in _ARRAY_KINDS:
            raise self._fail(f"an array of dtype {dtype}, which the format does not carry")
        ndim = self.count()
        if ndim > 64:
            raise self._fail(f"an array with {ndim} dimensions")
        shape = tuple(self.count() for _ in range(ndim))
        elements = 1
        for n in shape:
            elements *= n
        raw = self.take(elements * dtype.itemsize)
        return numpy.frombuffer(raw, dtype).reshape(shape).copy()

    def _scalar(self, depth: int) -> numpy.generic:
        array = self._array(depth)
        if array.ndim:
            raise self._fail("a NumPy scalar with a shape")
        return array[()]

    def _tensor(self, depth: int) -> Tensor:
        from ...ops.creation import to_tensor

        stop_gradient = bytes(self.take(1)) == b"1"
        return to_tensor(self._array(depth), stop_gradient=stop_gradient)
