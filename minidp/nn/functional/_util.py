"""Argument checks shared by the functional ops (the sliding-window geometry lives in :mod:`.sliding`)."""

from __future__ import annotations


from ...core.tensor import Tensor
from ...core.op_util import check_tensor

__all__ = [
    "check_tensor",
    "check_reduction",
    "check_nchw",
    "reduce_loss",
]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(op: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def check_nchw(op: str, x: Tensor, data_format: str) -> None:
    if data_format != "NCHW":
        raise ValueError(
            f"{op}: only data_format='NCHW' is supported, got {data_format!r}; "
            "transpose the input to [N, C, H, W] first"
        )
    if x._data.ndim != 4:
        raise ValueError(f"{op}: expects a 4-D input [N, C, H, W], got shape {x.shape}")


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """A per-element loss tensor averaged, summed or returned as it is, by ``reduction``."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
