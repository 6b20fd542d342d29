"""Groups and the collectives on minidp Tensors (Paddle's ``paddle.distributed`` functions).

Every collective works in place on ``tensor._data`` through the group's process group; ranks
given by users (``src``, ``dst``, ``new_group(ranks)``) are ranks of the whole job, as in Paddle,
and are translated to group-local ranks here. ``group=None`` means the default group created by
``init_parallel_env``. Every call returns the operation's work handle (already complete when
``sync_op=True``); processes outside the group do nothing and get None.

Like Paddle and MPI, every process of a group must call the same collectives, in the same order,
with arrays of the same shape and dtype; ``new_group`` must be called by every process of the job.
"""
from __future__ import annotations

import datetime
import logging
from typing import Any, Dict, List, Optional, Sequence, Union

from .. import backend as array_backend
from ..autograd.tensor import Tensor
from .backends import GroupSpec, ProcessGroup, ReduceOp, Work, get_backend_factory

logger = logging.getLogger("minidp.distributed")


class Group:
    """A set of ranks that communicate together, and the process group that carries them.

    ``rank`` is this process's rank in the group (-1 when it is not a member), ``ranks`` the
    job ranks of the members in group order, ``process_group`` the backend object.
    """

    def __init__(self, rank: int, id: int, ranks: Sequence[int],
                 pg: Optional[ProcessGroup] = None, name: Optional[str] = None) -> None:
        self._rank = rank
        self._id = id
        self._ranks = list(ranks)
        self._pg = pg
        self._name = name if name is not None else f"group_{id}"

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def ranks(self) -> List[int]:
        return list(self._ranks)

    @property
    def world_size(self) -> int:
        return len(self._ranks)

    nranks = world_size

    @property
    def id(self) -> int:
        return self._id

    @property
    def name(self) -> str:
        return self._name

    @property
    def process_group(self) -> Optional[ProcessGroup]:
        return self._pg

    @property
    def backend(self) -> Optional[str]:
        return self._pg.backend_name if self._pg is not None else None

    def is_member(self) -> bool:
        return self._rank >= 0

    def get_group_rank(self, rank: int) -> int:
        """The group-local rank of job rank ``rank``, or -1 when it is not in the group."""
        return self._ranks.index(rank) if rank in self._ranks else -1

    def __repr__(self) -> str:
        return (f"Group(id={self._id}, name={self._name!r}, rank={self._rank}, "
                f"ranks={self._ranks}, backend={self.backend!r})")


class _State:
    """What the job shares across groups: the default group, the store, the defaults."""

    def __init__(self) -> None:
        self.groups: Dict[int, Group] = {}
        self.store: Any = None
        self.backend = "gloo"
        self.timeout = 1800.0
        self.global_rank = 0
        self.world_size = 1
        self.next_id = 1


_state = _State()
DEFAULT_GROUP_ID = 0


def _register_default_group(group: Group, store: Any, backend: str, timeout: float) -> None:
    """Called by ``init_parallel_env`` once the default process group exists."""
    _state.groups[DEFAULT_GROUP_ID] = group
    _state.store = store
    _state.backend = backend
    _state.timeout = timeout
    _state.global_rank = group.rank
    _state.world_size = group.world_size
    _state.next_id = 1


def is_initialized() -> bool:
    """True once ``init_parallel_env`` has created the default group (and until it is destroyed)."""
    return DEFAULT_GROUP_ID in _state.groups


def get_group(id: int = DEFAULT_GROUP_ID) -> Optional[Group]:
    """The group with ``id`` (0 is the default group), or None when there is none."""
    return _state.groups.get(id)


def _default_group(what: str) -> Group:
    if not is_initialized():
        raise RuntimeError(f"{what} needs the default group: call "
                           "minidp.distributed.init_parallel_env() first")
    return _state.groups[DEFAULT_GROUP_ID]


def _seconds(timeout: Union[None, float, datetime.timedelta], default: float) -> float:
    if timeout is None:
        return default
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if not seconds > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds


