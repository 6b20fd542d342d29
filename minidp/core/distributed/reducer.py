"""The bucket reducer: averages gradients across ranks while backward is still running.

How gradients travel
--------------------
1. At construction the trainable parameters are split into buckets (:func:`assign_buckets`),
   each of one dtype.
2. ``DataParallel.forward`` calls :meth:`Reducer.prepare_for_backward`, which arms the reducer for
   the next backward pass.
3. During backward, every parameter fires its gradient-ready hook (see
   ``Tensor._register_grad_ready_hook``) as soon as its gradient is final. The reducer notes the
   gradient in its bucket (on the host, that copies it into the bucket's flat buffer at once,
   scaled, so that the work of a full bucket is only its all-reduce).
4. When every gradient of a bucket is noted, the bucket is ready. Ready buckets are handed to
   the comm hook strictly in bucket order, the same on every rank, so ranks never disagree
   about which collective comes next. The hook (:mod:`minidp.core.distributed.comm_hooks`; the
   default averages in the gradients' dtype) packs the bucket into one flat buffer, scaled by
   1/world_size, and starts the process group's asynchronous SUM all-reduce, which runs on the
   group's communication thread while backward computes the remaining gradients.
5. When backward ends, the reducer waits for every bucket's work, which unpacks the averaged
   gradients, and points each ``param.grad`` at its result.

How a bucket is packed depends only on where it lives (one NumPy copy per parameter on the
host, one launch of the multi-tensor CUDA kernels per bucket on a GPU), decided once by the
bucket's copy; the reducer itself never looks.

Scaling happens *before* the all-reduce, as in Paddle (concat, divide by world size, all-reduce,
split): the result is the average of the ranks' gradients, rounded the way Paddle rounds it.
Frameworks compared with minidp should expect sum(g_i / n), not sum(g_i) / n.

Parameters that get no gradient
-------------------------------
The graph is walked from the forward outputs to find the parameters that backward cannot
reach. With ``find_unused_parameters=True`` this happens after every forward; such parameters
count as ready with their current local gradient (zeros if none). Without it, the walk happens
once, at the first forward, as Paddle does: parameters unreachable then are unused for the whole
run -- their slot travels as zeros and their gradient is left alone (None unless set by hand) --
so a model with a head it never uses trains.

Any other gap is an error on every rank: a parameter that the first step used but that gets no
gradient now leaves its bucket incomplete, and a parameter counted as unused that gets a
gradient anyway (used only in a later step, or outside the forward) would keep a local,
unaveraged gradient. The last bucket in launch order is therefore launched only when backward
ends, carrying one extra element that counts such parameters across ranks; buckets left
incomplete are launched then too, so all ranks run the same collectives and every rank raises
the same error instead of one rank raising and the others waiting forever. That element is the
last entry of the last bucket, which every hook averages like a gradient.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Any, Dict, List, Sequence

from .. import backend, timeline
from .. import engine
from ..tensor import Tensor
from .comm_hooks import CommHook, GradBucket, allreduce_hook

logger = logging.getLogger("minidp.distributed")

# The reducer that averages each parameter's gradient, by id(parameter). An entry lives as long
# as its reducer, which holds the parameter, so an id here is never a dead parameter's.
_reducer_of: "weakref.WeakValueDictionary[int, Reducer]" = weakref.WeakValueDictionary()


def assign_buckets(params: Sequence[Tensor], small_limit: int, limit: int) -> List[List[int]]:
    """Group parameter indices into buckets by dtype and size, following Paddle's rule.

    Parameters are walked in registration order, with one open bucket per dtype. A parameter
    joins the open bucket of its dtype; if the bucket's size in bytes then reaches its limit, the
    bucket closes. The first bucket of each dtype is limited by ``small_limit`` (Paddle's
    ``last_comm_buffer_size``), every later one by ``limit`` (``comm_buffer_size``), so a bucket
    can exceed its limit by at most its last parameter. Buckets still open at the end close too.

    Returns the buckets in launch order: the bucket holding the last-registered parameters first
    (their gradients are ready first in backward), the small bucket of the first-registered
    parameters last, so that the exposed final all-reduce is short.
    """
    closed: List[List[int]] = []
    open_buckets: dict = {}
    for index, param in enumerate(params):
        dtype = param._data.dtype
        indices, size, used_small = open_buckets.get(dtype, ([], 0, False))
        indices.append(index)
        size += param._data.size * dtype.itemsize
        cap = limit if used_small else small_limit
        if size >= cap:
            closed.append(indices)
            open_buckets[dtype] = ([], 0, True)
        else:
            open_buckets[dtype] = (indices, size, used_small)
    closed.extend(indices for indices, _, _ in open_buckets.values() if indices)
    closed.sort(key=lambda indices: indices[0])
    return closed[::-1]


class Reducer:
    """Averages the gradients of ``params`` over ``process_group`` during backward.

    ``bucket_indices`` lists, in launch order, the indices into ``params`` of each bucket
    (:func:`assign_buckets` makes them). ``reserve_bucket_memory=False`` makes the buckets set
    aside no memory when built: for hooks that pack each launch into a buffer of its own
    (:func:`~minidp.core.distributed.comm_hooks.reduce_scatter_hook`). A hook's result of None
    for a parameter leaves that parameter with no gradient after backward.
    """

    def __init__(
        self,
        params: Sequence[Tensor],
        bucket_indices: List[List[int]],
        process_group,
        find_unused_parameters: bool = False,
        param_names: Sequence[str] = None,
        reserve_bucket_memory: bool = True,
    ) -> None:
        self._params = list(params)
        self._names = list(param_names) if param_names is not None else [p.name for p in params]
        self._group = process_group
        self._find_unused = find_unused_parameters
        self._hook: CommHook = allreduce_hook
        self._hook_state: Any = None
        last = len(bucket_indices) - 1
        # The check count (see "Parameters that get no gradient"), an entry of the last bucket.
        like = self._params[bucket_indices[last][0]]._data
        self._status = backend.get_array_module(like).zeros(1, dtype=like.dtype)
        # Built in launch order, the same on every rank: on shared memory each bucket's memory
        # is a collective allocation (see GradBucket).
        self._buckets = [
            GradBucket(
                b,
                [self._params[i] for i in indices],
                [self._status] if b == last else [],
                process_group,
                reserve=reserve_bucket_memory,
            )
            for b, indices in enumerate(bucket_indices)
        ]
        # This step's progress, per bucket: gradients still to come, the hook's work once launched.
        self._pending = [len(bucket.params) for bucket in self._buckets]
        self._works: List[Any] = [None] * len(self._buckets)
        self._launched_at = [0.0] * len(self._buckets)
        self._slot_of = {}
        index_of = {id(p): i for i, p in enumerate(self._params)}
        for b, bucket in enumerate(self._buckets):
            for slot, p in enumerate(bucket.params):
                index = index_of[id(p)]
                # the arguments of its 'grad ready' instant, built once: nothing is built per step
                self._slot_of[id(p)] = (b, slot, index, {"param": self._names[index], "bucket": b})
        self._marked = [False] * len(self._params)
        self._armed = False
        self._started = False
        self._next_launch = 0
        self._unused: List[Tensor] = []
        self._usage_known = False
        self._keeps_own_grad = frozenset()
        self._unexpected: List[int] = []
        self._released = False
        self._contributing_scale = 1.0
        self._steps_reduced = 0
        self._seconds_waited = 0.0
        self._take_over_parameters()
        self._log_layout(bucket_indices)

    def _take_over_parameters(self) -> None:
        """Register the gradient-ready hooks, releasing any older reducer of these parameters.

        The hooks hold the reducer only weakly, and are removed when it is garbage-collected,
        so a discarded DataParallel leaves nothing behind on its parameters.
        """
        for p in self._params:
            previous = _reducer_of.get(id(p))
            if previous is not None:
                previous.release()
            _reducer_of[id(p)] = self
        reducer = weakref.ref(self)

        def on_grad_ready(param: Tensor) -> None:
            alive = reducer()
            if alive is not None:
                alive._on_grad_ready(param)

        handles = [p._register_grad_ready_hook(on_grad_ready) for p in self._params]
        self._remove_hooks = weakref.finalize(self, _remove_all, handles)

    def release(self) -> None:
        """Let go of the parameters: remove the hooks and drop the buckets. A newer reducer of
        the same parameters calls this; using this reducer afterwards raises."""
        self._remove_hooks()
        self._buckets, self._pending, self._works, self._launched_at = [], [], [], []
        self._released = True

    @property
    def process_group(self) -> Any:
        """The process group the gradients are averaged over."""
        return self._group

    @property
    def buckets(self) -> List[List[Tensor]]:
        """The parameters of each bucket, in launch order."""
        return [list(b.params) for b in self._buckets]

    def register_comm_hook(self, state: Any, hook: CommHook) -> None:
        """Hand every bucket to ``hook(state, bucket)`` from now on (see ``comm_hooks``)."""
        self._hook_state = state
        self._hook = hook

    def _log_layout(self, bucket_indices: List[List[int]]) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        for b, indices in enumerate(bucket_indices):
            bucket = self._buckets[b]
            logger.debug(
                "bucket %d (launch order), %s, %d bytes: %s",
                b,
                bucket.dtype,
                bucket.numel * bucket.dtype.itemsize,
                ", ".join(f"{self._names[i]}{list(self._params[i]._data.shape)}" for i in indices),
            )

    def prepare_for_backward(self, outputs: Sequence[Tensor]) -> None:
        """Arm the reducer for the backward pass of ``outputs`` (called after every forward)."""
        if self._released:
            raise RuntimeError(
                "DataParallel: a newer DataParallel wraps this one's parameters and averages "
                "their gradients now; use that one (parameters feed one DataParallel at a time)"
            )
        self._finish_outstanding_work()
        for b, bucket in enumerate(self._buckets):
            self._pending[b] = len(bucket.params)
            self._works[b] = None
            bucket.reset()
        self._marked = [False] * len(self._params)
        self._next_launch = 0
        self._started = False
        self._armed = True
        self._unexpected = []
        if self._find_unused or not self._usage_known:
            reachable = engine.reachable_leaves(outputs)
            self._unused = [p for p in self._params if id(p) not in reachable]
        if not self._find_unused and not self._usage_known:
            self._usage_known = True
            self._keeps_own_grad = frozenset(id(p) for p in self._unused)

    def rearm_on_repeated_backward(self, outputs: Sequence[Tensor]) -> None:
        """Average the gradients of every backward pass through ``outputs``, not only the first
        (a loss kept with ``retain_graph=True`` and backwarded again): a later pass re-arms the
        reducer when its gradient reaches them, before any parameter's gradient is final, as
        PyTorch's DDP does. Without it that pass would leave each rank its local gradients.

        The hooks hold the outputs weakly: an output holding a hook that held it would outlive
        the user's last reference to it until the cycle collector ran."""
        refs = [weakref.ref(output) for output in outputs]

        def rearm(grad: Tensor) -> None:
            if not self._armed and not self._released:
                self.prepare_for_backward([output for output in (ref() for ref in refs) if output is not None])

        for output in outputs:
            if not output.stop_gradient:
                output.register_hook(rearm)

    def _finish_outstanding_work(self) -> None:
        """Wait for collectives of a pass that never reached its end (keeps ranks in step)."""
        for b, work in enumerate(self._works):
            if work is not None:
                work.wait()
                self._works[b] = None

    def _on_grad_ready(self, param: Tensor) -> None:
        if not self._armed:
            return
        if not self._started:
            self._started = True
            engine.queue_end_of_backward_callback(self._finish_backward)
            for unused in self._unused:
                self._mark_ready(unused)
        index = self._slot_of[id(param)][2]
        if self._marked[index]:
            self._unexpected.append(index)
            return
        self._mark_ready(param)

    def _mark_ready(self, param: Tensor) -> None:
        b, slot, index, ready_args = self._slot_of[id(param)]
        self._marked[index] = True
        timeline.instant("grad ready", "reducer", ready_args)
        self._buckets[b].note(slot, param._grad)
        self._pending[b] -= 1
        if self._pending[b] == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        """Start the all-reduce of every ready bucket whose predecessors have all started.

        The last bucket waits for the end of backward, where its status element is known.
        """
        last = len(self._buckets) - 1
        while self._next_launch < last and self._pending[self._next_launch] == 0:
            self._launch(self._next_launch)

    def _launch(self, b: int) -> None:
        """Hand bucket ``b`` to the hook, which starts its all-reduce."""
        self._launched_at[b] = time.perf_counter()
        with timeline.span(f"pack bucket {b}", "reducer"):
            self._works[b] = self._hook(self._hook_state, self._buckets[b])
        self._buckets[b].reset()
        self._next_launch += 1

    def _finish_backward(self) -> None:
        """End of backward: launch what is left, wait for every bucket, check, hand out grads."""
        self._armed = False
        missing = [self._names[i] for i, marked in enumerate(self._marked) if not marked]
        unexpected = [self._names[i] for i in self._unexpected]
        last = len(self._buckets) - 1
        while self._next_launch <= last:
            if self._next_launch == last:
                self._status[0] = len(missing) + len(unexpected)
            self._launch(self._next_launch)
        backward_ended = time.perf_counter()
        finished, results = [], []
        with timeline.span("wait for buckets", "reducer"):
            for b, work in enumerate(self._works):
                results.append(work.wait())
                self._works[b] = None
                finished.append(time.perf_counter())
        self._steps_reduced += 1
        self._seconds_waited += finished[-1] - backward_ended
        problems_anywhere = int(round(float(results[-1][-1][0]) * self._group.size))
        if problems_anywhere:
            raise RuntimeError(self._usage_message(missing, unexpected, problems_anywhere))
        keeps_own_grad = self._keeps_own_grad
        scale = self._contributing_scale
        for bucket, grads in zip(self._buckets, results):
            for p, grad in zip(bucket.params, grads):
                if id(p) not in keeps_own_grad:
                    p._grad = grad if scale == 1.0 or grad is None else grad * scale
        if logger.isEnabledFor(logging.DEBUG):
            self._log_step(backward_ended, finished)

    def unused_parameters(self) -> frozenset:
        """The ids of the parameters left out for the whole run (unused at the first step;
        empty with ``find_unused_parameters=True`` or before the first forward)."""
        return self._keeps_own_grad

    def communication_stats(self) -> Dict[str, float]:
        """How many steps were reduced and the seconds spent waiting for their buckets after
        backward ended: the communication that backward did not hide."""
        return {"steps": self._steps_reduced, "wait_seconds": self._seconds_waited}

    def set_contributing_ranks(self, count: int, divide_by_world_size: bool) -> None:
        """Say how many ranks feed this step's gradients (the others shadow it with zeros, see
        ``DataParallel.join``): the averages are rescaled from the world size to ``count``
        unless ``divide_by_world_size``."""
        size = self._group.size
        self._contributing_scale = 1.0 if divide_by_world_size or count == size else size / count

    def shadow_backward(self) -> None:
        """Take part in a peer's step with zeros: every bucket's collective, in launch order,
        with no gradient and a zero status entry; the results are not used (a joined rank)."""
        self._finish_outstanding_work()
        self._armed = False
        self._status[0] = 0
        works = []
        for bucket in self._buckets:
            bucket.reset()
            works.append(self._hook(self._hook_state, bucket))
            bucket.reset()
        for work in works:
            work.wait()

    def _log_step(self, backward_ended: float, finished: List[float]) -> None:
        """One line per step: the wait after backward, and for each bucket when its all-reduce
        started and was seen done, relative to backward's end (the log format names the rank)."""
        timings = "; ".join(
            f"bucket {b} ({bucket.numel * bucket.dtype.itemsize} bytes) "
            f"all-reduce started {(backward_ended - launched) * 1e3:.3f} ms before the "
            f"end of backward, done {(done - backward_ended) * 1e3:.3f} ms after it"
            for b, (bucket, launched, done) in enumerate(zip(self._buckets, self._launched_at, finished))
        )
        logger.debug(
            "step: %d buckets reduced, %.3f ms waited after backward; %s",
            len(self._buckets),
            (finished[-1] - backward_ended) * 1e3,
            timings,
        )

    def _usage_message(self, missing: List[str], unexpected: List[str], total: int) -> str:
        rank = self._group.rank
        found = []
        if missing:
            found.append(
                f"no gradient for {', '.join(missing)}, although "
                + ("the forward outputs reach them" if self._find_unused else "the first step used them")
            )
        if unexpected:
            found.append(
                f"a gradient for {', '.join(unexpected)}, although "
                + ("the forward outputs do not reach them" if self._find_unused else "the first step did not use them")
            )
        where = (
            f"on this rank ({rank}): {'; '.join(found)}" if found else f"on another rank (this rank {rank} had none)"
        )
        return (
            f"DataParallel: {total} parameter(s), counted over all ranks, did not take part in "
            f"backward as expected, {where}. Pass find_unused_parameters=True to DataParallel "
            "if the parameters a step uses change from step to step, or set stop_gradient=True "
            "on parameters you do not train; also make sure the loss is computed from the "
            "outputs of this forward call, and parameters are used only inside forward."
        )


def _remove_all(handles: List[engine.RemovableHandle]) -> None:
    for handle in handles:
        handle.remove()
