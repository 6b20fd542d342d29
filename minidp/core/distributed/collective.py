"""Groups, their shared state, and the collectives DataParallel and init_parallel_env need:
``all_reduce``, ``broadcast`` and ``barrier`` (the rest of Paddle's collectives are in
:mod:`minidp.distributed.communication`).

Every collective works in place on ``tensor._data`` through the group's process group; ranks
given by users (``src``, ``dst``, ``new_group(ranks)``) are ranks of the whole job, as in Paddle,
and are translated to group-local ranks here. ``group=None`` means the default group created by
``init_parallel_env``. Every call returns the operation's work handle (already complete when
``sync_op=True``); processes outside the group do nothing and get None. Each group remembers
its asynchronous operations until they finish, so :func:`wait` can wait for all of them.

Every group is made by :func:`create_group` and found by :func:`resolve_group`. The helpers that
are not Paddle functions (:func:`resolve_group`, :func:`resolve_process_group`,
:func:`tensor_array`, :func:`group_rank`, :func:`track`) serve the other collective modules.

Like Paddle and MPI, every process of a group must call the same collectives, in the same order,
with arrays of the same shape and dtype; ``new_group`` must be called by every process of the job.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy

from .. import backend as array_backend
from ..tensor import Tensor
from .env import ParallelEnv
from .backends import GroupSpec, ProcessGroup, ReduceOp, Work, get_backend_factory

logger = logging.getLogger("minidp.distributed")


class Group:
    """A set of ranks that communicate together, and the process group that carries them.

    ``rank`` is this process's rank in the group (-1 when it is not a member), ``ranks`` the
    job ranks of the members in group order, ``process_group`` the backend object.
    """

    def __init__(
        self, rank: int, id: int, ranks: Sequence[int], pg: Optional[ProcessGroup] = None, name: Optional[str] = None
    ) -> None:
        self._rank = rank
        self._id = id
        self._ranks = list(ranks)
        self._pg = pg
        self._name = name if name is not None else f"group_{id}"
        self._in_flight: List[Any] = []

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

    def get_global_rank(self, rank: int) -> int:
        """The job rank of group-local rank ``rank``, or -1 when this process is not a member."""
        return self._ranks[rank] if self.is_member() else -1

    def __repr__(self) -> str:
        return (
            f"Group(id={self._id}, name={self._name!r}, rank={self._rank}, "
            f"ranks={self._ranks}, backend={self.backend!r})"
        )


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


def is_initialized() -> bool:
    """True once ``init_parallel_env`` has created the default group (and until it is destroyed)."""
    return DEFAULT_GROUP_ID in _state.groups


def get_group(id: int = DEFAULT_GROUP_ID) -> Optional[Group]:
    """The group with ``id`` (0 is the default group), or None when there is none."""
    return _state.groups.get(id)


def _default_group(what: str) -> Group:
    if not is_initialized():
        if ParallelEnv().world_size < 2:
            raise RuntimeError(
                f"{what}: this is a single-process run (no spawn, launcher or mpirun started it), so "
                "there are no other ranks to synchronise with and no default group; start the script "
                "with spawn, python -m minidp.distributed.launch or mpirun to run collectives"
            )
        raise RuntimeError(f"{what} needs the default group: call minidp.distributed.init_parallel_env() first")
    return _state.groups[DEFAULT_GROUP_ID]


def _seconds(timeout: Union[None, float, datetime.timedelta], default: float) -> float:
    if timeout is None:
        return default
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if not seconds > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds


def new_group(
    ranks: Optional[Sequence[int]] = None,
    backend: Optional[str] = None,
    timeout: Union[None, float, datetime.timedelta] = None,
) -> Group:
    """Create a group of job ranks ``ranks`` (all ranks when None); every process must call it.

    ``backend`` defaults to the default group's; ``timeout`` (seconds or a ``timedelta``)
    defaults to the default group's, i.e. ``PADDLE_PG_TIMEOUT``.
    """
    _default_group("new_group")
    members = sorted(set(range(_state.world_size) if ranks is None else (int(r) for r in ranks)))
    if not members or members[0] < 0 or members[-1] >= _state.world_size:
        raise ValueError(f"new_group ranks {ranks!r} must be job ranks in 0..{_state.world_size - 1}")
    spec = GroupSpec(
        name=f"group_{_state.next_id}",
        global_ranks=tuple(members),
        global_rank=_state.global_rank,
        timeout=_seconds(timeout, _state.timeout),
        store=_state.store,
    )
    return create_group(spec, backend or _state.backend)


def create_group(spec: GroupSpec, backend: str) -> Group:
    """Build ``spec``'s process group with ``backend`` and register it under the next group id.

    ``new_group`` and ``gloo_init_parallel_env`` make their groups here; the default group is
    ``init_parallel_env``'s (see :func:`_register_default_group`).
    """
    pg = get_backend_factory(backend)(spec)
    group = Group(spec.rank, _state.next_id, spec.global_ranks, pg, spec.name)
    _state.next_id += 1
    _state.groups[group.id] = group
    logger.info("created %r", group)
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
    _state.next_id = 1


def resolve_group(group: Union[None, Group, ProcessGroup], what: str) -> Group:
    """The :class:`Group` that ``group`` names: the default group for None, the group carrying
    a process group; ``what`` names the caller in errors."""
    if group is None:
        return _default_group(what)
    if isinstance(group, Group):
        return group
    if isinstance(group, ProcessGroup):
        for known in _state.groups.values():
            if known.process_group is group:
                return known
        return Group(group.rank, -1, group.global_ranks, group, group.name)
    raise TypeError(f"{what}: group must be a Group (or its process group), got {type(group).__name__}")


def resolve_process_group(group: Union[None, Group, ProcessGroup], what: str) -> Optional[ProcessGroup]:
    """The process group behind ``group`` (see :func:`resolve_group`), or None for the default
    group before ``init_parallel_env`` (callers then run on this process alone)."""
    if group is None and not is_initialized():
        return None
    return resolve_group(group, what).process_group


def tensor_array(tensor: Any, what: str) -> Any:
    """The tensor's array, made C-contiguous and writable in place on the tensor when needed."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be a minidp Tensor, got {type(tensor).__name__}")
    data = tensor._data
    if not data.flags.c_contiguous or not getattr(data.flags, "writeable", True):
        data = array_backend.get_array_module(data).array(data, order="C", copy=True)
        tensor._data = data
    return data


