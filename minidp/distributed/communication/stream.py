"""``minidp.distributed.stream``: Paddle's stream-level collectives (Paddle keeps them in
``paddle.distributed.communication.stream``).

Each function takes the arguments of its ``minidp.distributed`` namesake plus
``use_calc_stream``, with Paddle's stream-level argument order (note ``alltoall_single``, whose
split sizes come output first). On a GPU, Paddle's ``use_calc_stream=True`` runs the operation
on the computation stream; minidp's collectives already order themselves after the work that
produced their tensors, so here it only means what it implies: the call is synchronous, and it
needs ``sync_op=True``. The output arguments accept a Tensor as well as a list of Tensors, as
Paddle's do.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Union

from ...core.distributed import collective as _collective
from ...core.distributed.backends import ReduceOp, Work
from ...core.distributed.collective import Group
from ...core.tensor import Tensor
from . import all_to_all as _all_to_all, p2p as _p2p, rooted as _rooted
from .all_gather import all_gather as _all_gather
from .reduce_scatter import reduce_scatter as _reduce_scatter

TensorOrList = Union[Tensor, Sequence[Tensor]]


def _check(sync_op: bool, use_calc_stream: bool, what: str) -> None:
    if use_calc_stream and not sync_op:
        raise ValueError(
            f"stream.{what}: use_calc_stream=True needs sync_op=True (a calculation-stream operation is synchronous)"
        )


def all_gather(
    tensor_or_tensor_list: Union[Tensor, List[Tensor]],
    tensor: Tensor,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.all_gather`; a Tensor output receives the blocks along axis 0."""
    _check(sync_op, use_calc_stream, "all_gather")
    return _all_gather(tensor_or_tensor_list, tensor, group, sync_op)


def all_reduce(
    tensor: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.all_reduce`."""
    _check(sync_op, use_calc_stream, "all_reduce")
    return _collective.all_reduce(tensor, op, group, sync_op)


def alltoall(
    out_tensor_or_tensor_list: TensorOrList,
    in_tensor_or_tensor_list: TensorOrList,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.alltoall`."""
    _check(sync_op, use_calc_stream, "alltoall")
    return _all_to_all.alltoall(out_tensor_or_tensor_list, in_tensor_or_tensor_list, group, sync_op)


def alltoall_single(
    out_tensor: Tensor,
    in_tensor: Tensor,
    out_split_sizes: Optional[List[int]] = None,
    in_split_sizes: Optional[List[int]] = None,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.alltoall_single`, with the output's split sizes first."""
    _check(sync_op, use_calc_stream, "alltoall_single")
    return _all_to_all.alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group, sync_op)


def broadcast(
    tensor: Tensor, src: int, group: Optional[Group] = None, sync_op: bool = True, use_calc_stream: bool = False
) -> Optional[Work]:
    """:func:`minidp.distributed.broadcast`."""
    _check(sync_op, use_calc_stream, "broadcast")
    return _collective.broadcast(tensor, src, group, sync_op)


def reduce(
    tensor: Tensor,
    dst: int = 0,
    op: ReduceOp = ReduceOp.SUM,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.reduce`."""
    _check(sync_op, use_calc_stream, "reduce")
    return _rooted.reduce(tensor, dst, op, group, sync_op)


def reduce_scatter(
    tensor: Tensor,
    tensor_or_tensor_list: TensorOrList,
    op: ReduceOp = ReduceOp.SUM,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.reduce_scatter`."""
    _check(sync_op, use_calc_stream, "reduce_scatter")
    return _reduce_scatter(tensor, tensor_or_tensor_list, op, group, sync_op)


def scatter(
    tensor: Tensor,
    tensor_or_tensor_list: Optional[TensorOrList] = None,
    src: int = 0,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.scatter`."""
    _check(sync_op, use_calc_stream, "scatter")
    return _rooted.scatter(tensor, tensor_or_tensor_list, src, group, sync_op)


def gather(
    tensor: Tensor,
    gather_list: Optional[List[Tensor]] = None,
    dst: int = 0,
    group: Optional[Group] = None,
    sync_op: bool = True,
    use_calc_stream: bool = False,
) -> Optional[Work]:
    """:func:`minidp.distributed.gather`."""
    _check(sync_op, use_calc_stream, "gather")
    return _rooted.gather(tensor, gather_list, dst, group, sync_op)


def send(
    tensor: Tensor, dst: int = 0, group: Optional[Group] = None, sync_op: bool = True, use_calc_stream: bool = False
) -> Optional[Work]:
    """:func:`minidp.distributed.send`."""
    _check(sync_op, use_calc_stream, "send")
    return _p2p.send(tensor, dst, group, sync_op)


def recv(
    tensor: Tensor, src: int = 0, group: Optional[Group] = None, sync_op: bool = True, use_calc_stream: bool = False
) -> Optional[Work]:
    """:func:`minidp.distributed.recv`."""
    _check(sync_op, use_calc_stream, "recv")
    return _p2p.recv(tensor, src, group, sync_op)


__all__ = [
    "all_gather",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "broadcast",
    "gather",
    "recv",
    "reduce",
    "reduce_scatter",
    "scatter",
    "send",
]
