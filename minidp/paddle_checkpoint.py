"""Reading checkpoints that Paddle's ``paddle.save`` wrote (``.pdparams``, ``.pdopt``, ...).

Those files are pickles of dicts of NumPy arrays. Unpickling can run any code a file names,
so they are read with an unpickler that admits only what such a checkpoint needs -- the
containers and numbers pickle builds by itself, plus NumPy's array, scalar and dtype
reconstruction (never an object dtype), ``collections.OrderedDict`` and the latin-1 decoding
protocol 2 uses for bytes -- and refuses everything else before calling it, as
``torch.load(weights_only=True)`` does. NumPy's own reconstruction trusts its input (a crafted
dtype or array state can crash the interpreter), so arrays, dtypes and scalars are rebuilt from
checked descriptions instead; the pickled ``numpy.ndarray`` cannot be called. What a file can
make the reader hold is bounded by its size: each array is built (and made a tensor) once however
often the pickle refers to it, the arrays together hold at most the file's bytes, and ``str`` of
a container is refused. minidp's own checkpoints never use pickle (see :mod:`minidp.serialization`).
"""

from __future__ import annotations

import collections
import math
import pickle
from collections.abc import Callable
from typing import Any, BinaryIO, ClassVar

import numpy

from .ops.creation import to_tensor

PICKLE_MAGIC = b"\x80"

# Paddle's bookkeeping entry that maps structured names to parameter names; paddle.load drops it
# unless asked to keep it (keep_name_table=True).
_STRUCTURE_KEY = "StructuredToParameterName@@"
# With pickle protocols 2 and 3 Paddle splits arrays over 1 GiB into slices and records here how
# to join them: {name: {"OriginShape": shape, "slices": [slice names]}}.
_BIG_ARRAY_KEY = "UnpackBigParamInfor@@"


class _RefusedGlobal(pickle.UnpicklingError):
    """Something outside what a checkpoint needs: carries its name for the user's message."""


class _Malformed(ValueError):
    """A pickle whose parts are admitted but do not fit together as a checkpoint's."""


class _ArrayType:
    """What the pickle's ``numpy.ndarray`` global becomes: a name ``_reconstruct`` accepts, not a
    class a pickle could call to allocate an array of any shape."""


_NDARRAY = _ArrayType()


class _PendingDtype:
    """A dtype as a pickle describes it: ``numpy.dtype(*args)``, then a state. NumPy's own
    ``dtype.__setstate__`` trusts its input (crafted flags crash the interpreter), so it is never
    called: the state must equal the one NumPy gives the dtype the arguments name."""

    def __init__(self, *args: Any) -> None:
        self.named = numpy.dtype(*args)
        if self.named.hasobject:
            raise _RefusedGlobal(f"an object dtype ({self.named}: arrays of Python objects are not weights)")
        self.state, self.resolved = None, None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def dtype(self) -> numpy.dtype:
        if self.resolved is None:
            dtype = self.named
            if isinstance(self.state, tuple) and len(self.state) > 1 and isinstance(self.state[1], bytes):
                # A Python 2 pickle read with encoding="bytes" (CIFAR's batches) has the byte order as bytes.
                self.state = (self.state[0], self.state[1].decode("latin1"), *self.state[2:])
            if isinstance(self.state, tuple) and len(self.state) > 1 and self.state[1] in ("<", ">"):
                dtype = dtype.newbyteorder(self.state[1])
            if self.state is not None and dtype.__reduce__()[2] != self.state:
                raise _Malformed(f"the state of dtype {dtype} is not NumPy's ({self.state!r:.80})")
            self.resolved = dtype
        return self.resolved


def _checked_dtype(dtype: Any) -> numpy.dtype:
    if not isinstance(dtype, _PendingDtype):
        raise _Malformed(f"{type(dtype).__name__} where a dtype belongs")
    return dtype.dtype()


