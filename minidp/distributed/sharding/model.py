"""The sharded model: DataParallel whose buckets are cut into one block per rank.

It is :class:`~minidp.core.distributed.data_parallel.DataParallel` with its own reducer (the
seam ``_build_reducer``): the same replica checks, the same broadcast of rank 0's parameters,
the same gradient-ready hooks, buckets launched in the same order while backward runs. What
changes per level:

- ``os``: the buckets are DataParallel's and gradients are all-reduced as there; the parameters
  of each bucket are moved into one flat buffer per bucket so that the optimizer can update this
  rank's block and all-gather it (see :mod:`.layout`).
- ``os_g``: the same buckets, but the comm hook is the reduce-scatter form: each rank receives
  only its block of the averaged gradients, and every parameter's own gradient is dropped.
- ``p_g_os``: one bucket per layer that owns parameters (a *unit*); between uses a rank holds
  only its block of each unit. A forward pre-hook all-gathers the unit's parameters, starting
  the next unit's gather in the background, and a forward post-hook releases them again. As in
  Paddle's stage 3, backward gathers them once more: the post-hook passes the layer's outputs
  through an identity op whose backward, which runs before the layer's own, gathers the unit
  (and starts gathering the unit before it); the unit is released again once every one of its
  parameters has its gradient (or when the backward pass ends). On the host the gathered
  parameters live in one :class:`~.storage.ReleasableBuffer` per unit, whose memory is given
  back on release while the tape's views of it stay valid, so at most a few units are whole at
  any time. On a GPU each gather makes new memory, which the tape keeps until backward has
  passed the layer. Units smaller than ``segment_size`` elements and the layers of
  ``exclude_layer`` stay whole on every rank (replicated), as in Paddle.
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ...core import backend, engine
from ...core.distributed.comm_hooks import GradShards, reduce_scatter_hook
from ...core.distributed.data_parallel import DataParallel
from ...core.distributed.reducer import Reducer, assign_buckets
from ...core.layer import Layer
from ...core.function import result
from ...core.tensor import Tensor
from .layout import ShardedBucket

LEVELS = ("os", "os_g", "p_g_os")


def _units(layers: Layer, params: Sequence[Any], exclude: Sequence[Any]) -> List[tuple]:
    """The units of ``p_g_os``: ``(parameter indices, excluded)`` per layer that owns parameters
    of ``params``, in registration order, split by dtype (a bucket has one dtype)."""
    index_of = {id(p): i for i, p in enumerate(params)}
    units, seen = [], set()
    for _, layer in layers.named_sublayers(include_self=True):
        by_dtype: Dict[Any, List[int]] = collections.OrderedDict()
        for param in layer._parameters.values():
            if param is not None and id(param) in index_of and id(param) not in seen:
                seen.add(id(param))
                by_dtype.setdefault(param._data.dtype, []).append(index_of[id(param)])
        excluded = type(layer).__name__ in exclude or id(layer) in exclude
        units.extend((indices, excluded) for indices in by_dtype.values())
    return units


class GroupShardedModel(DataParallel):
    """``layers`` trained with sharded data parallelism at ``level`` (see the module docstring).

    Built by :func:`~minidp.distributed.sharding.group_sharded_parallel`, which pairs it with a
    :class:`~.optimizer.GroupShardedOptimizer` over the same :attr:`sharded_buckets`.
    """

    def __init__(
        self,
        layers: Layer,
        level: str,
        group: Any = None,
        sync_buffers: bool = False,
        buffer_max_size: int = 2**23,
        segment_size: int = 2**20,
        sync_comm: bool = False,
        exclude_layer: Optional[Sequence[Any]] = None,
    ) -> None:
        object.__setattr__(self, "_level", level)
        object.__setattr__(self, "_segment_size", segment_size)
        object.__setattr__(self, "_sync_comm", sync_comm)
        object.__setattr__(self, "_exclude", list(exclude_layer or []))
        object.__setattr__(self, "sharded_buckets", [])
        object.__setattr__(self, "grad_shards", None)
        object.__setattr__(self, "_hooks", [])
        itemsize = 4  # buffer_max_size counts float32 elements, as in Paddle
        super().__init__(layers, comm_buffer_size=buffer_max_size * itemsize / 2**20, group=group)
        self._sync_buffers = sync_buffers

    @property
    def level(self) -> str:
        return self._level

    def _build_reducer(self, named: List[tuple], pg: Any) -> Reducer:
        params = [p for _, p in named]
        if self._level == "p_g_os":
            units = _units(self._layers, params, self._exclude)
            units.sort(key=lambda unit: unit[0][0], reverse=True)  # launch order: last layers first
            indices = [unit for unit, _ in units]
            sharded = [
                not excluded and sum(params[i]._data.size for i in unit) >= self._segment_size
                for unit, excluded in units
            ]
        else:
            indices = assign_buckets(params, self.last_comm_buffer_size, self.comm_buffer_size)
            sharded = [False] * len(indices)
        last = len(indices) - 1
        buckets = [
            ShardedBucket([params[i] for i in unit], pg, keep_sharded, reserved=1 if b == last else 0)
            for b, (unit, keep_sharded) in enumerate(zip(indices, sharded))
        ]
        object.__setattr__(self, "sharded_buckets", buckets)
        if self._level == "p_g_os":
            # before the reducer's: a unit's gradient-ready hooks release it before the
            # reducer's hook packs its gradients, so the two are not held at once
            self._hook_units(params, buckets)
        reducer = Reducer(
            params,
            indices,
            pg,
            self.find_unused_parameters,
            param_names=[n for n, _ in named],
            reserve_bucket_memory=self._level == "os",
        )
        if self._level != "os":
            xp = backend.get_array_module(params[0]._data)
            shards = GradShards([b.block for b in buckets], [b.dtype for b in buckets], xp)
            object.__setattr__(self, "grad_shards", shards)
            reducer.register_comm_hook(shards, reduce_scatter_hook)
        return reducer

    # --- p_g_os: gathering around each layer's forward --------------------------------------
    def _hook_units(self, params: List[Any], buckets: List[ShardedBucket]) -> None:
        bucket_of = {id(p): b for b in buckets if b.sharded for p in b.params}
        position = {id(p): i for i, p in enumerate(params)}
        order = sorted((b for b in buckets if b.sharded), key=lambda b: position[id(b.params[0])])
        following = {id(b): later for b, later in zip(order, order[1:])}
        preceding = {id(later): b for b, later in zip(order, order[1:])}
        for bucket in order:
            if bucket.storage is not None:
                self._release_when_gradients_are_ready(bucket)
        for _, layer in self._layers.named_sublayers(include_self=True):
            mine = []
            for param in layer._parameters.values():
                bucket = bucket_of.get(id(param)) if param is not None else None
                if bucket is not None and bucket not in mine:
                    mine.append(bucket)
            if not mine:
                continue
            upcoming = following.get(id(mine[-1]))
            earlier = preceding.get(id(mine[0]))

            def gather(layer: Layer, inputs: Any, mine: List[ShardedBucket] = mine, upcoming: Any = upcoming) -> None:
                for bucket in mine:
                    bucket.wait_gathered()
                if upcoming is not None and not self._sync_comm:
                    upcoming.gather(sync_op=False)

            def release(
                layer: Layer, inputs: Any, outputs: Any, mine: List[ShardedBucket] = mine, earlier: Any = earlier
            ) -> Any:
                outputs, release_now = self._gather_before_backward(outputs, mine, earlier)
                if release_now:
                    for bucket in mine:
                        bucket.release()
                return outputs

            self._hooks.append(layer.register_forward_pre_hook(gather))
            self._hooks.append(layer.register_forward_post_hook(release))

    def _gather_before_backward(self, outputs: Any, mine: List[ShardedBucket], earlier: Any) -> tuple:
        """``(outputs, release now)``: ``outputs`` (a tensor, or a tuple or list of them)
        passed through an identity op whose backward gathers ``mine`` again (and starts
        gathering ``earlier``, the unit that backward reaches next). Outputs of another kind
        cannot carry that op: ``mine`` then stays whole until backward has passed it."""
        if not any(bucket.storage is not None for bucket in mine):
            return outputs, True  # on a GPU the tape keeps its own gathered arrays

        def regather(grad: Any) -> tuple:
            for bucket in mine:
                bucket.wait_gathered()
                engine.queue_end_of_backward_callback(bucket.release)
            if earlier is not None and not self._sync_comm:
                earlier.gather(sync_op=False)
                engine.queue_end_of_backward_callback(earlier.release)
            return (grad,)

        def through(tensor: Tensor) -> Tensor:
            return tensor if tensor.stop_gradient else result(tensor._data, (tensor,), regather)

        if isinstance(outputs, Tensor):
            return through(outputs), True
        if isinstance(outputs, (tuple, list)) and all(isinstance(o, Tensor) for o in outputs):
            return type(outputs)(through(o) for o in outputs), True
        return outputs, False

    def _release_when_gradients_are_ready(self, bucket: ShardedBucket) -> None:
        """Release ``bucket`` in backward as soon as each of its parameters has its gradient
        (those without one never report: the end of the pass releases it then)."""
        ready: set = set()

        def on_ready(param: Any) -> None:
            if not ready:
                engine.queue_end_of_backward_callback(ready.clear)
            ready.add(id(param))
            if len(ready) == len(bucket.params):
                bucket.release()

        for param in bucket.params:
            self._hooks.append(param._register_grad_ready_hook(on_ready))

    @contextlib.contextmanager
    def _all_gathered(self) -> Iterator[None]:
        """Inside, every parameter holds its whole value (a collective: every rank enters)."""
        for bucket in self.sharded_buckets:
            bucket.gather(sync_op=False)
        for bucket in self.sharded_buckets:
            bucket.wait_gathered()
        try:
            yield
        finally:
            for bucket in self.sharded_buckets:
                bucket.release()

    def get_all_parameters(self) -> None:
        """Gather every parameter's whole value (Paddle's name); the next forward releases the
        ones it uses. A collective: every rank calls it."""
        for bucket in self.sharded_buckets:
            bucket.gather(sync_op=False)
        for bucket in self.sharded_buckets:
            bucket.wait_gathered()

    # --- DataParallel's behaviour that sharding changes --------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._sync_buffers and self._reducer is not None:
            for buffer in self._layers.buffers():
                self._reducer.process_group.broadcast(buffer._data, 0)
        return super().forward(*inputs, **kwargs)

    def register_comm_hook(self, state: Any, hook: Any) -> None:
        if self._level != "os":
            raise RuntimeError(
                f"register_comm_hook: level {self._level!r} sends gradients with its own "
                "reduce-scatter hook; comm hooks apply to level 'os' and DataParallel only"
            )
        super().register_comm_hook(state, hook)

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "join(): uneven inputs are not supported with sharding (Paddle has no join either); "
            "give every rank the same number of batches (DistributedBatchSampler with drop_last=True)"
        )

    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        """The whole model's state, with the same keys as without sharding. At ``p_g_os`` the
        parameters are all-gathered first and returned as copies: every rank calls it."""
        if not any(b.sharded for b in self.sharded_buckets):
            return super().state_dict(*args, **kwargs)
        with self._all_gathered():
            state = super().state_dict(*args, **kwargs)
            return collections.OrderedDict(
                (key, Tensor._wrap(value._data.copy()) if isinstance(value, Tensor) else value)
                for key, value in state.items()
            )

    def set_state_dict(self, state_dict: dict, use_structured_name: bool = True) -> Any:
        """Load a whole model's state (saved with or without sharding); each rank keeps its
        blocks. At ``p_g_os`` a collective: every rank calls it."""
        if not any(b.sharded for b in self.sharded_buckets):
            return super().set_state_dict(state_dict, use_structured_name)
        with self._all_gathered():
            result = super().set_state_dict(state_dict, use_structured_name)
            for bucket in self.sharded_buckets:
                if bucket.sharded:
                    bucket.scatter_from_params()
        return result

    set_dict = set_state_dict
    load_dict = set_state_dict
