"""Gradient clipping by the global norm of all gradients, applied by the optimizer before its update."""
from __future__ import annotations

import math
from typing import Sequence

from .. import backend
from ..autograd.tensor import Tensor


class ClipGradByGlobalNorm:
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
        return [grad * scale if grad is not None and getattr(param, "need_clip", True) else grad
                for param, grad in zip(params, grads)]

    def __call__(self, params_grads: Sequence[tuple]) -> list:
        """Paddle's form: a list of (parameter, gradient tensor) pairs in, clipped pairs out."""
        params = [p for p, _ in params_grads]
        grads = [None if g is None else g._data for _, g in params_grads]
        clipped = self._clip_arrays(params, grads)
        return [(p, None if g is None else Tensor._wrap(g)) for p, g in zip(params, clipped)]

    def __repr__(self) -> str:
        return f"ClipGradByGlobalNorm(clip_norm={self.clip_norm})"
