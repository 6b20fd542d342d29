"""Collectives on Python objects: ``all_gather_object``, ``broadcast_object_list``,
``scatter_object_list``, ``send_object_list`` and ``recv_object_list`` (Paddle's names).

Objects travel as bytes in the format of :mod:`.object_codec` (a typed
encoding that is never unpickled unless every rank opted in with
``set_object_serializer('pickle')``). Each call first moves the byte counts, then the bytes,
through the group's process group, so they work on every backend. A list whose length does not
match the sender's is reported with ``ValueError`` after the transfer, and an object its
sender cannot encode is announced with the byte count -1 before the sender raises, so every rank
raises at once instead of waiting for bytes that never come.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy

from ...core.distributed.collective import Group, group_rank, resolve_group
from .object_codec import decode_object, encode_object
from .rooted import scatter_rows

_LENGTH = numpy.dtype("<i8")


def _as_array(payload: bytes) -> numpy.ndarray:
    """A writable uint8 copy of ``payload`` (process groups write into what they are given)."""
    return numpy.frombuffer(payload, numpy.uint8).copy()


_FAILED = -1


def _encode_all(objects: List[Any]) -> Tuple[List[bytes], Optional[Exception]]:
    """Each object's bytes, or no bytes and the error that stopped the encoding."""
    try:
        return [encode_object(obj) for obj in objects], None
    except (TypeError, ValueError) as error:
        return [], error


def _encode_with_count(objects: List[Any]) -> Tuple[bytes, numpy.ndarray, Optional[Exception]]:
    """The bytes of the one object in ``objects`` (none on a rank that only receives: no bytes),
    the byte count announced before them, and the encoding error or None. An object that cannot
    be encoded gives no bytes and the count ``_FAILED``; the caller raises the error once the
    count is sent, so no peer waits for bytes."""
    payloads, error = _encode_all(objects)
    payload = payloads[0] if payloads else b""
    return payload, numpy.array([_FAILED if error else len(payload)], _LENGTH), error


def _check_length(length: int, sender: str, what: str) -> int:
    if length < 0:
        raise RuntimeError(f"{what}: {sender} could not encode its objects (see the error on that rank)")
    return length


def _sender(group: Group, local_rank: int) -> str:
    return f"rank {group.ranks[local_rank]}"


def _require_list(value: Any, name: str, what: str) -> None:
    if not isinstance(value, list):
        raise TypeError(f"{what}: {name} must be a list, got {type(value).__name__}")


def _check_received(received: list, expected: int, name: str, what: str, sender: str) -> None:
    if len(received) != expected:
        raise ValueError(
            f"{what}: {sender} sent {len(received)} objects but {name} here has "
            f"{expected} entries; give it the sender's length"
        )


def all_gather_object(object_list: List[Any], obj: Any, group: Optional[Group] = None) -> None:
    """Append every rank's ``obj`` to ``object_list``, in group rank order."""
    _require_list(object_list, "object_list", "all_gather_object")
    group = resolve_group(group, "all_gather_object")
    if not group.is_member():
        return
    pg = group.process_group
    payload, count, error = _encode_with_count([obj])
    lengths = numpy.empty((group.world_size, 1), _LENGTH)
    pg.all_gather(lengths, count)
    if error is not None:
        raise error
    for k, n in enumerate(lengths[:, 0]):
        _check_length(int(n), _sender(group, k), "all_gather_object")
    padded = numpy.zeros(int(lengths.max()), numpy.uint8)
    padded[: len(payload)] = numpy.frombuffer(payload, numpy.uint8)
    gathered = numpy.empty((group.world_size, padded.size), numpy.uint8)
    pg.all_gather(gathered, padded)
    object_list.extend(
        decode_object(row[:n].tobytes(), _sender(group, k)) for k, (row, n) in enumerate(zip(gathered, lengths[:, 0]))
    )


def broadcast_object_list(object_list: List[Any], src: int, group: Optional[Group] = None) -> None:
    """Replace the entries of ``object_list`` on every rank by those of job rank ``src``."""
    _require_list(object_list, "object_list", "broadcast_object_list")
    group = resolve_group(group, "broadcast_object_list")
    if not group.is_member():
        return
    pg = group.process_group
    local_src = group_rank(group, src, "src")
    is_src = group.rank == local_src
    payload, length, error = _encode_with_count([list(object_list)] if is_src else [])
    pg.broadcast(length, local_src)
    if error is not None:
        raise error
    sender = _sender(group, local_src)
    size = _check_length(int(length[0]), sender, "broadcast_object_list")
    data = _as_array(payload) if is_src else numpy.empty(size, numpy.uint8)
    pg.broadcast(data, local_src)
    if not is_src:
        received = decode_object(data.tobytes(), sender)
        _check_received(received, len(object_list), "object_list", "broadcast_object_list", sender)
        object_list[:] = received


