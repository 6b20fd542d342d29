"""Point-to-point: ``send``, ``recv``, ``isend``, ``irecv``, ``P2POp`` and ``batch_isend_irecv``
(Paddle's names), and :func:`exchange`, the deadlock-free schedule that batches and the
all-to-alls run on.

Why a schedule: a send of a large tensor completes only once the peer receives it. If every
rank of a ring first sends to its right and then receives from its left, every rank waits in
its send and nobody receives. NCCL avoids this by grouping the calls; here the operations of a
batch are ordered so that it cannot happen:

- a rank handles its peers in the order of the pair ``(min(rank, peer), max(rank, peer))``,
  the same order on every rank;
- with one peer, the lower rank first sends everything it has for the higher rank and then
  receives, the higher rank first receives and then sends.

The pair that comes first among those not yet done has both its ranks working on it, so it
always completes and the batch always finishes (matching operations assumed, as in Paddle).
Each send and receive is bounded by the group timeout, so a batch whose peer never calls
raises ``RuntimeError`` instead of hanging.

The operations run in the calling thread, in issue order with the group's other collectives:
a process group runs one operation at a time, in the order issued, the same on every rank, and
a background sender could be overtaken by a later collective on one rank but not on another.
The returned tasks are therefore complete; ``wait()`` returns True at once. Single calls are not
reordered: a ring of lone ``isend`` then ``irecv`` calls works while the tensors fit in the
transport's buffers, and with large tensors raises after the group timeout (NCCL outside a
group call stalls the same way); exchanges belong in ``batch_isend_irecv``. (Paddle 3.3.1's own
gloo backend times out on its documented ``batch_isend_irecv`` ring even for two elements.)
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...core.distributed.backends import Work
from ...core.distributed.collective import Group, group_rank, resolve_group, tensor_array
from ...core.tensor import Tensor
from .blocks import flat_bytes


def send(tensor: Tensor, dst: int = 0, group: Optional[Group] = None, sync_op: bool = True) -> Optional[Work]:
    """Send ``tensor`` to job rank ``dst`` (which calls ``recv``); completes before returning."""
    group = resolve_group(group, "send")
    if not group.is_member():
        return None
    group.process_group.send(tensor_array(tensor, "tensor"), group_rank(group, dst, "dst"))
    return Work.completed(group.process_group.describe("send"))


def recv(tensor: Tensor, src: int = 0, group: Optional[Group] = None, sync_op: bool = True) -> Optional[Work]:
    """Receive into ``tensor`` what job rank ``src`` sends; completes before returning."""
    group = resolve_group(group, "recv")
    if not group.is_member():
        return None
    group.process_group.recv(tensor_array(tensor, "tensor"), group_rank(group, src, "src"))
    return Work.completed(group.process_group.describe("recv"))


def exchange(group: Group, sends: Sequence[Tuple[Any, int]], recvs: Sequence[Tuple[Any, int]]) -> None:
    """Send each ``(array, peer)`` of ``sends`` and fill each of ``recvs`` from its peer.

    Peers are group-local ranks; arrays are C-contiguous, and those to receive into writable.
    Operations with one peer keep their order in each direction; operations with this rank
    itself pair the k-th send with the k-th receive (a copy). Zero-byte arrays are skipped, on
    both sides alike. See the module docstring for the order that makes this deadlock-free.
    """
    pg = group.process_group
    me = pg.rank
    by_peer: Dict[int, Tuple[List[Any], List[Any]]] = {}
    for position, pairs in ((0, sends), (1, recvs)):
        for array, peer in pairs:
            if array.nbytes:
                by_peer.setdefault(peer, ([], []))[position].append(flat_bytes(array))
    to_self, from_self = by_peer.pop(me, ([], []))
    if [a.nbytes for a in to_self] != [a.nbytes for a in from_self]:
        raise ValueError(
            f"rank {group.rank} sends {len(to_self)} and receives "
            f"{len(from_self)} buffers to and from itself, of sizes "
            f"{[a.nbytes for a in to_self]} and {[a.nbytes for a in from_self]}; "
            "each send to itself needs a receive of the same size"
        )
    for source, target in zip(to_self, from_self):
        target[...] = source
    for peer in sorted(by_peer, key=lambda p: (min(me, p), max(me, p))):
        outgoing, incoming = by_peer[peer]
        if me < peer:
            for array in outgoing:
                pg.send(array, peer)
        for array in incoming:
            pg.recv(array, peer)
        if me > peer:
            for array in outgoing:
                pg.send(array, peer)


def isend(tensor: Tensor, dst: int, group: Optional[Group] = None) -> Optional[Work]:
    """Send ``tensor`` to job rank ``dst``; returns the (completed) task."""
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor: Tensor, src: Optional[int] = None, group: Optional[Group] = None) -> Optional[Work]:
    """Receive into ``tensor`` from job rank ``src`` (0 when None); returns the (completed)
    task."""
    return recv(tensor, 0 if src is None else src, group, sync_op=False)


class P2POp:
    """One operation of :func:`batch_isend_irecv`: ``op`` is :func:`isend` or :func:`irecv`,
    ``peer`` the job rank to send to or receive from."""

    def __init__(self, op: Any, tensor: Tensor, peer: int, group: Optional[Group] = None) -> None:
        if op is not isend and op is not irecv:
            raise ValueError(f"P2POp op must be minidp.distributed.isend or minidp.distributed.irecv, got {op!r}")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"P2POp tensor must be a minidp Tensor, got {type(tensor).__name__}")
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = resolve_group(group, "P2POp")

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__}, shape={self.tensor.shape}, peer={self.peer}, group={self.group.name!r})"


def batch_isend_irecv(p2p_op_list: List[P2POp]) -> Optional[List[Work]]:
    """Run every send and receive of ``p2p_op_list`` without deadlock; one task per operation.

    Operations on several groups run group by group, in the order of the group ids (the same
    on every rank). Ranks outside the first operation's group get None, as in Paddle.
    """
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list:
        raise ValueError(f"batch_isend_irecv needs a non-empty list of P2POp, got {p2p_op_list!r}")
    for index, item in enumerate(p2p_op_list):
        if not isinstance(item, P2POp):
            raise TypeError(f"batch_isend_irecv: p2p_op_list[{index}] is a {type(item).__name__}, not a P2POp")
    if not p2p_op_list[0].group.is_member():
        return None
    batches: Dict[int, Tuple[Group, List[Tuple[Any, int]], List[Tuple[Any, int]]]] = {}
    for item in p2p_op_list:
        group = item.group
        if not group.is_member():
            raise ValueError(f"batch_isend_irecv: this rank is not a member of {group!r}, used by {item!r}")
        what = "dst" if item.op is isend else "src"
        pair = (tensor_array(item.tensor, "P2POp tensor"), group_rank(group, item.peer, what))
        _, sends, recvs = batches.setdefault(group.id, (group, [], []))
        (sends if item.op is isend else recvs).append(pair)
    for group_id in sorted(batches):
        group, sends, recvs = batches[group_id]
        exchange(group, sends, recvs)
    return [
        Work.completed(f"{item.op.__name__} with rank {item.peer} on group '{item.group.name}'") for item in p2p_op_list
    ]
