"""Argument checks and per-channel sums shared by the functional ops (the sliding-window geometry lives
in :mod:`.sliding`)."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import check_tensor

__all__ = [
    "check_tensor",
    "check_reduction",
    "LAYOUTS",
    "channels_first",
    "to_format",
    "reduce_loss",
]

REDUCTIONS = ("mean", "sum", "none")


def channel_sums(xp: Any, a: Any) -> Any:
    """The per-channel sums of ``a`` [A, C, B]: a matrix-vector product (BLAS) then a short sum,
    several times faster than NumPy's reduction over the two outer axes (batch norm's statistics,
    a convolution's bias gradient)."""
    if a.shape[2] == 1:
        return xp.ones(a.shape[0], dtype=a.dtype) @ a[:, :, 0]
    return (a @ xp.ones(a.shape[2], dtype=a.dtype)).sum(axis=0)


def check_reduction(op: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


LAYOUTS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
"""Paddle's data formats per number of spatial axes: channels first (the default), channels last."""


def channels_first(op: str, x: Tensor, data_format: str, formats: tuple) -> Tensor:
    """``x`` checked to be a tensor laid out as ``data_format``, one of ``formats``, and returned as
    [N, C, *spatial] (a view when it was channels last): the window ops of :mod:`.sliding` work
    channels first only, so a channels-last op is one transpose in and one out around them."""
    check_tensor(op, "x", x)
    if data_format not in formats:
        hint = "" if len(formats) > 1 else "; transpose the input to channels first"
        raise ValueError(f"{op}: data_format must be {' or '.join(map(repr, formats))}, got {data_format!r}{hint}")
    if x._data.ndim != len(data_format):
        raise ValueError(f"{op}: expects a {len(data_format)}-D input [{', '.join(data_format)}], got shape {x.shape}")
    if data_format[1] == "C":
        return x
    return ops.transpose(x, [0, x.ndim - 1, *range(1, x.ndim - 1)])


def to_format(out: Tensor, data_format: str) -> Tensor:
    """A channels-first result [N, C, *spatial] laid out as ``data_format`` (a view when channels last)."""
    if data_format[1] == "C":
        return out
    return ops.transpose(out, [0, *range(2, out.ndim), 1])


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """A per-element loss tensor averaged, summed or returned as it is, by ``reduction``."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