def scatter_object_list(
    out_object_list: List[Any], in_object_list: Optional[List[Any]] = None, src: int = 0, group: Optional[Group] = None
) -> None:
    """Make ``out_object_list`` hold one object: entry ``r`` of job rank ``src``'s
    ``in_object_list`` on group rank ``r`` (``in_object_list`` is read on ``src`` only)."""
    _require_list(out_object_list, "out_object_list", "scatter_object_list")
    group = resolve_group(group, "scatter_object_list")
    if not group.is_member():
        return
    pg = group.process_group
    local_src = group_rank(group, src, "src")
    size = group.world_size
    header = _LENGTH.itemsize
    rows, error, payloads = None, None, []
    longest = numpy.zeros(1, _LENGTH)
    if group.rank == local_src:
        if not isinstance(in_object_list, (list, tuple)) or len(in_object_list) != size:
            error = ValueError(
                f"scatter_object_list: the src rank's in_object_list must be a "
                f"list of {size} objects (one per rank of the group), got "
                f"{in_object_list!r:.80}"
            )
        else:
            payloads, error = _encode_all(list(in_object_list))
        longest[0] = max((len(p) for p in payloads), default=_FAILED)
    pg.broadcast(longest, local_src)
    if error is not None:
        raise error
    _check_length(int(longest[0]), _sender(group, local_src), "scatter_object_list")
    if payloads:
        rows = numpy.zeros((size, header + int(longest[0])), numpy.uint8)
        for row, payload in zip(rows, payloads):
            row[:header] = numpy.array([len(payload)], _LENGTH).view(numpy.uint8)
            row[header : header + len(payload)] = numpy.frombuffer(payload, numpy.uint8)
    mine = numpy.empty(header + int(longest[0]), numpy.uint8)
    scatter_rows(group, mine, rows, local_src)
    length = int(mine[:header].view(_LENGTH)[0])
    out_object_list.clear()
    out_object_list.append(decode_object(mine[header : header + length].tobytes(), _sender(group, local_src)))


def _peer(group: Group, rank: Optional[int], rank_in_group: Optional[int], names: tuple, what: str) -> int:
    """The group-local peer named by a job rank or by a rank in the group (not both)."""
    if rank_in_group is None:
        return group_rank(group, 0 if rank is None else rank, names[0])
    if rank is not None:
        raise ValueError(f"{what}: pass {names[0]} or {names[1]}, not both")
    if not isinstance(rank_in_group, int) or not 0 <= rank_in_group < group.world_size:
        raise ValueError(f"{what}: {names[1]}={rank_in_group!r} is not a rank of a group of {group.world_size}")
    return rank_in_group


def _check_not_empty(object_list: Any, what: str) -> None:
    if not isinstance(object_list, list) or not object_list:
        raise ValueError(f"{what}: object_list must be a non-empty list, got {object_list!r:.80}")


def send_object_list(
    object_list: List[Any], dst: Optional[int] = None, group: Optional[Group] = None, dst_in_group: Optional[int] = None
) -> None:
    """Send the objects of ``object_list`` to job rank ``dst`` (0 when None), or to
    ``dst_in_group``, which calls :func:`recv_object_list` with a list of the same length."""
    _check_not_empty(object_list, "send_object_list")
    group = resolve_group(group, "send_object_list")
    if not group.is_member():
        return
    peer = _peer(group, dst, dst_in_group, ("dst", "dst_in_group"), "send_object_list")
    payload, length, error = _encode_with_count([list(object_list)])
    group.process_group.send(length, peer)
    if error is not None:
        raise error
    group.process_group.send(_as_array(payload), peer)


def recv_object_list(
    object_list: List[Any], src: Optional[int] = None, group: Optional[Group] = None, src_in_group: Optional[int] = None
) -> None:
    """Fill ``object_list`` (already of the sender's length) with the objects that job rank
    ``src`` (0 when None), or ``src_in_group``, sends with :func:`send_object_list`."""
    _check_not_empty(object_list, "recv_object_list")
    group = resolve_group(group, "recv_object_list")
    if not group.is_member():
        return
    peer = _peer(group, src, src_in_group, ("src", "src_in_group"), "recv_object_list")
    length = numpy.empty(1, _LENGTH)
    group.process_group.recv(length, peer)
    sender = _sender(group, peer)
    data = numpy.empty(_check_length(int(length[0]), sender, "recv_object_list"), numpy.uint8)
    group.process_group.recv(data, peer)
    received = decode_object(data.tobytes(), sender)
    _check_received(received, len(object_list), "object_list", "recv_object_list", sender)
    object_list[:] = received
