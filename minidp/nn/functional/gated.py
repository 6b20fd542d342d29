"""Gated activations built from the ops: ``swiglu`` (the SiLU-gated linear unit of LLaMA-style MLPs)."""

from __future__ import annotations

from typing import Optional

from ...core.tensor import Tensor
from ...ops import chunk, multiply
from ._util import check_tensor
from .activation import silu

__all__ = ["swiglu"]


def swiglu(x: Tensor, y: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
    """silu(x) * y; without y, x's last axis is split in two halves a, b and the result is silu(a) * b."""
    check_tensor("swiglu", "x", x)
    if y is None:
        if not x.shape or x.shape[-1] % 2:
            raise ValueError(f"swiglu: without y, x's last axis must have even length, got shape {x.shape}")
        x, y = chunk(x, 2, axis=-1)
    return multiply(silu(x), y)
