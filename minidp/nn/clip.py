"""Gradient clipping strategies, applied by the optimizer before its update (``grad_clip=``).

Each strategy maps the gradient arrays to clipped ones in ``_clip_arrays`` (parameters with
``need_clip=False`` are left alone) and offers Paddle's call form on (parameter, gradient) pairs.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..core import backend
from ..core.tensor import Tensor

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]


class _ClipStrategy:
    """The part every strategy shares: Paddle's call on (parameter, gradient) pairs."""

    def _clip_arrays(self, params: Sequence[Tensor], grads: list) -> list:
        return [
            grad if grad is None or not getattr(param, "need_clip", True) else self._clip_one(grad)
            for param, grad in zip(params, grads)
        ]

    def __call__(self, params_grads: Sequence[tuple]) -> list:
        """A list of (parameter, gradient tensor) pairs in, clipped pairs out."""
        params = [p for p, _ in params_grads]
        grads = [None if g is None else g._data for _, g in params_grads]
        clipped = self._clip_arrays(params, grads)
        return [(p, None if g is None else Tensor._wrap(g)) for p, g in zip(params, clipped)]


class ClipGradByValue(_ClipStrategy):
    """Clip every gradient element to [min, max]; ``min`` defaults to -max."""

    def __init__(self, max: float, min: float = None) -> None:
        low = -max if min is None else min
        if not isinstance(max, (int, float)) or not isinstance(low, (int, float)) or low > max:
            raise ValueError(f"ClipGradByValue: needs numbers with min <= max, got min={min!r}, max={max!r}")
        self.max, self.min = float(max), float(low)

    def _clip_one(self, grad):
        return backend.get_array_module(grad).clip(grad, self.min, self.max).astype(grad.dtype, copy=False)

    def __repr__(self) -> str:
        return f"ClipGradByValue(min={self.min}, max={self.max})"


class ClipGradByNorm(_ClipStrategy):
    """Scale each gradient whose own L2 norm exceeds ``clip_norm`` down to that norm."""

    def __init__(self, clip_norm: float) -> None:
        if not isinstance(clip_norm, (int, float)) or clip_norm <= 0:
            raise ValueError(f"ClipGradByNorm: clip_norm must be a positive number, got {clip_norm!r}")
        self.clip_norm = float(clip_norm)

    def _clip_one(self, grad):
        flat = grad.reshape(-1).astype("float64")
        norm = math.sqrt(float(backend.get_array_module(flat).dot(flat, flat)))
        return grad if norm <= self.clip_norm else grad * (self.clip_norm / norm)

    def __repr__(self) -> str:
        return f"ClipGradByNorm(clip_norm={self.clip_norm})"


class ClipGradByGlobalNorm(_ClipStrategy):
    """Scale every clipped gradient by ``clip_norm / max(global_norm, clip_norm)``.

    ``global_norm`` is the L2 norm of all gradients together (parameters with
    ``need_clip=False`` neither count nor get scaled). Pass it as ``grad_clip`` to an optimizer.
    The parameters' own gradients are not modified: the optimizer uses the scaled copies.
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group") -> None:
        if not isinstance(clip_norm, (int, float)) or clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be a positive number, got {clip_norm!r}")
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def _clip_arrays(self, params: Sequence[Tensor], grads: list) -> list:
        """The gradients (arrays, None for missing ones) after clipping, in the same order."""
        squares = []
        for param, grad in zip(params, grads):
            if grad is not None and getattr(param, "need_clip", True):
                flat = grad.reshape(-1)
                if flat.dtype.itemsize < 4:  # float16 squares overflow past 65504: sum them in float32
                    flat = flat.astype("float32")
                squares.append(backend.get_array_module(flat).dot(flat, flat))
        if not squares:
            return grads
        global_norm = math.sqrt(float(sum(squares)))
        if global_norm <= self.clip_norm:
            return grads
        scale = self.clip_norm / global_norm
        return [
            grad * scale if grad is not None and getattr(param, "need_clip", True) else grad
            for param, grad in zip(params, grads)
        ]

    def __repr__(self) -> str:
        return f"ClipGradByGlobalNorm(clip_norm={self.clip_norm})"