class _PendingArray:
    """An array as a pickle describes it: ``_reconstruct(ndarray, ...)``, then the state
    ``(version, shape, dtype, fortran_order, data)``. ``ndarray.__setstate__`` is never called on
    pickled input: the state is checked -- the data exactly dtype x shape bytes -- and kept; the
    array is built from a copy of the data once the whole pickle is read (see :class:`_Arrays`)."""

    def __init__(self, subtype: Any, *_placeholder_shape_and_typecode: Any) -> None:
        if subtype is not _NDARRAY:
            raise _RefusedGlobal(f"array reconstruction of {type(subtype).__name__} (only numpy.ndarray)")
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        if self.state is not None or not (isinstance(state, tuple) and len(state) == 5):
            raise _Malformed(f"an array state that is not (version, shape, dtype, order, data): {state!r:.80}")
        _, shape, dtype, fortran_order, data = state
        dtype = _checked_dtype(dtype)
        if not (
            isinstance(shape, tuple)
            and all(type(n) is int and n >= 0 for n in shape)
            and isinstance(fortran_order, bool)
            and isinstance(data, bytes)
        ):
            raise _Malformed(f"an array state with a bad shape, order or data: {state!r:.80}")
        if len(data) != math.prod(shape) * dtype.itemsize:
            raise _Malformed(f"an array of {dtype}{list(shape)!s:.60} with {len(data)} bytes of data")
        self.state = (shape, dtype, fortran_order, data)

    def build(self) -> numpy.ndarray:
        shape, dtype, fortran_order, data = self.state
        return numpy.frombuffer(data, dtype).reshape(shape, order="F" if fortran_order else "C").copy()


def _scalar(dtype: Any, data: Any) -> numpy.generic:
    """How pickles rebuild a NumPy scalar (``numpy.core.multiarray.scalar(dtype, data)``), checked."""
    dtype = _checked_dtype(dtype)
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise _Malformed(f"a {dtype} scalar with {type(data).__name__} data of the wrong size")
    return numpy.frombuffer(data, dtype)[0]


def _bytes(*args: Any) -> bytes:
    """``bytes`` for pickles: never ``bytes(n)``, which would allocate n bytes the file does not hold."""
    if args and isinstance(args[0], int):
        raise _RefusedGlobal(f"bytes({args[0]!r:.20}) (zero-filled bytes of a requested size)")
    return bytes(*args)


def _str(*args: Any) -> str:
    """``str`` for pickles: never of a container, whose text repeats every part the pickle shares
    (a few nested shared lists make text exponentially longer than the file)."""
    if args and not isinstance(args[0], (str, bytes, int, float, complex)):
        raise _RefusedGlobal(f"str of a {type(args[0]).__name__} (text of any length from a small file)")
    return str(*args)


def _latin1_bytes(text: str, encoding: str) -> bytes:
    """How protocol-2 pickles rebuild ``bytes`` (``_codecs.encode(text, 'latin1')``); no other codec."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise _RefusedGlobal(f"_codecs.encode with codec {encoding!r} (protocol-2 pickles use latin1 for bytes)")
    return text.encode("latin1")


def _allowed_globals() -> dict:
    """``(module, name) -> callable`` for every global a Paddle checkpoint may name."""
    allowed: dict = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("numpy", "ndarray"): _NDARRAY,
        ("numpy", "dtype"): _PendingDtype,
        ("_codecs", "encode"): _latin1_bytes,
    }
    for builtin in (tuple, list, dict, set, frozenset, int, float, complex, bool, _str, _bytes):
        name = builtin.__name__.strip("_")
        allowed[("builtins", name)] = builtin
        allowed[("__builtin__", name)] = builtin  # protocol-2 files written by Python 2
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = _PendingArray
        allowed[(module, "scalar")] = _scalar
    return allowed


_ALLOWED: dict = _allowed_globals()


class _BoundedFile:
    """The checkpoint as the unpickler reads it: a read asking for more bytes than the file has
    left (pickle opcodes carry their own lengths) is refused before anything is allocated."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.position = handle, handle.tell()
        self.size = handle.seek(0, 2)
        handle.seek(self.position)

    def claim(self, size: int) -> None:
        if size > self.size - self.position:
            raise _Malformed(f"a record of {size} bytes where only {self.size - self.position} remain")

    def read(self, size: int = -1) -> bytes:
        if size >= 0:
            self.claim(size)
        data = self.handle.read(size)
        self.position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        self.claim(len(buffer))
        count = self.handle.readinto(buffer)
        self.position += count
        return count

    def readline(self) -> bytes:
        line = self.handle.readline()
        self.position += len(line)
        return line


