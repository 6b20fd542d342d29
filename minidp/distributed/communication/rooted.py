"""Collectives with a root rank: ``reduce`` (to ``dst``), ``scatter`` (from ``src``) and ``gather``
(to ``dst``), Paddle's functions of those names.

They are built on the process-group interface every backend offers, so gloo, mpi and nccl run
them alike and asynchronously when ``sync_op=False``:

- ``reduce`` is an all-reduce; ranks other than ``dst`` reduce a scratch copy, so their
  ``tensor`` keeps its value, as Paddle documents.
- ``scatter`` is a reduce-scatter with ``MAX`` over the bytes of the blocks: ``src`` contributes
  its blocks, every other rank zeros, and the maximum of a byte and zero is that byte, so every
  rank receives its block bit for bit whatever the dtype (NaN, -0.0 and integers included).
- ``gather`` is an all-gather whose result only ``dst`` keeps.

Ranks (``src``, ``dst``) are job ranks, as everywhere in ``minidp.distributed``.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from ...core import backend as array_backend
from ...core.tensor import Tensor
from ...core.distributed.backends import ReduceOp, Work
from ...core.distributed.collective import Group, group_rank, resolve_group, tensor_array, track
from .all_gather import all_gather
from .blocks import CopyOutWork, check_tensor_list, flat_bytes, stacked_view


def reduce(
    tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: Optional[Group] = None, sync_op: bool = True
) -> Optional[Work]:
    """Reduce ``tensor`` over the group with ``op``; the result lands in job rank ``dst``'s
    ``tensor``, every other rank's ``tensor`` is left as it was."""
    group = resolve_group(group, "reduce")
    if not group.is_member():
        return None
    data = tensor_array(tensor, "tensor")
    target = data if group.rank == group_rank(group, dst, "dst") else data.copy()
    return track(group, group.process_group.all_reduce(target, op, sync_op), sync_op)


def scatter_rows(group: Group, out: Any, rows: Optional[Any], src: int, sync_op: bool = True) -> Work:
    """Copy row ``r`` of ``rows`` (a ``[world_size, out.nbytes]`` uint8 array, given on
    group-local rank ``src`` only) into the uint8 array ``out`` of group rank ``r``.

    A reduce-scatter with ``MAX``: ``src`` contributes ``rows``, the others zeros (see the
    module docstring).
    """
    xp = array_backend.get_array_module(out)
    blocks = xp.zeros((group.world_size, out.nbytes), "uint8")
    if group.rank == src:
        blocks[...] = rows
    return group.process_group.reduce_scatter(out, blocks, ReduceOp.MAX, sync_op)


def scatter(
    tensor: Tensor,
    tensor_list: Union[None, Sequence[Tensor], Tensor] = None,
    src: int = 0,
    group: Optional[Group] = None,
    sync_op: bool = True,
) -> Optional[Work]:
    """Give group rank ``r`` block ``r`` of job rank ``src``'s ``tensor_list``, in its ``tensor``.

    On ``src``, ``tensor_list`` holds ``world_size`` tensors shaped like ``tensor`` (or one tensor
    with them concatenated along axis 0); other ranks' ``tensor_list`` is ignored.
    """
    group = resolve_group(group, "scatter")
    if not group.is_member():
        return None
    out = tensor_array(tensor, "tensor")
    size = group.world_size
    local_src = group_rank(group, src, "src")
    rows = None
    if group.rank == local_src:
        if tensor_list is None:
            raise ValueError("scatter: the src rank must pass tensor_list (one tensor per rank of the group)")
        if isinstance(tensor_list, Tensor):
            source = stacked_view(tensor_list, size, out, "scatter tensor_list")
        else:
            check_tensor_list(list(tensor_list), out, size, "scatter tensor_list")
            xp = array_backend.get_array_module(out)
            source = xp.stack([tensor_array(t, "scatter tensor_list item") for t in tensor_list])
        rows = source.reshape(size, out.size).view("uint8")
    work = scatter_rows(group, flat_bytes(out), rows, local_src, sync_op)
    return track(group, work, sync_op)


def gather(
    tensor: Tensor,
    gather_list: Optional[List[Tensor]] = None,
    dst: int = 0,
    group: Optional[Group] = None,
    sync_op: bool = True,
) -> Optional[Union[Work, CopyOutWork]]:
    """Collect every rank's ``tensor`` into job rank ``dst``'s ``gather_list`` (group rank order).

    On ``dst`` an empty ``gather_list`` is extended with new tensors and a filled one must hold
    ``world_size`` tensors like ``tensor``; other ranks' ``gather_list`` is left untouched.
    """
    group = resolve_group(group, "gather")
    if not group.is_member():
        return None
    if group.rank != group_rank(group, dst, "dst"):
        return all_gather([], tensor, group, sync_op)
    if not isinstance(gather_list, list):
        raise TypeError(
            "gather: the dst rank must pass gather_list, a list (empty, or one "
            f"tensor per rank), got {type(gather_list).__name__}"
        )
    if gather_list:
        check_tensor_list(gather_list, tensor_array(tensor, "tensor"), group.world_size, "gather gather_list")
    return all_gather(gather_list, tensor, group, sync_op)
