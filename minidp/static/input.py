"""``InputSpec``: the shape, dtype and name of a model input, as scripts pass it to
``paddle.jit.to_static(input_spec=...)`` and high-level APIs. minidp runs eagerly and needs no
input signature, so a spec is a plain description that is checked and kept, never compiled."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy

from ..core import backend
from ..core.tensor import Tensor

__all__ = ["InputSpec"]


def _checked_shape(shape: Any) -> tuple:
    """``shape`` as a tuple with every unknown dimension (None or below -1) written as -1."""
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"InputSpec: shape must be a list or tuple, got {type(shape).__name__}; e.g. [None, 784]")
    dims = []
    for i, dim in enumerate(shape):
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, numpy.integer))):
            raise ValueError(f"InputSpec: shape[{i}] must be an int or None (unknown), got {dim!r}")
        dims.append(-1 if dim is None or dim < -1 else int(dim))
    return tuple(dims)


class InputSpec:
    """One input's description: ``shape`` (a tuple; -1 where unknown, ``None`` given becomes -1),
    ``dtype`` (default float32), ``name`` and ``stop_gradient``. Equal specs have equal fields;
    the hash leaves out ``name`` (Paddle's rule: inputs differing only by name share a program)."""

    def __init__(
        self,
        shape: Sequence[Optional[int]],
        dtype: Any = "float32",
        name: Optional[str] = None,
        stop_gradient: bool = False,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"InputSpec: name must be a str or None, got {type(name).__name__}")
        self.shape = _checked_shape(shape)
        self.dtype = None if dtype is None else backend.convert_dtype(dtype)
        self.name = name
        self.stop_gradient = bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor: Tensor, name: Optional[str] = None) -> "InputSpec":
        """The spec of ``tensor`` (its shape and dtype)."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"InputSpec.from_tensor: expected a Tensor, got {type(tensor).__name__}")
        return cls(list(tensor.shape), tensor.dtype, name)

    @classmethod
    def from_numpy(cls, ndarray: numpy.ndarray, name: Optional[str] = None) -> "InputSpec":
        """The spec of a NumPy array (its shape and dtype)."""
        return cls(list(ndarray.shape), ndarray.dtype, name)

    def batch(self, batch_size: Any) -> "InputSpec":
        """Put ``batch_size`` (an int, or a list of one) in front of the shape; returns this spec."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: batch_size as a list must hold one int, got {batch_size!r}")
            batch_size = batch_size[0]
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise TypeError(f"InputSpec.batch: batch_size must be an int, got {type(batch_size).__name__}")
        self.shape = (batch_size, *self.shape)
        return self

    def unbatch(self) -> "InputSpec":
        """Drop the first dimension; returns this spec."""
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the shape is empty, there is no batch dimension to drop")
        self.shape = _checked_shape(list(self.shape[1:]))
        return self

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, name={self.name}, "
            f"stop_gradient={self.stop_gradient})"
        )

    def __eq__(self, other: object) -> bool:
        fields = ("shape", "dtype", "name", "stop_gradient")
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in fields)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.stop_gradient))
