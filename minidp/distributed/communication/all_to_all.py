"""``alltoall`` and ``alltoall_single`` (Paddle's names): every rank sends block ``k`` of its input
to group rank ``k`` and receives block ``k`` of its output from it.

Both are one :func:`~minidp.distributed.communication.p2p.exchange`: pairwise sends and receives in an order
that cannot deadlock, each bounded by the group timeout. Blocks may differ in size from peer to
peer (Paddle's "unequal split sizes"), as long as what rank ``a`` sends to ``b`` has the size
``b`` expects from ``a``. Inputs may be outputs too (in place). The operations complete before
the call returns; with ``sync_op=False`` the returned task is already complete.

Before any block moves, the ranks agree on the plan (:func:`_agree_on_blocks`, one small
``all_gather``): each rank's dtype and the sizes it sends and expects. A rank whose own arguments
are refused (split sizes that do not add up, a block it keeps for itself that does not fit) and
ranks whose blocks do not match raise on every rank at once, naming both sides, instead of one rank
refusing while its peers wait for it until the group timeout. Nothing moves then, and the group
stays usable.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy

from ...core import backend as array_backend
from ...core.tensor import Tensor
from ...core.distributed.backends import Work
from ...core.distributed.collective import Group, resolve_group, tensor_array
from .blocks import stacked_view
from .p2p import exchange


_NAME_WORDS = 2  # int64 words holding the dtype's name in a rank's row of the plan


def _plan_row(outputs: Optional[Sequence[Any]], inputs: Optional[Sequence[Any]], size: int) -> numpy.ndarray:
    """This rank's row of the plan: refused (1) or not (0), its dtype's name, the element counts
    it sends to each rank and those it expects from each (zeros where it refused)."""
    row = numpy.zeros(1 + _NAME_WORDS + 2 * size, numpy.int64)
    if inputs is None:
        row[0] = 1
        return row
    name = inputs[0].dtype.name.encode()[: 8 * _NAME_WORDS].ljust(8 * _NAME_WORDS, b"\0")
    row[1 : 1 + _NAME_WORDS] = numpy.frombuffer(name, numpy.int64)
    row[1 + _NAME_WORDS :] = [block.size for block in inputs] + [block.size for block in outputs]
    return row


def _disagreement(plan: numpy.ndarray, describe_rank: Callable[[int], str]) -> Optional[str]:
    """What is wrong with the gathered ``plan`` (one row per rank), the same text on every rank;
    None when every rank sends each peer what that peer expects from it."""
    size = plan.shape[0]
    refused = [rank for rank in range(size) if plan[rank, 0]]
    if refused:
        names = ", ".join(describe_rank(rank) for rank in refused)
        return f"{names} refused {'its' if len(refused) == 1 else 'their'} arguments (see the error on that rank)"
    dtypes = [
        plan[rank, 1 : 1 + _NAME_WORDS].tobytes().rstrip(b"\0").decode("ascii", "replace") for rank in range(size)
    ]
    for rank in range(1, size):
        if dtypes[rank] != dtypes[0]:
            return (
                f"{describe_rank(0)} sends {dtypes[0]} blocks while {describe_rank(rank)} sends "
                f"{dtypes[rank]} blocks; every rank needs the same dtype"
            )
    sends, expects = plan[:, 1 + _NAME_WORDS : 1 + _NAME_WORDS + size], plan[:, 1 + _NAME_WORDS + size :]
    dtype = dtypes[0]
    wrong = []
    for a in range(size):
        for b in range(size):
            sent, expected = f"{dtype}[{sends[a, b]}]", f"{dtype}[{expects[b, a]}]"
            if sent == expected:
                continue
            if a == b:
                wrong.append(f"{describe_rank(a)} keeps {sent} for itself but its own output block holds {expected}")
            else:
                wrong.append(f"{describe_rank(a)} sends {sent} to {describe_rank(b)}, which expects {expected}")
    if not wrong:
        return None
    more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
    return "the ranks' blocks do not match: " + "; ".join(wrong[:3]) + more


def _agree_on_blocks(
    group: Group, blocks: Callable[[], Tuple[List[Any], List[Any]]], what: str
) -> Tuple[List[Any], List[Any]]:
    """``blocks()`` (this rank's output and input blocks, one per group rank), once every rank of
    the group has checked that they match its peers'. A rank whose ``blocks()`` refuses raises
    its own error; every other rank raises ``RuntimeError`` naming it, and ranks whose blocks do
    not match raise ``RuntimeError`` naming both sides (see the module docstring)."""
    try:
        outputs, inputs = blocks()
        refusal: Optional[Exception] = None
    except (TypeError, ValueError) as error:
        outputs = inputs = None
        refusal = error
    pg = group.process_group
    mine = _plan_row(outputs, inputs, group.world_size)
    plan = numpy.empty((group.world_size, mine.size), numpy.int64)
    pg.all_gather(plan, mine)
    if refusal is not None:
        raise refusal
    problem = _disagreement(plan, pg.describe_rank)
    if problem is not None:
        raise RuntimeError(f"{pg.describe(what)}: {problem}; no block was exchanged")
    return outputs, inputs


def _run(group: Group, blocks: Callable[[], Tuple[List[Any], List[Any]]], what: str) -> Work:
    """Exchange the blocks that ``blocks()`` returns (outputs, inputs), once the ranks agree."""
    outputs, inputs = _agree_on_blocks(group, blocks, what)
    xp = array_backend.get_array_module(inputs[group.rank])
    inputs = [
        block.copy() if any(xp.may_share_memory(block, out) for out in outputs) else block for block in inputs
    ]  # an input that is also an output is read before it is written
    peers = range(group.world_size)
    exchange(group, [(inputs[k], k) for k in peers], [(outputs[k], k) for k in peers])
    return Work.completed(f"{what} on group '{group.name}' at rank {group.rank}")


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
    return _run(group, lambda: _list_blocks(out_tensor_list, in_tensor_list, group.world_size), "alltoall")


def _list_blocks(
    out_tensor_list: Union[List[Tensor], Tensor], in_tensor_list: Union[List[Tensor], Tensor], size: int
) -> Tuple[List[Any], List[Any]]:
    """``alltoall``'s output and input blocks, one per rank, after checking its arguments."""
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
        return list(target), list(source.reshape(size, *block.shape))
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
    return outputs, inputs


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

    def blocks() -> Tuple[List[Any], List[Any]]:
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
        return _blocks(target, out_split_sizes, size, "out_tensor"), _blocks(source, in_split_sizes, size, "in_tensor")

    return _run(group, blocks, "alltoall_single")