def new_group(ranks: Optional[Sequence[int]] = None, backend: Optional[str] = None,
              timeout: Union[None, float, datetime.timedelta] = None) -> Group:
    """Create a group of job ranks ``ranks`` (all ranks when None); every process must call it.

    ``backend`` defaults to the default group's; ``timeout`` (seconds or a ``timedelta``)
    defaults to the default group's, i.e. ``PADDLE_PG_TIMEOUT``.
    """
    _default_group("new_group")
    members = sorted(set(range(_state.world_size) if ranks is None else (int(r) for r in ranks)))
    if not members or members[0] < 0 or members[-1] >= _state.world_size:
        raise ValueError(f"new_group ranks {ranks!r} must be job ranks in "
                         f"0..{_state.world_size - 1}")
    group_id = _state.next_id
    _state.next_id += 1
    spec = GroupSpec(name=f"group_{group_id}", global_ranks=tuple(members),
                     global_rank=_state.global_rank, timeout=_seconds(timeout, _state.timeout),
                     store=_state.store)
    pg = get_backend_factory(backend or _state.backend)(spec)
    group = Group(spec.rank, group_id, members, pg, spec.name)
    _state.groups[group_id] = group
    logger.info("rank %d: created %r", _state.global_rank, group)
    return group


def destroy_process_group(group: Optional[Group] = None) -> None:
    """Shut down ``group``, or every group when None; ``init_parallel_env`` may then run again.

    The rendezvous store outlives the groups (as Paddle's global store does), so a new
    initialisation in the same processes finds it instead of racing a restarting server.
    """
    if group is not None:
        if group.process_group is not None:
            group.process_group.shutdown()
        _state.groups.pop(group.id, None)
        return
    for each in reversed(list(_state.groups.values())):
        if each.process_group is not None:
            each.process_group.shutdown()
    _state.groups.clear()
    _state.store = None


def _resolve(group: Union[None, Group, ProcessGroup], what: str) -> Group:
    if group is None:
        return _default_group(what)
    if isinstance(group, Group):
        return group
    if isinstance(group, ProcessGroup):
        for known in _state.groups.values():
            if known.process_group is group:
                return known
        return Group(group.rank, -1, group.global_ranks, group, group.name)
    raise TypeError(f"{what}: group must be a Group (or its process group), "
                    f"got {type(group).__name__}")


def _array(tensor: Any, what: str) -> Any:
    """The tensor's array, made C-contiguous and writable in place on the tensor when needed."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be a minidp Tensor, got {type(tensor).__name__}")
    data = tensor._data
    if not data.flags.c_contiguous or not getattr(data.flags, "writeable", True):
        data = array_backend.get_array_module(data).array(data, order="C", copy=True)
        tensor._data = data
    return data


def _group_rank(group: Group, rank: int, what: str) -> int:
    local = group.get_group_rank(int(rank))
    if local < 0:
        raise ValueError(f"{what}={rank} is not a member of {group!r}")
    return local


class _CopyOutWork:
    """Work whose results are copied into the caller's tensors when it is waited on."""

    def __init__(self, work: Work, copy_out) -> None:
        self._work = work
        self._copy_out = copy_out

    def is_completed(self) -> bool:
        return self._work.is_completed()

    def wait(self, timeout: Optional[float] = None) -> bool:
        self._work.wait(timeout)
        if self._copy_out is not None:
            self._copy_out()
            self._copy_out = None
        return True


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Optional[Group] = None,
               sync_op: bool = True) -> Optional[Work]:
    """Reduce ``tensor`` over the group with ``op``, in place, on every rank."""
    group = _resolve(group, "all_reduce")
    if not group.is_member():
        return None
    return group.process_group.all_reduce(_array(tensor, "tensor"), op, sync_op)


def broadcast(tensor: Tensor, src: int = 0, group: Optional[Group] = None,
              sync_op: bool = True) -> Optional[Work]:
    """Overwrite ``tensor`` on every rank with job rank ``src``'s ``tensor``."""
    group = _resolve(group, "broadcast")
    if not group.is_member():
        return None
    return group.process_group.broadcast(_array(tensor, "tensor"),
                                         _group_rank(group, src, "src"), sync_op)


