"""``reduce_scatter``: reduce blocks over the group, each rank keeping one (Paddle's function)."""

from __future__ import annotations

from typing import List, Optional, Union

from ...core import backend as array_backend
from ...core.distributed.backends import ReduceOp, Work
from ...core.distributed.collective import Group, resolve_group, tensor_array, track
from ...core.tensor import Tensor
from .blocks import check_tensor_list, stacked_view


def reduce_scatter(
    tensor: Tensor,
    tensor_list: Union[Tensor, List[Tensor]],
    op: ReduceOp = ReduceOp.SUM,
    group: Optional[Group] = None,
    sync_op: bool = True,
) -> Optional[Work]:
    """Reduce ``tensor_list`` over the group and leave block ``rank`` of the result in ``tensor``.

    ``tensor_list`` is either ``world_size`` tensors shaped like ``tensor`` or one tensor
    holding them concatenated along axis 0.
    """
    group = resolve_group(group, "reduce_scatter")
    if not group.is_member():
        return None
    out = tensor_array(tensor, "tensor")
    if isinstance(tensor_list, Tensor):
        source = stacked_view(tensor_list, group.world_size, out, "reduce_scatter tensor_list")
    else:
        if not isinstance(tensor_list, (list, tuple)):
            raise TypeError(
                f"reduce_scatter tensor_list must be a list of Tensors or a Tensor, got {type(tensor_list).__name__}"
            )
        check_tensor_list(tensor_list, out, group.world_size, "reduce_scatter tensor_list")
        xp = array_backend.get_array_module(out)
        source = xp.stack([tensor_array(t, "tensor_list item") for t in tensor_list])
    work = group.process_group.reduce_scatter(out, source, op, sync_op)
    return track(group, work, sync_op)
