"""DataParallel: run one model replica per process and keep the replicas identical.

At construction the replicas are checked against each other and rank 0's parameters and buffers
are broadcast to all. Afterwards every backward pass averages the gradients across ranks (see
``reducer.py``), so ``optimizer.step()`` applies the same update everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import warnings
from typing import Any, Iterator, List, Optional, Sequence

import numpy

from .. import backend, timeline
from .. import engine
from ..tensor import Tensor
from ..layer import Layer
from .backends import ReduceOp
from .collective import resolve_process_group
from .comm_hooks import CommHook
from .env import ParallelEnv
from .reducer import Reducer, assign_buckets

logger = logging.getLogger("minidp.distributed")

# Bytes per fused collective of sync_params_buffers and fused_allreduce_gradients: fusing many
# small tensors into few collectives is what makes them cheap.
_FUSED_BYTES = 128 * 1024 * 1024


def _flatten(arrays: List[Any]) -> Any:
    """One new flat array holding ``arrays`` one after the other."""
    return backend.get_array_module(arrays[0]).concatenate([a.reshape(-1) for a in arrays])


def _unflatten(flat: Any, like: List[Any]) -> Iterator[Any]:
    """Views of ``flat`` shaped like each array of ``like``, in order."""
    offset = 0
    for a in like:
        yield flat[offset : offset + a.size].reshape(a.shape)
        offset += a.size


@engine.no_grad()
def sync_params_buffers(
    model: Layer, comm_group: Any = None, src_rank: int = 0, is_model_parallel: bool = False, fuse_params: bool = True
) -> None:
    """Overwrite every parameter and buffer of ``model`` with rank ``src_rank``'s values.

    Tensors are broadcast in fused groups of up to 128 MiB (``fuse_params=True``) or one by one.
    Parameters marked ``no_sync`` (or ``is_distributed`` under model parallelism) are skipped.
    """
    pg = resolve_process_group(comm_group, "sync_params_buffers")
    tensors = [
        t
        for t in itertools.chain(model.parameters(), model.buffers())
        if not getattr(t, "no_sync", False) and not (is_model_parallel and getattr(t, "is_distributed", False))
    ]
    if not tensors:
        return
    groups = assign_buckets(tensors, _FUSED_BYTES, _FUSED_BYTES) if fuse_params else [[i] for i in range(len(tensors))]
    for indices in groups:
        arrays = [tensors[i]._data for i in indices]
        flat = _flatten(arrays)
        pg.broadcast(flat, src=src_rank)
        for array, received in zip(arrays, _unflatten(flat, arrays)):
            array[...] = received


def _is_synced(p: Tensor) -> bool:
    """Whether DataParallel averages ``p``'s gradient (trainable and not marked ``no_sync``)."""
    return not p.stop_gradient and not getattr(p, "no_sync", False)


def _describe(name: str, t: Tensor) -> str:
    return f"{name} {list(t._data.shape)} {t._data.dtype}{'' if _is_synced(t) else ' (not trained)'}"


def _fingerprint(name: str, t: Tensor) -> int:
    text = _describe(name, t).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=7).digest(), "little")


def _check_same_parameters(named: List[tuple], pg) -> None:
    """Raise on every rank, naming the first difference, unless all ranks hold the same model."""
    prints = numpy.array([_fingerprint(n, p) for n, p in named], dtype=numpy.int64)
    digest = int.from_bytes(hashlib.blake2b(prints.tobytes(), digest_size=7).digest(), "little")
    summary = numpy.array([len(prints), digest], dtype=numpy.int64)
    gathered = numpy.zeros((pg.size, 2), dtype=numpy.int64)
    pg.all_gather(gathered, summary)
    if (gathered == gathered[0]).all():
        return
    longest = int(gathered[:, 0].max())
    padded = numpy.full(longest, -1, dtype=numpy.int64)
    padded[: len(prints)] = prints
    everyone = numpy.zeros((pg.size, longest), dtype=numpy.int64)
    pg.all_gather(everyone, padded)
    differs = (everyone != everyone[0]).any(axis=0)
    first = int(numpy.argmax(differs))
    other = int(numpy.argmax(everyone[:, first] != everyone[pg.rank, first]))
    mine = _describe(*named[first]) if first < len(named) else "nothing (this rank has fewer parameters)"
    raise RuntimeError(
        f"DataParallel: the model differs between ranks. Parameter #{first} is {mine} on rank "
        f"{pg.rank} but differs on rank {other}; rank counts of parameters: "
        f"{gathered[:, 0].tolist()}. Build the same model, with parameters created in the same "
        "order, on every rank."
    )


