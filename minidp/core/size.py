"""Size: the type of ``Tensor.shape``, a list of ints as in Paddle 3 (``paddle.Size``).

It is a ``list``, so everything written for Paddle 2's list shapes keeps working, with what
Paddle 3 adds: it equals a tuple of the same sizes (``x.shape == (2, 3)``), slicing and
concatenating give a Size again, and ``numel()`` is the number of elements. Printed in an
f-string it reads like the plain list, so messages that quote a shape stay short.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Iterable


class Size(list):
    """A tensor's shape: a list of ints that also equals the tuple of its sizes."""

    def __init__(self, sizes: Iterable[Any] = ()) -> None:
        if isinstance(sizes, (str, bytes)):
            raise TypeError(f"Size takes an iterable of ints, got {type(sizes).__name__}")
        super().__init__(_as_size(item, i) for i, item in enumerate(sizes))

    @classmethod
    def of_array(cls, array: Any) -> "Size":
        """The shape of an array (its sizes are ints already: no checks, as ``Tensor.shape`` is hot)."""
        size = list.__new__(cls)
        list.__init__(size, array.shape)
        return size

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, tuple):
            return list(self) == list(other)
        return list.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = None

    def __getitem__(self, index: Any) -> Any:
        item = list.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: Iterable[Any]) -> "Size":
        return Size(list(self) + list(other))

    def __radd__(self, other: Iterable[Any]) -> "Size":
        """``[1] + shape`` and ``(1,) + shape`` give a Size too, as in Paddle."""
        return Size(list(other) + list(self))

    def __mul__(self, times: int) -> "Size":
        return Size(list.__mul__(self, times))

    __rmul__ = __mul__

    def copy(self) -> "Size":
        return Size(self)

    def __repr__(self) -> str:
        return f"minidp.Size({list.__repr__(self)})"

    def __str__(self) -> str:
        return list.__repr__(self)


def _as_size(item: Any, position: int) -> int:
    """One entry as an int: Python and NumPy integers and one-element integer tensors qualify."""
    try:
        return operator.index(item)
    except TypeError:
        raise TypeError(f"Size takes an iterable of ints (item {position} is {type(item).__name__!r})") from None
