"""What the collectives with one block per rank share: checking a list of tensors, seeing one
tensor as stacked blocks, an array's raw bytes, and work that copies its results out once done."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Optional, Sequence

from ...core.distributed.backends import Work
from ...core.distributed.collective import tensor_array
from ...core.tensor import Tensor


def check_tensor_list(tensors: Sequence[Any], like: Any, count: int, what: str) -> None:
    """``ValueError`` unless ``tensors`` holds ``count`` Tensors of ``like``'s shape and dtype."""
    if len(tensors) != count:
        raise ValueError(f"{what} must hold {count} tensors (one per rank of the group), got {len(tensors)}")
    for index, item in enumerate(tensors):
        if not isinstance(item, Tensor):
            raise TypeError(f"{what}[{index}] must be a minidp Tensor, got {type(item).__name__}")
        if list(item.shape) != list(like.shape) or item.dtype != like.dtype:
            raise ValueError(
                f"{what}[{index}] has shape {list(item.shape)} and dtype "
                f"{item.dtype}; every entry needs shape {list(like.shape)} and "
                f"dtype {like.dtype}"
            )


def stacked_view(tensor: Tensor, rows: int, like: Any, what: str) -> Any:
    """``tensor``'s array seen as ``[rows, *like.shape]`` (no copy): the single-tensor form of
    a tensor list, ``rows`` blocks of ``like`` concatenated along axis 0."""
    data = tensor_array(tensor, what)
    block_rows = like.shape[0] if like.ndim else 1
    expected = [rows * block_rows, *like.shape[1:]]
    if list(data.shape) != expected or data.dtype != like.dtype:
        raise ValueError(
            f"{what} must have shape {expected} and dtype {like.dtype} "
            f"({rows} blocks of {list(like.shape)} along axis 0); got "
            f"{list(data.shape)} {data.dtype}"
        )
    return data.reshape(rows, *like.shape)


def flat_bytes(array: Any) -> Any:
    """The bytes of a C-contiguous NumPy or CuPy array as a flat uint8 view (no copy)."""
    return array.reshape(-1).view("uint8")


class CopyOutWork:
    """Work whose results are copied into the caller's tensors once it has finished.

    The copy runs in whichever of :meth:`wait` or :meth:`is_completed` first sees the
    operation done, so a completed handle always means the tensors hold the result.
    """

    def __init__(self, work: Work, copy_out: Callable[[], None]) -> None:
        self._work = work
        self._copy_out: Optional[Callable[[], None]] = copy_out

    def _finish(self) -> None:
        if self._copy_out is not None:
            copy_out, self._copy_out = self._copy_out, None
            copy_out()

    def is_completed(self) -> bool:
        """True once the operation has finished (successfully or not; :meth:`wait` raises the
        error of a failed one)."""
        if not self._work.is_completed():
            return False
        with contextlib.suppress(RuntimeError):
            self.wait()
        return True

    def wait(self, timeout: Optional[float] = None) -> bool:
        self._work.wait(timeout)
        self._finish()
        return True
