"""Golden files: what a data-parallel job computes, step by step and rank by rank.

A golden file lets another framework check itself against minidp: run the same model on the same
data, record the same tensors, and compare with ``python -m minidp.testing compare``.

Format (NumPy ``.npz``, no pickled objects; load with ``numpy.load(path)``):

- ``__manifest__``: JSON text: ``format`` ("minidp-golden/1"), ``world_size``, ``steps``,
  ``seed``, ``parameters`` (names in registration order, with shapes), ``layout``;
- ``init/param/{name}``: the parameters every rank starts from (rank 0's, which DataParallel
  broadcast): another framework loads these to start where minidp started;
- ``step{s}/rank{r}/input{i}``: the rows of the step's global batch that rank ``r`` trained on
  (rank ``r`` takes the ``r``-th of ``world_size`` equal, contiguous slices of every array);
- ``step{s}/rank{r}/loss``: the rank's loss (0-d);
- ``step{s}/rank{r}/local_grad/{name}``: the rank's own gradient, before averaging;
- ``step{s}/rank{r}/avg_grad/{name}``: the gradient after DataParallel averaged it (the same on
  every rank: each rank's gradient times 1/world_size, then summed);
- ``step{s}/rank{r}/param/{name}``: the parameter after the optimizer step.

Parameters keep minidp's (Paddle's) layouts: a ``Linear`` weight is ``[in_features,
out_features]`` (PyTorch's is ``[out, in]``: transpose it before comparing).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Sequence, Union

import numpy

import minidp
from .. import distributed as dist
from ..nn import Layer

FORMAT = "minidp-golden/1"
ModelSpec = Union[Layer, Callable[[], Layer]]


def _check_batches(data: Sequence[Sequence[Any]], steps: int, world_size: int) -> List[tuple]:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive int, got {world_size!r}")
    batches = [tuple(numpy.asarray(a) for a in batch) for batch in data]
    if len(batches) < steps:
        raise ValueError(f"data holds {len(batches)} batches, fewer than steps={steps}")
    for index, batch in enumerate(batches[:steps]):
        rows = {a.shape[0] if a.ndim else None for a in batch}
        if len(rows) != 1 or None in rows or next(iter(rows)) % world_size:
            raise ValueError(
                f"batch {index}: every array needs the same number of rows, divisible by "
                f"world_size={world_size} (got shapes {[list(a.shape) for a in batch]})"
            )
    return batches[:steps]


def shard(batch: Sequence[numpy.ndarray], rank: int, world_size: int) -> tuple:
    """Rank ``rank``'s contiguous slice of every array of a global batch."""
    rows = batch[0].shape[0] // world_size
    return tuple(a[rank * rows : (rank + 1) * rows] for a in batch)


def _build(model: ModelSpec) -> Layer:
    layer = model if isinstance(model, Layer) else model()
    if not isinstance(layer, Layer):
        raise TypeError(f"model must be a minidp.nn.Layer or a function returning one, got {type(layer).__name__}")
    return layer


def train_and_record(
    model: ModelSpec, loss: Callable, batches: List[tuple], optimizer: Callable, seed: int
) -> Dict[str, numpy.ndarray]:
    """Run the steps on this rank of the current job (or alone) and return what it recorded."""
    minidp.seed(seed)
    layer = _build(model)
    group = dist.init_parallel_env() if dist.ParallelEnv().world_size > 1 else None
    rank = dist.get_rank() if group is not None else 0
    world_size = dist.get_world_size() if group is not None else 1
    net = minidp.DataParallel(layer) if group is not None else layer
    opt = optimizer(layer.parameters())
    named = list(layer.named_parameters())
    local: Dict[str, numpy.ndarray] = {}

    def keep_local(name: str) -> Callable:
        def hook(grad):
            local[name] = local[name] + grad.numpy() if name in local else grad.numpy().copy()

        return hook

    for name, p in named:
        if not p.stop_gradient:
            p.register_hook(keep_local(name))
    record: Dict[str, numpy.ndarray] = {}
    if rank == 0:
        for name, p in named:
            record[f"init/param/{name}"] = p.numpy().copy()
    for step, batch in enumerate(batches):
        arrays = shard(batch, rank, world_size)
        prefix = f"step{step}/rank{rank}"
        for i, a in enumerate(arrays):
            record[f"{prefix}/input{i}"] = a
        local.clear()
        tensors = [minidp.to_tensor(a) for a in arrays]
        value = loss(net(tensors[0]), *tensors[1:])
        value.backward()
        record[f"{prefix}/loss"] = value.numpy()
        for name, p in named:
            if name in local:
                record[f"{prefix}/local_grad/{name}"] = local[name]
            if p.grad is not None:
                record[f"{prefix}/avg_grad/{name}"] = p.grad.numpy().copy()
        opt.step()
        opt.clear_grad()
        for name, p in named:
            record[f"{prefix}/param/{name}"] = p.numpy().copy()
    return record


def golden(
    model: ModelSpec,
    loss: Callable,
    data: Sequence[Sequence[Any]],
    world_size: int,
    steps: int,
    optimizer: Callable,
    out: str = "golden.npz",
    seed: int = 0,
) -> str:
    """Train ``model`` data-parallel on ``world_size`` ranks for ``steps`` steps; write ``out``.

    Args:
        model: a ``minidp.nn.Layer`` or a function returning one (each rank builds its own;
            DataParallel starts every rank from rank 0's parameters).
        loss: ``loss(output, *targets)`` returning a scalar Tensor (the mean over the rows it
            gets, so that the ranks' average equals the loss on the whole batch).
        data: global batches, each a sequence of arrays ``(inputs, *targets)`` with the same
            number of rows, divisible by ``world_size``; ``data[s]`` is used at step ``s``.
        world_size: number of ranks (processes on this host, gloo backend).
        steps: number of training steps.
        optimizer: ``optimizer(parameters)`` returning a minidp optimizer.
        out: path of the golden file (see this module's docstring for its format).
        seed: seeds every rank, so two runs with the same arguments write identical files.

    The ranks are forked from this process, so ``model``, ``loss`` and ``optimizer`` may be
    lambdas or closures. Returns ``out``.
    """
    batches = _check_batches(data, steps, world_size)
    if world_size == 1:
        records = [train_and_record(model, loss, batches, optimizer, seed)]
    else:
        context = dist.spawn(
            train_and_record,
            args=(model, loss, batches, optimizer, seed),
            nprocs=world_size,
            backend="gloo",
            start_method="fork",
        )
        records = [q.get() for q in context.return_queues]
    layer = _build(model)
    manifest = {
        "format": FORMAT,
        "world_size": world_size,
        "steps": steps,
        "seed": seed,
        "parameters": [{"name": n, "shape": p.shape} for n, p in layer.named_parameters()],
        "layout": "minidp/Paddle layouts: Linear weight is [in_features, out_features]",
    }
    arrays = {"__manifest__": numpy.array(json.dumps(manifest))}
    for record in records:
        arrays.update(record)
    numpy.savez(out, **arrays)
    return out


def read_manifest(path: str) -> dict:
    """The JSON manifest of a golden file."""
    with numpy.load(path, allow_pickle=False) as data:
        return json.loads(str(data["__manifest__"]))
