"""Paddle's entry points for sharded data parallelism: ``group_sharded_parallel`` and
``save_group_sharded_model`` (``paddle.distributed.sharding``), with Paddle 3.3.1's signatures.

Three levels, each keeping less on every rank (ZeRO stages 1 to 3):

- ``os``: optimizer state. Gradients are averaged as in DataParallel; each rank updates only its
  block of the parameters, with the optimizer state of that block alone, and all-gathers it.
- ``os_g``: also gradients. Each bucket is reduce-scattered instead of all-reduced, so a rank
  receives only its block of the averaged gradients.
- ``p_g_os``: also parameters. A rank holds only its block of each layer's parameters and
  all-gathers the layer's whole parameters around its forward.

Paddle implements ``os`` as ``os_g``; minidp keeps them apart, so that each level's cost can be
measured alone. Paddle runs sharding on GPUs only; minidp also on the CPU, where the optimizer
state is already in host memory, so ``offload=True`` changes nothing there; on a GPU it is
refused (not implemented yet).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple

from ...core import backend
from ...core.layer import Layer
from ...serialization import save
from .model import LEVELS, GroupShardedModel
from .optimizer import GroupShardedOptimizer, check_optimizer


def group_sharded_parallel(
    model: Layer,
    optimizer: Any,
    level: str,
    scaler: Any = None,
    group: Any = None,
    offload: bool = False,
    sync_buffers: bool = False,
    buffer_max_size: int = 2**23,
    segment_size: int = 2**20,
    sync_comm: bool = False,
    dp_group: Any = None,
    exclude_layer: Optional[Sequence[Any]] = None,
) -> Tuple[Layer, Any, Any]:
    """Wrap ``model`` and ``optimizer`` for sharded data parallelism at ``level`` (``'os'``,
    ``'os_g'`` or ``'p_g_os'``); returns ``(model, optimizer, scaler)``.

    ``buffer_max_size`` is the bucket size in float32 elements (``os``, ``os_g``);
    ``segment_size`` the element count below which a layer's parameters stay whole on every
    rank, as do the layers named (by class name or ``id``) in ``exclude_layer`` (``p_g_os``);
    ``sync_comm=True`` gathers each layer's parameters only when it runs instead of one layer
    ahead; ``sync_buffers=True`` broadcasts rank 0's buffers before every forward. ``scaler``
    is returned as it is (minidp's GradScaler unscales gradients the optimizer reads).
    ``dp_group`` (hybrid sharding and data parallelism) is not supported.

    Load a checkpoint into ``model`` and ``optimizer`` before wrapping them, or into the
    wrappers afterwards: both take whole, unsharded states.
    """
    if not isinstance(model, Layer):
        raise TypeError(f"group_sharded_parallel: model must be a minidp.nn.Layer, got {type(model).__name__}")
    check_optimizer(optimizer)
    if level not in LEVELS:
        raise ValueError(f"group_sharded_parallel: level must be one of {list(LEVELS)}, got {level!r}")
    if dp_group is not None:
        raise ValueError(
            "group_sharded_parallel: dp_group (sharding combined with data parallelism) is not "
            "supported; shard over every rank (dp_group=None)"
        )
    for name, value in (("buffer_max_size", buffer_max_size), ("segment_size", segment_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"group_sharded_parallel: {name} must be a positive number of elements, got {value!r}")
    if offload and any(backend.place_of(p._data) != "cpu" for p in model.parameters()):
        raise ValueError(
            "group_sharded_parallel: offload=True (optimizer state in host memory) is not "
            "implemented for parameters on a GPU yet; pass offload=False"
        )
    wrapped = GroupShardedModel(
        model,
        level,
        group=group,
        sync_buffers=sync_buffers,
        buffer_max_size=buffer_max_size,
        segment_size=segment_size,
        sync_comm=sync_comm,
        exclude_layer=exclude_layer,
    )
    return wrapped, shard_optimizer(wrapped, optimizer), scaler


def shard_optimizer(model: GroupShardedModel, optimizer: Any) -> Any:
    """``optimizer`` sharded like ``model`` (itself when a single rank leaves nothing to shard)."""
    reducer = model._reducer
    if reducer is None:  # a single rank (DataParallel warned)
        return optimizer
    own = {id(p) for bucket in model.sharded_buckets for p in bucket.params}
    if not any(id(p) in own for p in optimizer._parameter_list):
        raise ValueError(
            "the optimizer updates none of the sharded model's parameters; build it from model.parameters()"
        )
    return GroupShardedOptimizer(
        optimizer, model.sharded_buckets, reducer.process_group, model.grad_shards, reducer.unused_parameters
    )


def save_group_sharded_model(model: Layer, output: str, optimizer: Any = None) -> None:
    """Write ``output/model.pdmodel`` (the whole model's state) and, with ``optimizer``,
    ``output/model.pdopt`` (the whole optimizer state), as an unsharded run would save them, so
    that a plain model and optimizer load them. A collective: every rank calls it; rank 0
    writes."""
    if not isinstance(model, GroupShardedModel):
        raise ValueError("save_group_sharded_model: pass the model that group_sharded_parallel returned")
    sharded = model._reducer is not None  # a single rank gets its optimizer back unwrapped
    if optimizer is not None and sharded and not isinstance(optimizer, GroupShardedOptimizer):
        raise ValueError("save_group_sharded_model: pass the optimizer that group_sharded_parallel returned")
    if os.path.isfile(output):
        raise ValueError(f"save_group_sharded_model: output {output!r} is a file; give a directory")
    state = model.state_dict()
    optimizer_state = optimizer.state_dict() if optimizer is not None else None
    pg = model._reducer.process_group if model._reducer is not None else None
    if pg is not None and pg.rank != 0:
        return
    os.makedirs(output, exist_ok=True)
    save(state, os.path.join(output, "model.pdmodel"))
    if optimizer_state is not None:
        save(optimizer_state, os.path.join(output, "model.pdopt"))