class _RestrictedUnpickler(pickle._Unpickler):
    """An unpickler whose only globals are :data:`_ALLOWED`. It is Python's own implementation:
    its memo is a dict, where the C unpickler's table grows to whatever index a pickle names."""

    dispatch: ClassVar[dict] = dict(pickle._Unpickler.dispatch)

    def __init__(self, handle: BinaryIO, encoding: str = "ASCII") -> None:
        self.source = _BoundedFile(handle)
        super().__init__(self.source, encoding=encoding)

    def find_class(self, module: str, name: str) -> Callable:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise _RefusedGlobal(f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise _RefusedGlobal(f"persistent id {pid!r:.60}")

    def refuse_bytearray(self) -> None:
        """Protocol 5's BYTEARRAY8 (Paddle never writes it) would allocate its length before reading."""
        raise _RefusedGlobal("a bytearray (pickle protocol 5)")

    dispatch[pickle.BYTEARRAY8[0]] = refuse_bytearray


_KEEP = object()


def _convert(obj: Any, convert: Callable[[Any], Any]) -> tuple:
    """``(obj with each part p replaced by convert(p) where that is not _KEEP, number replaced)``.

    Containers are rebuilt, each once however often the pickle shares it (a walk along every path
    could take exponential time); a container inside itself is refused.
    """
    done: dict = {}
    active: set = set()
    replaced = 0

    def walk(part: Any) -> Any:
        nonlocal replaced
        new = convert(part)
        if new is not _KEEP:
            replaced += 1
            return new
        if not isinstance(part, (dict, list, tuple, set, frozenset)):
            return part
        key = id(part)
        if key in done:
            return done[key]
        if key in active:
            raise _Malformed("a container that contains itself")
        active.add(key)
        if isinstance(part, dict):
            new = type(part)((walk(k), walk(v)) for k, v in part.items())
        else:
            new = type(part)(walk(v) for v in part)
        active.discard(key)
        done[key] = new
        return new

    return walk(obj), replaced


class _Arrays:
    """``_convert``'s function that turns the pending parts of a pickle into arrays and dtypes.

    Each pending array is built once, however often the pickle refers to it. A pickle can still
    name one stored ``bytes`` as the data of many arrays, each costing the file a few bytes; in a
    checkpoint ``paddle.save`` wrote every array's data is stored once, so the arrays built may
    hold at most as many bytes as the file (``limit``): more is refused before it is allocated.
    """

    def __init__(self, limit: int) -> None:
        self.limit, self.held = limit, 0
        self.built: dict = {}

    def __call__(self, part: Any) -> Any:
        if isinstance(part, _PendingArray):
            if part.state is None:
                raise _Malformed("an array without its state")
            if id(part) not in self.built:
                self.held += len(part.state[3])
                if self.held > self.limit:
                    raise _Malformed(
                        f"arrays of at least {self.held} bytes, more than the file's {self.limit} (arrays "
                        "sharing stored data: a checkpoint stores each array's data once)"
                    )
                self.built[id(part)] = (part, part.build())
            return self.built[id(part)][1]
        if isinstance(part, _PendingDtype):
            return part.dtype()
        if part is _NDARRAY:
            raise _Malformed("the numpy.ndarray class as a value")
        return _KEEP


def _once(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` applied once per object: an array the pickle shares becomes one tensor, not a copy per reference."""
    done: dict = {}

    def convert_once(value: Any) -> Any:
        if id(value) not in done:
            done[id(value)] = (value, convert(value))
        return done[id(value)][1]

    return convert_once


def _is_tensor_tuple(obj: Any) -> bool:
    """How Paddle pickles a Tensor outside a state dict: ``(name, array)``."""
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], numpy.ndarray)


def _join_big_arrays(result: dict) -> None:
    """Put back together the arrays Paddle split into slices (see ``_BIG_ARRAY_KEY``), in place.
    Each slice is a distinct array the file paid for (:class:`_Arrays`), so the joined arrays
    hold no more bytes than the slices."""
    plan = result.pop(_BIG_ARRAY_KEY)
    joined: dict = {}  # id -> slice: one array named as many slices would join to any size
    try:
        for name, info in plan.items():
            parts = [result.pop(part) for part in info["slices"]]
            for part in parts:
                if id(part) in joined:
                    raise ValueError("it joins one array more than once")
                joined[id(part)] = part
            result[name] = numpy.concatenate(parts).reshape(info["OriginShape"])
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise _Malformed(f"a malformed {_BIG_ARRAY_KEY} entry ({type(error).__name__}: {error})") from None


def _as_paddle_loads(result: Any, return_numpy: bool, keep_name_table: bool) -> Any:
    """Paddle's rules for what becomes a tensor: in a layer's state dict (it carries Paddle's name
    table), the listed arrays; elsewhere the ``(name, array)`` tensor tuples if there are any,
    otherwise every array. ``return_numpy`` keeps arrays (tensor tuples become their arrays)."""
    array = (lambda a: a) if return_numpy else _once(to_tensor)
    if isinstance(result, dict) and _STRUCTURE_KEY in result:
        table = result[_STRUCTURE_KEY] if keep_name_table else result.pop(_STRUCTURE_KEY)
        if not isinstance(table, dict):
            raise _Malformed(f"a {_STRUCTURE_KEY} entry that is a {type(table).__name__}, not a dict")
        for key in table:
            if isinstance(result.get(key), numpy.ndarray):
                result[key] = array(result[key])
        return result
    converted, tensors = _convert(result, lambda part: array(part[1]) if _is_tensor_tuple(part) else _KEEP)
    if tensors:
        return converted
    return _convert(result, lambda part: array(part) if isinstance(part, numpy.ndarray) else _KEEP)[0]


def load_paddle_checkpoint(path: str, handle: BinaryIO, return_numpy: bool, keep_name_table: bool = False) -> Any:
    """Unpickle the Paddle checkpoint at ``path`` (open as ``handle``) with only the allowed
    globals; arrays become tensors where ``paddle.load`` makes them tensors, unless ``return_numpy``.
    Every failure is a ValueError naming ``path``."""

    def as_paddle_loads(result: Any) -> Any:
        if isinstance(result, dict) and _BIG_ARRAY_KEY in result:
            _join_big_arrays(result)
        return _as_paddle_loads(result, return_numpy, keep_name_table)

    return _restricted_load(path, handle, "minidp.load", "checkpoint", "ASCII", as_paddle_loads)


def load_restricted_pickle(path: str, handle: BinaryIO, caller: str, kind: str, encoding: str = "ASCII") -> Any:
    """Unpickle the data file at ``path`` (open as ``handle``; a ``kind`` such as "CIFAR batch")
    with only the globals a Paddle checkpoint may name, NumPy arrays as arrays. ``encoding`` is
    pickle's, for Python 2 strings. Every failure is a ValueError naming ``caller`` and ``path``."""
    return _restricted_load(path, handle, caller, kind, encoding, lambda result: result)


def _restricted_load(
    path: str, handle: BinaryIO, caller: str, kind: str, encoding: str, finish: Callable[[Any], Any]
) -> Any:
    """The restricted unpickling both readers share, and its errors."""
    try:
        unpickler = _RestrictedUnpickler(handle, encoding)
        return finish(_convert(unpickler.load(), _Arrays(unpickler.source.size))[0])
    except _RefusedGlobal as refused:
        raise ValueError(
            f"{caller}: {path!r} is a pickle that refers to {refused}, which a Paddle "
            f"{kind} never needs; it was refused without running it. Only containers, "
            f"numbers, strings and NumPy arrays are read from pickled files"
        ) from None
    except _Malformed as error:
        raise ValueError(
            f"{caller}: {path!r} is a pickled Paddle {kind} holding {error}; it is "
            "truncated or corrupted, or was crafted"
        ) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        TypeError,
        ValueError,
        AttributeError,
        IndexError,
        KeyError,
        OverflowError,
        MemoryError,
        RecursionError,
    ) as error:
        raise ValueError(
            f"{caller}: {path!r} looks like a pickled Paddle {kind} but cannot be read "
            f"({type(error).__name__}: {error}); it may be truncated or corrupted"
        ) from None