def all_gather(tensor_list: List[Tensor], tensor: Tensor, group: Optional[Group] = None,
               sync_op: bool = True) -> Optional[Union[Work, _CopyOutWork]]:
    """Gather every rank's ``tensor`` into ``tensor_list`` (in group rank order).

    An empty ``tensor_list`` is extended with new tensors; a filled one must hold
    ``world_size`` tensors of ``tensor``'s shape and dtype, which receive the results.
    """
    group = _resolve(group, "all_gather")
    if not group.is_member():
        return None
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather tensor_list must be a list, got {type(tensor_list).__name__}")
    data = _array(tensor, "tensor")
    size = group.world_size
    gathered = array_backend.get_array_module(data).empty((size, *data.shape), data.dtype)
    if tensor_list:
        if len(tensor_list) != size or any(
                not isinstance(t, Tensor) or list(t.shape) != list(data.shape)
                or t.dtype != data.dtype for t in tensor_list):
            raise ValueError(f"all_gather tensor_list must be empty or hold {size} tensors of "
                             f"shape {list(data.shape)} and dtype {data.dtype}")
        targets = [_array(t, "tensor_list item") for t in tensor_list]

        def copy_out() -> None:
            for target, row in zip(targets, gathered):
                target[...] = row

        work = group.process_group.all_gather(gathered, data, sync_op)
        if sync_op:
            copy_out()
            return work
        return _CopyOutWork(work, copy_out)
    tensor_list.extend(Tensor(row) for row in gathered)
    return group.process_group.all_gather(gathered, data, sync_op)


def reduce_scatter(tensor: Tensor, tensor_list: Union[Tensor, List[Tensor]],
                   op: ReduceOp = ReduceOp.SUM, group: Optional[Group] = None,
                   sync_op: bool = True) -> Optional[Work]:
    """Reduce ``tensor_list`` over the group and leave block ``rank`` of the result in ``tensor``.

    ``tensor_list`` is either ``world_size`` tensors shaped like ``tensor`` or one tensor
    holding ``world_size`` times as many elements.
    """
    group = _resolve(group, "reduce_scatter")
    if not group.is_member():
        return None
    out = _array(tensor, "tensor")
    if isinstance(tensor_list, Tensor):
        source = _array(tensor_list, "tensor_list")
    else:
        if len(tensor_list) != group.world_size:
            raise ValueError(f"reduce_scatter needs {group.world_size} input tensors, "
                             f"got {len(tensor_list)}")
        xp = array_backend.get_array_module(out)
        source = xp.stack([_array(t, "tensor_list item") for t in tensor_list])
    return group.process_group.reduce_scatter(out, source, op, sync_op)


def barrier(group: Optional[Group] = None) -> None:
    """Return once every rank of the group has reached the barrier."""
    group = _resolve(group, "barrier")
    if group.is_member():
        group.process_group.barrier()


def send(tensor: Tensor, dst: int = 0, group: Optional[Group] = None,
         sync_op: bool = True) -> Optional[Work]:
    """Send ``tensor`` to job rank ``dst`` (which calls ``recv``); completes before returning."""
    group = _resolve(group, "send")
    if not group.is_member():
        return None
    group.process_group.send(_array(tensor, "tensor"), _group_rank(group, dst, "dst"))
    return Work.completed(group.process_group.describe("send"))


def recv(tensor: Tensor, src: int = 0, group: Optional[Group] = None,
         sync_op: bool = True) -> Optional[Work]:
    """Receive into ``tensor`` what job rank ``src`` sends; completes before returning."""
    group = _resolve(group, "recv")
    if not group.is_member():
        return None
    group.process_group.recv(_array(tensor, "tensor"), _group_rank(group, src, "src"))
    return Work.completed(group.process_group.describe("recv"))
