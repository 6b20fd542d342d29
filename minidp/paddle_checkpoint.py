"""Reading checkpoints that Paddle's ``paddle.save`` wrote (``.pdparams``, ``.pdopt``, ...).

Those files are pickles of dicts of NumPy arrays. Unpickling can run any code a file names,
so they are read with an unpickler that admits only what such a checkpoint needs -- the
containers and numbers pickle builds by itself, plus NumPy's array, scalar and dtype
reconstruction (never an object dtype), ``collections.OrderedDict`` and the latin-1 decoding
protocol 2 uses for bytes -- and refuses everything else before calling it, as
``torch.load(weights_only=True)`` does. minidp's own checkpoints never use pickle (see :mod:`minidp.serialization`).
"""
from __future__ import annotations

import collections
import pickle
from typing import Any, BinaryIO, Callable

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


def _safe_dtype(*args: Any) -> numpy.dtype:
    """``numpy.dtype`` for the reconstruction of arrays, refusing object dtypes (they hold pickles)."""
    dtype = numpy.dtype(*args)
    if dtype.hasobject:
        raise _RefusedGlobal(f"an object dtype ({dtype}: arrays of Python objects are not weights)")
    return dtype


def _latin1_bytes(text: str, encoding: str) -> bytes:
    """How protocol-2 pickles rebuild ``bytes`` (``_codecs.encode(text, 'latin1')``); no other codec."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise _RefusedGlobal(f"_codecs.encode with codec {encoding!r} (protocol-2 pickles use latin1 for bytes)")
    return text.encode("latin1")


def _allowed_globals() -> dict:
    """``(module, name) -> callable`` for every global a Paddle checkpoint may name."""
    reconstruct = numpy.empty(0).__reduce__()[0]
    scalar = numpy.float32(0).__reduce__()[0]
    allowed: dict = {("collections", "OrderedDict"): collections.OrderedDict,
                     ("numpy", "ndarray"): numpy.ndarray, ("numpy", "dtype"): _safe_dtype,
                     ("_codecs", "encode"): _latin1_bytes}
    for builtin in (tuple, list, dict, set, frozenset, int, float, complex, bool, str, bytes):
        allowed[("builtins", builtin.__name__)] = builtin
        allowed[("__builtin__", builtin.__name__)] = builtin  # protocol-2 files written by Python 2
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = reconstruct
        allowed[(module, "scalar")] = scalar
    return allowed


_ALLOWED: dict = _allowed_globals()


class _RestrictedUnpickler(pickle.Unpickler):
    """An unpickler whose only globals are :data:`_ALLOWED`."""

    def find_class(self, module: str, name: str) -> Callable:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise _RefusedGlobal(f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise _RefusedGlobal(f"persistent id {pid!r:.60}")


def _is_tensor_tuple(obj: Any) -> bool:
    """How Paddle pickles a Tensor outside a state dict: ``(name, array)``."""
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], numpy.ndarray)


def _contains_tensor_tuple(obj: Any) -> bool:
    if _is_tensor_tuple(obj):
        return True
    if isinstance(obj, dict):
        return any(_contains_tensor_tuple(value) for value in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_contains_tensor_tuple(value) for value in obj)
    return False


def _convert(obj: Any, selects: Callable[[Any], bool], convert: Callable[[Any], Any]) -> Any:
    """``obj`` with every part that ``selects`` accepts replaced by ``convert(part)``."""
    if selects(obj):
        return convert(obj)
    if isinstance(obj, dict):
        return type(obj)((key, _convert(value, selects, convert)) for key, value in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_convert(value, selects, convert) for value in obj)
    return obj


def _join_big_arrays(result: dict, path: str) -> None:
    """Put back together the arrays Paddle split into slices (see ``_BIG_ARRAY_KEY``), in place."""
    plan = result.pop(_BIG_ARRAY_KEY)
    try:
        for name, info in plan.items():
            parts = [result.pop(part) for part in info["slices"]]
            result[name] = numpy.concatenate(parts).reshape(info["OriginShape"])
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"minidp.load: {path!r} has a malformed {_BIG_ARRAY_KEY} entry ({type(error).__name__}: "
                         f"{error}); the checkpoint is corrupted") from None


def _as_paddle_loads(result: Any, return_numpy: bool, keep_name_table: bool) -> Any:
    """Paddle's rules for what becomes a tensor: in a layer's state dict (it carries Paddle's name
    table), the listed arrays; elsewhere the ``(name, array)`` tensor tuples if there are any,
    otherwise every array. ``return_numpy`` keeps arrays (tensor tuples become their arrays)."""
    array = (lambda a: a) if return_numpy else to_tensor
    if isinstance(result, dict) and _STRUCTURE_KEY in result:
        table = result[_STRUCTURE_KEY] if keep_name_table else result.pop(_STRUCTURE_KEY)
        for key in table:
            if isinstance(result.get(key), numpy.ndarray):
                result[key] = array(result[key])
        return result
    if _contains_tensor_tuple(result):
        return _convert(result, _is_tensor_tuple, lambda pair: array(pair[1]))
    return _convert(result, lambda part: isinstance(part, numpy.ndarray), array)


def load_paddle_checkpoint(path: str, handle: BinaryIO, return_numpy: bool, keep_name_table: bool = False) -> Any:
    """Unpickle the Paddle checkpoint at ``path`` (open as ``handle``) with only the allowed
    globals; arrays become tensors where ``paddle.load`` makes them tensors, unless ``return_numpy``."""
    try:
        result = _RestrictedUnpickler(handle).load()
    except _RefusedGlobal as refused:
        raise ValueError(f"minidp.load: {path!r} is a pickle that refers to {refused}, which a Paddle "
                         "checkpoint never needs; it was refused without running it. Only containers, "
                         "numbers, strings and NumPy arrays are read from pickled checkpoints") from None
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError, IndexError,
            KeyError, OverflowError, MemoryError) as error:
        raise ValueError(f"minidp.load: {path!r} looks like a pickled Paddle checkpoint but cannot be read "
                         f"({type(error).__name__}: {error}); it may be truncated or corrupted") from None
    if isinstance(result, dict) and _BIG_ARRAY_KEY in result:
        _join_big_arrays(result, path)
    return _as_paddle_loads(result, return_numpy, keep_name_table)
