"""``all_gather``: every rank's tensor, on every rank (Paddle's function of that name)."""

from __future__ import annotations

from typing import List, Optional, Union

from ...core import backend as array_backend
from ...core.distributed.backends import Work
from ...core.distributed.collective import Group, resolve_group, tensor_array, track
from ...core.tensor import Tensor
from .blocks import CopyOutWork, check_tensor_list, stacked_view


def all_gather(
    tensor_list: Union[List[Tensor], Tensor], tensor: Tensor, group: Optional[Group] = None, sync_op: bool = True
) -> Optional[Union[Work, CopyOutWork]]:
    """Gather every rank's ``tensor`` into ``tensor_list`` (in group rank order).

    An empty ``tensor_list`` is extended with new tensors; a filled one must hold
    ``world_size`` tensors of ``tensor``'s shape and dtype, which receive the results. A Tensor
    instead of a list receives the results concatenated along axis 0.
    """
    group = resolve_group(group, "all_gather")
    if not group.is_member():
        return None
    data = tensor_array(tensor, "tensor")
    size = group.world_size
    pg = group.process_group
    if isinstance(tensor_list, Tensor):
        out = stacked_view(tensor_list, size, data, "all_gather tensor_list")
        return track(group, pg.all_gather(out, data, sync_op), sync_op)
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather tensor_list must be a list or a Tensor, got {type(tensor_list).__name__}")
    gathered = array_backend.get_array_module(data).empty((size, *data.shape), data.dtype)
    if not tensor_list:
        tensor_list.extend(Tensor(row) for row in gathered)
        return track(group, pg.all_gather(gathered, data, sync_op), sync_op)
    check_tensor_list(tensor_list, data, size, "all_gather tensor_list")
    targets = [tensor_array(t, "tensor_list item") for t in tensor_list]

    def copy_out() -> None:
        for target, row in zip(targets, gathered):
            target[...] = row

    work = pg.all_gather(gathered, data, sync_op)
    if sync_op:
        copy_out()
        return work
    return track(group, CopyOutWork(work, copy_out), sync_op)