def group_rank(group: Group, rank: int, what: str) -> int:
    """The group-local rank of job rank ``rank``; ``ValueError`` naming ``what`` when it is not
    a member of ``group``."""
    if not isinstance(rank, (int, numpy.integer)) or isinstance(rank, bool):
        raise TypeError(f"{what} must be an int job rank, got {type(rank).__name__}")
    local = group.get_group_rank(int(rank))
    if local < 0:
        raise ValueError(f"{what}={rank} is not a member of {group!r}; pass a job rank from {group.ranks}")
    return local


def track(group: Group, work: Any, sync_op: bool) -> Any:
    """Return ``work``; an asynchronous one is remembered by ``group`` until it has finished,
    for :func:`wait`."""
    if not sync_op:
        group._in_flight = [w for w in group._in_flight if not w.is_completed()]
        group._in_flight.append(work)
    return work


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Optional[Group] = None, sync_op: bool = True
) -> Optional[Work]:
    """Reduce ``tensor`` over the group with ``op``, in place, on every rank."""
    group = resolve_group(group, "all_reduce")
    if not group.is_member():
        return None
    work = group.process_group.all_reduce(tensor_array(tensor, "tensor"), op, sync_op)
    return track(group, work, sync_op)


def broadcast(tensor: Tensor, src: int = 0, group: Optional[Group] = None, sync_op: bool = True) -> Optional[Work]:
    """Overwrite ``tensor`` on every rank with job rank ``src``'s ``tensor``."""
    group = resolve_group(group, "broadcast")
    if not group.is_member():
        return None
    work = group.process_group.broadcast(tensor_array(tensor, "tensor"), group_rank(group, src, "src"), sync_op)
    return track(group, work, sync_op)


def barrier(group: Optional[Group] = None) -> None:
    """Return once every rank of the group has reached the barrier."""
    group = resolve_group(group, "barrier")
    if group.is_member():
        group.process_group.barrier()


def wait(tensor: Tensor, group: Optional[Group] = None, use_calc_stream: bool = True) -> None:
    """Block until every asynchronous operation issued on ``group`` so far has finished.

    Paddle's ``wait`` makes a GPU stream wait for the communication that produced ``tensor``;
    here the operations of a group finish in the order they were issued, so waiting for all of
    them makes ``tensor`` (and every other result) ready, whichever ``use_calc_stream`` says.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"wait: tensor must be a minidp Tensor, got {type(tensor).__name__}")
    group = resolve_group(group, "wait")
    pending, group._in_flight = group._in_flight, []
    for work in pending:
        work.wait()


def get_backend(group: Optional[Group] = None) -> str:
    """The name of ``group``'s backend in capitals, as Paddle reports it: ``'GLOO'``, ``'MPI'``,
    ``'NCCL'``."""
    group = resolve_group(group, "get_backend")
    return (group.backend or _state.backend).upper()


def is_available() -> bool:
    """True: minidp.distributed works in every installation (gloo needs only the standard
    library; mpi and nccl load their libraries when a group uses them)."""
    return True
