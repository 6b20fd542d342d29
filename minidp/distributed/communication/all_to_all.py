"""``alltoall`` and ``alltoall_single`` (Paddle's names): every rank sends block ``k`` of its input
to group rank ``k`` and receives block ``k`` of its output from it.

Both are one :func:`~minidp.distributed.communication.p2p.exchange`: pairwise sends and receives in an order
that cannot deadlock, each bounded by the group timeout. Blocks may differ in size from peer to
peer (Paddle's "unequal split sizes"), as long as what rank ``a`` sends to ``b`` has the size
``b`` expects from ``a``. Inputs may be outputs too (in place). The operations complete before
the call returns; with ``sync_op=False`` the returned task is already complete.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from ...core import backend as array_backend
from ...core.tensor import Tensor
from ...core.distributed.backends import Work
from ...core.distributed.collective import Group, resolve_group, tensor_array
from .blocks import stacked_view
from .p2p import exchange


def _run(group: Group, outputs: Sequence[Any], inputs: Sequence[Any], what: str) -> Work:
    me = group.rank
    if outputs[me].nbytes != inputs[me].nbytes:
        raise ValueError(
            f"{what}: the block rank {me} keeps for itself has {inputs[me].nbytes} "
            f"bytes but its output block has room for {outputs[me].nbytes}"
        )
    xp = array_backend.get_array_module(inputs[me])
    inputs = [
        block.copy() if any(xp.may_share_memory(block, out) for out in outputs) else block for block in inputs
    ]  # an input that is also an output is read before it is written
    peers = range(group.world_size)
    exchange(group, [(inputs[k], k) for k in peers], [(outputs[k], k) for k in peers])
    return Work.completed(f"{what} on group '{group.name}' at rank {me}")


def alltoall(
    out_tensor_list: Union[List[Tensor], Tensor],
    in_tensor_list: Union[List[Tensor], Tensor],
    group: Optional[Group] = None,
    sync_op: bool = True,
) -> Optional[Work]:
    """Send ``in_tensor_list[k]`` to group rank ``k``; ``out_tensor_list[k]`` receives what rank
    ``k`` sent here.

    An empty ``out_tensor_list`` is extended with tensors shaped like the inputs. Both
    arguments may instead be single tensors, split into ``world_size`` equal blocks along axis 0.
    """
    group = resolve_group(group, "alltoall")
    if not group.is_member():
        return None
    size = group.world_size
    if isinstance(in_tensor_list, Tensor) or isinstance(out_tensor_list, Tensor):
        if not (isinstance(in_tensor_list, Tensor) and isinstance(out_tensor_list, Tensor)):
            raise TypeError(
                "alltoall: out_tensor_list and in_tensor_list must both be lists of Tensors or both be Tensors"
            )
        source = tensor_array(in_tensor_list, "in_tensor_list")
        if not source.ndim or source.shape[0] % size:
            raise ValueError(
                f"alltoall: in_tensor_list of shape {list(source.shape)} must split "
                f"into {size} equal blocks along axis 0"
            )
        block = source.reshape(size, source.shape[0] // size, *source.shape[1:])[0]
        target = stacked_view(out_tensor_list, size, block, "alltoall out_tensor_list")
        return _run(group, list(target), list(source.reshape(size, *block.shape)), "alltoall")
    for name, value in (("in_tensor_list", in_tensor_list), ("out_tensor_list", out_tensor_list)):
        if not isinstance(value, list):
            raise TypeError(f"alltoall {name} must be a list of Tensors, got {type(value).__name__}")
    if len(in_tensor_list) != size:
        raise ValueError(
            f"alltoall in_tensor_list must hold {size} tensors (one per rank of the group), got {len(in_tensor_list)}"
        )
    inputs = [tensor_array(t, f"alltoall in_tensor_list[{k}]") for k, t in enumerate(in_tensor_list)]
    if not out_tensor_list:
        out_tensor_list.extend(Tensor(array.copy()) for array in inputs)
    if len(out_tensor_list) != size:
        raise ValueError(f"alltoall out_tensor_list must be empty or hold {size} tensors, got {len(out_tensor_list)}")
    outputs = [tensor_array(t, f"alltoall out_tensor_list[{k}]") for k, t in enumerate(out_tensor_list)]
    dtype = inputs[0].dtype
    for name, arrays in (("in_tensor_list", inputs), ("out_tensor_list", outputs)):
        for k, array in enumerate(arrays):
            if array.dtype != dtype:
                raise ValueError(
                    f"alltoall {name}[{k}] has dtype {array.dtype}; every input and "
                    f"output tensor needs the dtype of in_tensor_list[0], {dtype}"
                )
    return _run(group, outputs, inputs, "alltoall")


def _blocks(array: Any, split_sizes: Optional[Sequence[int]], size: int, what: str) -> List[Any]:
    """``array`` cut along axis 0 into ``split_sizes`` rows (equal blocks when None)."""
    rows = array.shape[0] if array.ndim else 0
    if split_sizes is None or len(split_sizes) == 0:
        if rows % size:
            raise ValueError(
                f"alltoall_single: {what} has {rows} rows, which do not split into "
                f"{size} equal blocks; pass its split sizes"
            )
        split_sizes = [rows // size] * size
    if len(split_sizes) != size or any(int(n) < 0 for n in split_sizes):
        raise ValueError(
            f"alltoall_single: the split sizes of {what} must be {size} "
            f"non-negative row counts, got {list(split_sizes)}"
        )
    if sum(int(n) for n in split_sizes) != rows:
        raise ValueError(
            f"alltoall_single: the split sizes of {what} {list(split_sizes)} add up "
            f"to {sum(int(n) for n in split_sizes)}, but it has {rows} rows"
        )
    offsets = [0]
    for n in split_sizes:
        offsets.append(offsets[-1] + int(n))
    return [array[offsets[k] : offsets[k + 1]] for k in range(size)]


def alltoall_single(
    out_tensor: Tensor,
    in_tensor: Tensor,
    in_split_sizes: Optional[List[int]] = None,
    out_split_sizes: Optional[List[int]] = None,
    group: Optional[Group] = None,
    sync_op: bool = True,
) -> Optional[Work]:
    """Send rows ``in_split_sizes[k]`` of ``in_tensor`` to group rank ``k``; rows
    ``out_split_sizes[k]`` of ``out_tensor`` receive rank ``k``'s (equal splits when None)."""
    group = resolve_group(group, "alltoall_single")
    if not group.is_member():
        return None
    source = tensor_array(in_tensor, "in_tensor")
    target = tensor_array(out_tensor, "out_tensor")
    if not source.ndim or not target.ndim:
        raise ValueError("alltoall_single: in_tensor and out_tensor need at least one axis to split along")
    if source.dtype != target.dtype or source.shape[1:] != target.shape[1:]:
        raise ValueError(
            f"alltoall_single: out_tensor ({list(target.shape)}, {target.dtype}) "
            f"and in_tensor ({list(source.shape)}, {source.dtype}) need the same "
            "dtype and the same shape after axis 0"
        )
    size = group.world_size
    return _run(
        group,
        _blocks(target, out_split_sizes, size, "out_tensor"),
        _blocks(source, in_split_sizes, size, "in_tensor"),
        "alltoall_single",
    )