def _find_tensors(obj: Any) -> Iterator[Tensor]:
    """Every tensor inside a forward result (a tensor, or lists, tuples and dicts of them)."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _find_tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _find_tensors(item)


def _refuse_a_job_of_several_ranks() -> None:
    """Raise when the environment describes a job of several ranks: without init_parallel_env()
    each rank would train alone and the job would end with ranks that silently disagree.

    Paddle refuses too (an assertion at construction); a single process only gets a warning.
    """
    env = ParallelEnv()
    if env.world_size > 1:
        raise RuntimeError(
            f"DataParallel: this process is rank {env.rank} of a job of {env.world_size} ranks, "
            "but the parallel environment is not initialised, so every rank would train alone. "
            "Call minidp.distributed.init_parallel_env() before constructing DataParallel."
        )


class DataParallel(Layer):
    """Data-parallel training of ``layers``: each rank trains its replica on its share of data.

    Gradients are averaged across ranks during backward, in buckets of about
    ``comm_buffer_size`` MiB (the bucket holding the first-registered parameters, which finishes
    last, is limited to ``last_comm_buffer_size`` MiB so the final wait is short). Each rank's
    gradient is divided by the world size before the sum all-reduce, as Paddle does.

    ``find_unused_parameters=True`` supports models in which the parameters that get a gradient
    change from step to step (at the cost of a graph walk after every forward). Without it, the
    parameters the first forward does not use are left out for the whole run, as in Paddle
    (their gradients stay as they are); any later change raises on every rank.
    ``group`` is a ``Group`` or the process group one carries; None means every rank.
    """

    def __init__(
        self,
        layers: Layer,
        strategy: Any = None,
        comm_buffer_size: float = 25,
        last_comm_buffer_size: float = 1,
        find_unused_parameters: bool = False,
        group: Any = None,
    ) -> None:
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel wraps a minidp.nn.Layer, got {type(layers).__name__}")
        super().__init__(layers.full_name() + "_data_parallel")
        if comm_buffer_size <= 0 or last_comm_buffer_size <= 0:
            raise ValueError("comm_buffer_size and last_comm_buffer_size must be positive (MiB)")
        self._layers = layers
        self.find_unused_parameters = find_unused_parameters
        self.grad_need_sync = True
        self.comm_buffer_size = int(comm_buffer_size * 1024 * 1024)
        self.last_comm_buffer_size = int(last_comm_buffer_size * 1024 * 1024)
        self._reducer: Optional[Reducer] = None
        self._join: Optional[_JoinState] = None
        self._comm_hook: Optional[CommHook] = None
        from . import collective

        if not collective.is_initialized():
            if group is None:
                _refuse_a_job_of_several_ranks()
                warnings.warn(
                    "DataParallel: this is a single-process run (no spawn, launcher or mpirun started "
                    "it), so there are no other ranks to synchronise with and the model trains on "
                    "this process alone; to train on several, start the script with spawn, "
                    "python -m minidp.distributed.launch or mpirun.",
                    stacklevel=2,
                )
                self.group = None
                return
        self.group = group
        pg = resolve_process_group(group, "DataParallel")
        if pg is None or pg.size < 2:
            warnings.warn("DataParallel: world size is 1, so the model trains on this process alone.", stacklevel=2)
            return
        _check_same_parameters(list(layers.named_parameters()), pg)
        named = [(n, p) for n, p in layers.named_parameters() if _is_synced(p)]
        if not named:
            raise ValueError("DataParallel: the model has no trainable parameters to synchronise")
        sync_params_buffers(layers, comm_group=pg, fuse_params=True)
        self._reducer = self._build_reducer(named, pg)

    def _build_reducer(self, named: List[tuple], pg: Any) -> Reducer:
        """The reducer of the trainable ``(name, parameter)`` pairs ``named``, built once the
        replicas agree: the seam where sharded data parallelism builds its own."""
        params = [p for _, p in named]
        buckets = assign_buckets(params, self.last_comm_buffer_size, self.comm_buffer_size)
        return Reducer(params, buckets, pg, self.find_unused_parameters, param_names=[n for n, _ in named])

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        with timeline.span("forward", "compute"):
            outputs = self._layers(*inputs, **kwargs)
        if self._reducer is not None and self.grad_need_sync and engine.is_grad_enabled():
            tensors = list(_find_tensors(outputs))
            if self._join is not None:
                self._join.start_step()
            else:  # a joined rank shadows one backward per forward, no more
                self._reducer.rearm_on_repeated_backward(tensors)
            self._reducer.prepare_for_backward(tensors)
        return outputs

    @contextlib.contextmanager
    def join(
        self, divide_by_initial_world_size: bool = False, enable: bool = True, throw_on_early_termination: bool = False
    ) -> Iterator[None]:
        """Train on uneven inputs: a rank whose loop inside ends early answers its peers' steps.

        As PyTorch's ``DistributedDataParallel.join``. Inside, every training forward (one that
        is followed by backward) first all-reduces a count of the ranks still training. A rank
        that leaves the block keeps taking part in its peers' gradient all-reduces with zeros
        until every rank has left; then all ranks take the parameters and buffers of a rank
        that trained the most steps, so the replicas end identical (optimizer states are not
        synchronised, as in PyTorch).

        By default (``divide_by_initial_world_size=False``) the summed gradients are divided by
        the number of ranks that fed the step, which gives the gradient of training one process
        on the union of those ranks' batches (equal batch sizes, mean loss): the averages stay
        right. ``True`` (PyTorch's default, which minidp does not follow here) keeps dividing by
        the world size, so a step that fewer ranks feed moves the model less.
        ``throw_on_early_termination=True`` raises on every rank at the first step some rank has
        no data for, instead. ``enable=False`` makes the block a plain one. Forwards under
        ``no_sync`` or ``no_grad`` are not counted: they communicate nothing.
        """
        if not enable or self._reducer is None:
            yield
            return
        if self._join is not None:
            raise RuntimeError("DataParallel.join: already inside a join() block of this model")
        self._join = _JoinState(self._reducer, divide_by_initial_world_size, throw_on_early_termination)
        try:
            yield
            self._join.answer_until_all_done()
            sync_params_buffers(
                self._layers, comm_group=self._reducer.process_group, src_rank=self._join.most_trained_rank()
            )
        finally:
            self._join = None
            self._reducer.set_contributing_ranks(self._reducer.process_group.size, True)

    def register_comm_hook(self, state: Any, hook: CommHook) -> None:
        """Let ``hook(state, bucket)`` pack, communicate and unpack every gradient bucket.

        As PyTorch's ``DistributedDataParallel.register_comm_hook``: one hook per DataParallel
        (a second call raises), registered before training; ``bucket`` is a
        :class:`~minidp.core.distributed.comm_hooks.GradBucket`; built-in hooks are
        ``allreduce_hook`` (the default), ``fp16_compress_hook``, ``bf16_compress_hook`` and
        ``counting_hook`` in :mod:`minidp.core.distributed.comm_hooks`, whose ``state`` is a process
        group, or None for this DataParallel's. Unlike PyTorch's:

        - the hook returns a work handle whose ``wait()`` returns the averaged gradients as a
          list of arrays, one per bucket entry (not a future of one flat tensor), so unpacking is
          the hook's job, done where it is cheapest (the GPU unpack kernel);
        - gradients are raw NumPy or CuPy arrays, not Tensors, and may be None (zeros);
        - ``bucket.pack(wire_dtype, scale)`` returns the packed flat buffer and its unpack for
          the place the bucket lives on, so a hook need not know whether it runs on a GPU;
        - the last bucket carries one more entry, the reducer's check count, which the hook
          averages like a gradient.

        Without a process group of several ranks there is nothing to communicate: the hook is
        accepted and never called.
        """
        if not callable(hook):
            raise TypeError(f"register_comm_hook needs a callable hook(state, bucket), got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError(
                "register_comm_hook can be called only once per DataParallel; "
                "build a new DataParallel to use another hook"
            )
        self._comm_hook = hook
        if self._reducer is not None:
            self._reducer.register_comm_hook(state, hook)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, gradients only accumulate locally; the next backward outside averages them."""
        previous = self.grad_need_sync
        self.grad_need_sync = False
        try:
            yield
        finally:
            self.grad_need_sync = previous

    def communication_stats(self) -> dict:
        """Read-only timings of the gradient all-reduces so far (a minidp addition, not in
        Paddle): ``steps`` reduced and ``wait_seconds``, the time spent after backward waiting
        for the buckets, i.e. the communication backward did not hide. Zeros when nothing is
        reduced (a single rank)."""
        if self._reducer is None:
            return {"steps": 0, "wait_seconds": 0.0}
        return self._reducer.communication_stats()

    def scale_loss(self, loss: Tensor) -> Tensor:
        """Deprecated no-op kept for old scripts: gradients are already averaged."""
        warnings.warn("DataParallel.scale_loss is deprecated and does nothing", DeprecationWarning, stacklevel=2)
        return loss

    def apply_collective_grads(self) -> None:
        """Deprecated no-op kept for old scripts: gradients are averaged during backward."""
        warnings.warn(
            "DataParallel.apply_collective_grads is deprecated and does nothing", DeprecationWarning, stacklevel=2
        )

    def state_dict(
        self, destination: Any = None, include_sublayers: bool = True, structured_name_prefix: str = "", **kwargs: Any
    ) -> dict:
        """The wrapped layer's state, with the same keys as without DataParallel."""
        return self._layers.state_dict(
            destination=destination,
            include_sublayers=include_sublayers,
            structured_name_prefix=structured_name_prefix,
            **kwargs,
        )

    def set_state_dict(self, state_dict: dict, use_structured_name: bool = True) -> Any:
        """Load a state saved with or without DataParallel into the wrapped layer."""
        return self._layers.set_state_dict(state_dict, use_structured_name=use_structured_name)

    set_dict = set_state_dict
    load_dict = set_state_dict


class _JoinState:
    """One rank's side of ``DataParallel.join``: the per-step count of ranks still training."""

    def __init__(self, reducer: Reducer, divide_by_world_size: bool, throw: bool) -> None:
        self._reducer = reducer
        self._group = reducer.process_group
        self._divide_by_world_size = divide_by_world_size
        self._throw = throw
        self._steps = 0
        like = reducer.buckets[0][0]._data
        self._count = backend.get_array_module(like).zeros(1, dtype=numpy.int64)

    def _ranks_training(self, training: bool) -> int:
        self._count[0] = int(training)
        self._group.all_reduce(self._count)
        return int(self._count[0])

    def _check_even(self, training: int) -> None:
        if self._throw and training < self._group.size:
            raise RuntimeError(
                f"DataParallel.join: {self._group.size - training} of {self._group.size} ranks "
                f"ran out of data (seen on rank {self._group.rank}), and "
                "throw_on_early_termination=True was given"
            )

    def start_step(self) -> None:
        """Before this rank's step: count the ranks training it, and scale its averages."""
        training = self._ranks_training(True)
        self._check_even(training)
        self._steps += 1
        self._reducer.set_contributing_ranks(training, self._divide_by_world_size)

    def answer_until_all_done(self) -> None:
        """This rank is out of data: shadow the others' steps until no rank is training."""
        while True:
            training = self._ranks_training(False)
            if training == 0:
                return
            self._check_even(training)
            self._reducer.shadow_backward()

    def most_trained_rank(self) -> int:
        """The lowest rank among those that trained the most steps (the same on every rank)."""
        size = self._group.size
        key = numpy.array([self._steps * size + size - 1 - self._group.rank], dtype=numpy.int64)
        key = backend.get_array_module(self._count).asarray(key)
        self._group.all_reduce(key, op=ReduceOp.MAX)
        return size - 1 - int(key[0]) % size


@engine.no_grad()
def fused_allreduce_gradients(parameter_list: Sequence[Tensor], hcg: Any = None) -> None:
    """Average the gradients of ``parameter_list`` over the data-parallel group, fused.

    ``hcg`` is a hybrid-communicate-group object with ``get_data_parallel_group()`` (as in
    Paddle's fleet), or None for every rank. Parameters without a gradient are skipped.
    """
    group = hcg.get_data_parallel_group() if hcg is not None else None
    pg = resolve_process_group(group, "fused_allreduce_gradients")
    params = [p for p in parameter_list if p._grad is not None]
    if pg is None or pg.size < 2 or not params:
        return
    for indices in assign_buckets(params, _FUSED_BYTES, _FUSED_BYTES):
        group_params = [params[i] for i in indices]
        grads = [p._grad for p in group_params]
        flat = _flatten(grads)
        backend.get_array_module(flat).multiply(flat, 1.0 / pg.size, out=flat)
        pg.all_reduce(flat)
        for p, averaged in zip(group_params, _unflatten(flat, grads)):
            p._grad = averaged
