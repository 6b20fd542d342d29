"""Cases shared by tools/record_paddle_protocols.py (run with Paddle) and the tests that compare
minidp with what it recorded: a small dataset, ``collate_fn`` functions that return NumPy
structures, and :func:`describe`, which turns a batch into plain JSON either framework gives."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


class Samples:
    """Four samples ``(float32 [2] array filled with i, i)``; map-style, no framework base class
    needed (both DataLoaders accept any object with ``__len__`` and ``__getitem__``)."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> tuple:
        return np.full([2], i, "float32"), i


def nested(samples: list) -> dict:
    return {
        "a": np.stack([s[0] for s in samples]),
        "b": [np.array([s[1] for s in samples]), 3, 2.5, "text", True, None],
        "c": (np.array([1, 2], dtype="int32"), np.array(1.5)),
        "d": np.float32(2.0),
        "e": np.int64(3),
        "f": [1, 2],
    }


def single_array(samples: list) -> np.ndarray:
    return np.stack([s[0] for s in samples])


def tuple_of_arrays(samples: list) -> tuple:
    return np.stack([s[0] for s in samples]), np.array([s[1] for s in samples], dtype="int32")


def dtypes(samples: list) -> list:
    return [np.zeros([len(samples)], dtype=name) for name in ("float16", "bool", "uint8", "int8", "int16", "float64")]


def deep(samples: list) -> dict:
    return {"x": np.zeros(2), "y": {"z": [np.ones(1, "int64"), "a", (b"raw", np.ones([1, 1], "float32"))]}}


COLLATE_CASES = {"nested": nested, "single_array": single_array, "tuple_of_arrays": tuple_of_arrays}
COLLATE_CASES.update({"dtypes": dtypes, "deep": deep})


def describe(obj: Any, is_tensor: Callable[[Any], bool]) -> Any:
    """A batch as JSON: tensors by dtype, shape and values; lists, tuples and dicts by kind; other
    leaves by type name and value (bytes as text)."""
    if is_tensor(obj):
        array = obj.numpy()
        return {"tensor": str(array.dtype), "shape": list(array.shape), "values": array.tolist()}
    if isinstance(obj, dict):
        return {"dict": {str(key): describe(value, is_tensor) for key, value in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return {type(obj).__name__: [describe(value, is_tensor) for value in obj]}
    value = obj.item() if isinstance(obj, np.generic) else obj
    return {"type": type(obj).__name__, "value": value.decode() if isinstance(value, bytes) else value}
