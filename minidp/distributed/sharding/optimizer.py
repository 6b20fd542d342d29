"""The sharded optimizer: each rank keeps the state of, and updates, only its block of the
parameters.

The user's optimizer does the arithmetic. For every piece of a parameter in this rank's block
(see :mod:`.layout`) it gets a slot of its own, with the parameter's learning-rate factor,
weight decay, regularizer and hyperparameters; ``step`` runs the optimizer's update on those
slots, with the piece's part of the averaged gradient. The updates of SGD, Momentum, Adam and
the other element-wise optimizers do not look beyond an element, so the pieces get exactly the
values the whole parameters would get; optimizers whose update needs a whole parameter (Lamb's
trust ratio, LBFGS) are refused. Clipping by the global norm sums the squares of every rank's
pieces with an all-reduce (in another order than one process would: the last bits may differ).

Where the gradient comes from depends on the level: ``os`` reads the parameters' own averaged
gradients; ``os_g`` and ``p_g_os`` read this rank's blocks of the reduce-scattered gradients
(a :class:`~minidp.core.distributed.comm_hooks.GradShards`). Afterwards, replicated buckets
all-gather the updated blocks, so every rank holds the new parameters; sharded buckets keep
them until the next forward gathers them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy

from ...core import backend, timeline
from ...core.distributed.comm_hooks import GradShards
from ...core.optimizer import Optimizer
from ...core.tensor import Tensor
from ...nn.clip import ClipGradByGlobalNorm, ClipGradByNorm
from ...optimizer.lamb import Lamb
from ...optimizer.lbfgs import LBFGS
from .layout import ShardedBucket


class ShardedGlobalNorm:
    """:class:`~minidp.nn.ClipGradByGlobalNorm` over pieces held by different ranks: the sum of
    squares of the local pieces is all-reduced before the norm is taken."""

    def __init__(self, clip: ClipGradByGlobalNorm, group: Any) -> None:
        self.clip_norm = clip.clip_norm
        self._group = group

    def _clip_arrays(self, params: Sequence[Tensor], grads: list) -> list:
        total = numpy.zeros(1, dtype=numpy.float64)
        for param, grad in zip(params, grads):
            if grad is not None and param.need_clip:
                flat = grad.reshape(-1).astype(numpy.float64)
                total[0] += float(backend.get_array_module(flat).dot(flat, flat))
        self._group.all_reduce(total)
        global_norm = math.sqrt(float(total[0]))
        if global_norm <= self.clip_norm:
            return grads
        scale = self.clip_norm / global_norm
        return [grad * scale if grad is not None and p.need_clip else grad for p, grad in zip(params, grads)]


def check_optimizer(optimizer: Any) -> None:
    """``TypeError``/``ValueError`` unless ``optimizer`` can update pieces of parameters."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"group_sharded_parallel: optimizer must be a minidp.optimizer.Optimizer, got {type(optimizer).__name__}"
        )
    if isinstance(optimizer, (Lamb, LBFGS)):
        raise ValueError(
            f"group_sharded_parallel: {type(optimizer).__name__} needs whole parameters for each "
            "update, which sharding splits between ranks; use an element-wise optimizer (SGD, "
            "Momentum, Adam, AdamW, ...) or DataParallel"
        )
    if optimizer._multi_precision:
        raise ValueError(
            "group_sharded_parallel: multi_precision=True (float32 master weights) is not "
            "supported with sharding yet; train float32 parameters or use DataParallel"
        )
    if isinstance(optimizer._grad_clip, ClipGradByNorm):
        raise ValueError(
            "group_sharded_parallel: ClipGradByNorm clips each whole parameter, which sharding "
            "splits between ranks; use ClipGradByGlobalNorm or ClipGradByValue"
        )


class GroupShardedOptimizer:
    """``optimizer`` restricted to this rank's pieces of ``buckets`` (see the module docstring).

    ``grad_shards`` holds the reduce-scattered gradients (None: read the parameters' own, the
    ``os`` level); ``unused`` returns the ids of parameters the model leaves without gradient.
    ``_optim`` is the wrapped optimizer, as in Paddle.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        buckets: List[ShardedBucket],
        group: Any,
        grad_shards: Optional[GradShards],
        unused: Callable[[], frozenset],
    ) -> None:
        check_optimizer(optimizer)
        self._optim = optimizer
        self._buckets = buckets
        self._group = group
        self._grad_shards = grad_shards
        self._unused = unused
        if isinstance(optimizer._grad_clip, ClipGradByGlobalNorm):
            optimizer._grad_clip = ShardedGlobalNorm(optimizer._grad_clip, group)
        parent_of = {id(slot.param): slot for slot in optimizer._slots}
        # per bucket: (piece index, its slot) for the pieces of parameters this optimizer updates
        self._slots: List[List[tuple]] = []
        for bucket in buckets:
            slots = []
            for index, (piece, tensor) in enumerate(zip(bucket.pieces, bucket.piece_params)):
                parent = parent_of.get(id(bucket.params[piece.entry]))
                if parent is None:
                    continue
                slot = optimizer._make_slot(tensor, parent.lr_ratio, parent.weight_decay, parent.hyper)
                slot.regularizer = parent.regularizer
                slot.state = {key: self._piece_of_state(value, piece) for key, value in parent.state.items()}
                slots.append((index, slot))
            self._slots.append(slots)
        for slot in optimizer._slots:  # what the pieces took over is no longer kept whole
            slot.state, slot.ready = {}, False

    @staticmethod
    def _piece_of_state(value: Any, piece: Any) -> Any:
        if isinstance(value, float):
            return value
        return value.reshape(-1)[piece.start : piece.stop].copy()

    # --- the update -----------------------------------------------------------------------
    def _gradients(self, b: int, bucket: ShardedBucket) -> List[Optional[Any]]:
        """Each piece's part of its parameter's averaged gradient (None: the parameter has none)."""
        if self._grad_shards is None:
            views = bucket.gradient_views([p._grad for p in bucket.params])
        elif self._grad_shards.filled[b]:
            views = bucket.block_views(self._grad_shards.blocks[b])
        else:
            views = [None] * len(bucket.pieces)
        unused = self._unused()
        if unused:
            views = [None if id(bucket.params[p.entry]) in unused else v for p, v in zip(bucket.pieces, views)]
        return views

    def step(self) -> None:
        """Update this rank's pieces, then bring every rank the updated parameters."""
        with timeline.span("optimizer step", "optimizer"):
            for bucket in self._buckets:
                bucket.release()  # a gather left from forward would read blocks being updated
            slots, params, grads = [], [], []
            for b, bucket in enumerate(self._buckets):
                views = self._gradients(b, bucket)
                for index, slot in self._slots[b]:
                    slots.append(slot)
                    params.append(slot.param)
                    grads.append(views[index])
            self._optim._apply(slots, params, grads)
        with timeline.span("all_gather parameters", "optimizer"):
            works = [bucket.all_gather() for bucket in self._buckets if not bucket.sharded]
            for work in works:
                work.wait()

    def minimize(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("optimizer.minimize() is not supported with sharding (as in Paddle); use step()")

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Clear the parameters' gradients and this rank's gradient blocks."""
        self._optim.clear_grad(set_to_zero)
        if self._grad_shards is not None:
            self._grad_shards.clear()

    clear_gradients = clear_grad

    def get_lr(self) -> float:
        return self._optim.get_lr()

    def set_lr(self, value: float) -> None:
        self._optim.set_lr(value)

    def set_lr_scheduler(self, scheduler: Any) -> None:
        self._optim.set_lr_scheduler(scheduler)

    # --- state ----------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The whole optimizer state, as the unsharded optimizer's ``state_dict`` gives it (the
        same keys and shapes): every rank's pieces are all-gathered, so every rank calls it."""
        optim = self._optim
        found: Dict[int, Dict[str, Any]] = {}
        for b, bucket in enumerate(self._buckets):
            found.update(self._gather_bucket_state(bucket, self._slots[b]))
        state: Dict[str, Any] = {}
        for slot in optim._slots:
            for key, value in found.get(id(slot.param), {}).items():
                state[f"{slot.param.name}_{key}_0"] = value
        state["param_names"] = [slot.param.name for slot in optim._slots]
        scheduler = optim._learning_rate
        if hasattr(scheduler, "state_dict"):
            state["LR_Scheduler"] = scheduler.state_dict()
        return state

    def _gather_bucket_state(self, bucket: ShardedBucket, slots: List[tuple]) -> Dict[int, Dict[str, Any]]:
        """``{id(parameter): {state key: whole value}}`` for the parameters of ``bucket`` that
        some rank has state for (a collective: every rank gathers every bucket)."""
        optim, size = self._optim, self._group.size
        scalars = numpy.full((len(bucket.params), len(optim._scalar_states)), numpy.nan)
        has_state = numpy.zeros(len(bucket.params))
        for index, slot in slots:
            entry = bucket.pieces[index].entry
            if slot.state:
                has_state[entry] = 1
                scalars[entry] = [slot.state[key] for key in optim._scalar_states]
        everyone = numpy.zeros((size, *scalars.shape))
        self._group.all_gather(everyone, scalars)
        anywhere = numpy.zeros((size, len(bucket.params)))
        self._group.all_gather(anywhere, has_state)
        result: Dict[int, Dict[str, Any]] = {}
        xp = backend.get_array_module(bucket.shard)
        for key in optim._array_states:
            block = xp.zeros(bucket.block, dtype=self._state_dtype(key, bucket))
            for index, slot in slots:
                if slot.state:
                    piece = bucket.pieces[index]
                    block[piece.offset : piece.offset + piece.stop - piece.start] = slot.state[key].reshape(-1)
            full = xp.zeros((size, bucket.block), dtype=block.dtype)
            self._group.all_gather(full, block)
            full = full.reshape(-1)
            for entry, (param, offset, numel) in enumerate(zip(bucket.params, bucket.offsets, bucket.sizes)):
                if anywhere[:, entry].any():
                    value = full[offset : offset + numel].reshape(param._data.shape).copy()
                    result.setdefault(id(param), {})[key] = Tensor._wrap(value)
        for entry, param in enumerate(bucket.params):
            if anywhere[:, entry].any():
                values = everyone[:, entry][anywhere[:, entry] > 0][0]
                for key, value in zip(optim._scalar_states, values):
                    result.setdefault(id(param), {})[key] = Tensor._wrap(numpy.array([value]))
        return result

    def _state_dtype(self, key: str, bucket: ShardedBucket) -> Any:
        """The dtype of array state ``key`` for the parameters of ``bucket`` (the same on every
        rank, whether or not it holds a piece): that of a fresh state of a one-element piece."""
        probe = Tensor._wrap(backend.get_array_module(bucket.shard).zeros(1, dtype=bucket.dtype))
        return self._optim._init_state(self._optim._make_slot(probe, 1.0, 0.0, self._optim._default_hyper))[key].dtype

    def set_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Load a whole optimizer state (an unsharded optimizer's ``state_dict``, or this one's):
        each rank keeps the parts of its pieces."""
        optim = self._optim
        names = state_dict.get("param_names")
        names = optim._saved_names(state_dict) if names is None else list(names)
        if len(names) != len(optim._slots):
            raise ValueError(
                f"set_state_dict: the state is for {len(names)} parameters but the optimizer has {len(optim._slots)}"
            )
        saved_name = {id(slot.param): name for slot, name in zip(optim._slots, names)}
        keys = optim._array_states + optim._scalar_states
        for b, bucket in enumerate(self._buckets):
            for index, slot in self._slots[b]:
                piece = bucket.pieces[index]
                name = saved_name[id(bucket.params[piece.entry])]
                entries = {key: state_dict.get(f"{name}_{key}_0") for key in keys}
                if all(value is None for value in entries.values()):
                    slot.state, slot.ready = {}, False
                    continue
                missing = [key for key, value in entries.items() if value is None]
                if missing:
                    raise ValueError(f"set_state_dict: the state of {name} is incomplete: {missing} missing")
                restored = {}
                for key, value in entries.items():
                    array = value._data if isinstance(value, Tensor) else value
                    if key in optim._scalar_states:
                        restored[key] = float(backend.to_host(numpy.asarray(array).reshape(-1))[0])
                    else:
                        part = array.reshape(-1)[piece.start : piece.stop]
                        xp = backend.get_array_module(slot.param._data)
                        restored[key] = xp.array(part, dtype=array.dtype, copy=True)
                slot.state, slot.ready = restored, False
        if "LR_Scheduler" in state_dict and hasattr(optim._learning_rate, "set_state_dict"):
            optim._learning_rate.set_state_dict(state_dict["LR_Scheduler"])

    set_dict = set_state_dict

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_optim":
            raise AttributeError(name)
        return getattr(self._optim, name)
