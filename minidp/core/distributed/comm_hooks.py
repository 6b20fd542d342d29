"""Comm hooks: how the reducer's gradient buckets are packed, communicated and unpacked.

The reducer hands each ready bucket to one hook, ``hook(state, bucket)``, which returns a work
handle; when backward ends, ``work.wait()`` returns the averaged gradients, one array per entry
of the bucket, in entry order. The reducer never packs, communicates or unpacks itself: the
path of a gradient is tape -> hook -> bucket copy -> process group -> wire.

:class:`GradBucket` is the bucket, from its memory to its results. A hook usually packs it with
``bucket.pack(wire_dtype, 1 / world_size)``, which returns a :class:`BucketCopy` (a flat buffer
of the wire dtype, made once per bucket and wire dtype, holding the scaled gradients), starts a
SUM all-reduce of ``copy.flat`` and returns a :class:`BucketWork` that calls ``copy.unpack`` when
waited on. How a bucket is copied depends only on where it lives, decided by :func:`copy_for`:
NumPy copies on the host, made as each gradient arrives, one launch of the pack and unpack
kernels of :mod:`minidp.core.kernels` on a GPU.

Built-in hooks (``state`` is a process group, or None for the DataParallel's own):

- :func:`allreduce_hook`, the default: gradients travel in their own dtype.
- :func:`fp16_compress_hook`, :func:`bf16_compress_hook`: float32 buckets travel as float16 or
  bfloat16 (cast while packing, summed in half precision, widened while unpacking), halving the
  bytes on the wire at the cost of half-precision rounding (ChainerMN's
  ``allreduce_grad_dtype``, Horovod's ``Compression.fp16``); other dtypes travel as they are.
- :func:`counting_hook`: records each bucket it is given in a :class:`CallCounter` and does not
  communicate at all (each rank keeps its own gradients): a probe for tests.
- :func:`reduce_scatter_hook`, the reduce-scatter form used by sharded data parallelism
  (``minidp.distributed.sharding``): each rank receives only its block of the averaged bucket
  (the bucket's flat buffer, padded to a multiple of the group size, cut into one block per
  rank) into a :class:`GradShards`, and every parameter's own gradient is dropped.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy

from .. import backend, kernels, timeline
from ..kernels.launch_args import arithmetic_dtype, unpack_launch
from .backends import Work


class BucketCopy(abc.ABC):
    """A bucket's flat buffer in one wire dtype, with its pack and its unpack.

    ``flat`` holds the entries one after the other, entry ``i`` from ``offsets[i]``. :meth:`pack`
    fills it from gradients, :meth:`unpack` turns it back into one array per entry, of the
    entries' own shape and dtype. Subclasses fill in both for one kind of memory; those that
    copy each gradient as it arrives say so with ``EAGER``.
    """

    EAGER = False

    def __init__(self, like: Sequence[Any], offsets: List[int], flat: Any) -> None:
        self.offsets = offsets
        self.flat = flat

    @staticmethod
    def reserve(process_group: Any, nbytes: int) -> Any:
        """Memory set aside for the bucket when it is built, or None: each copy makes its own."""
        return None

    @abc.abstractmethod
    def pack(self, gradients: Sequence[Any], scale: float) -> None:
        """Write each gradient times ``scale`` (None: zeros) into ``flat``."""

    @abc.abstractmethod
    def unpack(self) -> List[Any]:
        """The entries read back from ``flat``, one array each (reused from call to call)."""


class HostCopy(BucketCopy):
    """NumPy copies, one per entry, for buckets in host memory.

    Gradients are copied as they arrive (``EAGER``): :meth:`note` writes one at the scale of the
    last pack, and :meth:`pack` then writes only the entries not noted since :meth:`forget`, so
    that a full bucket goes to the wire at once. When the wire dtype is the entries' own,
    unpacking is free: the results are views of ``flat``. Otherwise they are arrays of the
    entries' dtype, allocated once.
    """

    EAGER = True

    def __init__(self, like: Sequence[Any], offsets: List[int], flat: Any) -> None:
        super().__init__(like, offsets, flat)
        self.scale = 1.0
        self._written = [False] * len(like)
        self._slots = [flat[o : o + a.size] for o, a in zip(offsets, like)]
        self._views = flat.dtype == like[0].dtype
        if self._views:
            self._results = [s.reshape(a.shape) for s, a in zip(self._slots, like)]
        else:
            self._results = [numpy.empty(a.shape, dtype=a.dtype) for a in like]

    @staticmethod
    def reserve(process_group: Any, nbytes: int) -> Any:
        """Memory the process group hands out for repeated all-reduces: with ranks sharing a
        host, a part of their shared segment, so packing writes straight into shared memory and
        the all-reduce skips its copy-in. On shared memory this is a collective."""
        return process_group.allocate((nbytes,), numpy.uint8)

    def _write(self, entry: int, grad: Any) -> None:
        slot = self._slots[entry]
        if grad is None:
            slot.fill(0)
        else:
            # in the kernels' arithmetic type (float32 for half types): scaling in float16 would
            # round the scale (1/3) to float16 first and differ from the GPU path by an ulp
            compute = arithmetic_dtype(grad.dtype.name, slot.dtype.name)
            numpy.multiply(grad.reshape(-1), compute(self.scale), out=slot, dtype=compute)

    def note(self, entry: int, grad: Any) -> None:
        """Write one gradient (None: zeros) into its slot now, times the last pack's scale."""
        self._write(entry, grad)
        self._written[entry] = True

    def forget(self) -> None:
        """Treat every entry as unwritten: the noted ones belong to a step that is over."""
        self._written = [False] * len(self._written)

    def pack(self, gradients: Sequence[Any], scale: float) -> None:
        if scale != self.scale:
            self.scale = scale
            self.forget()
        for entry, grad in enumerate(gradients):
            if not self._written[entry]:
                self._write(entry, grad)

    def unpack(self) -> List[Any]:
        if not self._views:
            for result, slot in zip(self._results, self._slots):
                numpy.copyto(result, slot.reshape(result.shape))
        return self._results


class KernelCopy(BucketCopy):
    """One launch of the multi-tensor pack kernel and one of the unpack kernel, for buckets on
    a GPU: a few launches instead of one small kernel per parameter.

    The results are arrays of their own, allocated once with the unpack launch that fills them.
    """

    def __init__(self, like: Sequence[Any], offsets: List[int], flat: Any) -> None:
        super().__init__(like, offsets, flat)
        xp = backend.get_array_module(like[0])
        self._results = [xp.empty(a.shape, dtype=a.dtype) for a in like]
        self._unpack = unpack_launch(self.flat, self._results, self.offsets)

    def pack(self, gradients: Sequence[Any], scale: float) -> None:
        xp = backend.get_array_module(self.flat)
        sources, offsets = [], []
        for grad, offset, result in zip(gradients, self.offsets, self._results):
            if grad is None:
                self.flat[offset : offset + result.size].fill(0)
            else:
                sources.append(xp.ascontiguousarray(grad))
                offsets.append(offset)
        if sources:
            kernels.pack(sources, self.flat, offsets, scale)

    def unpack(self) -> List[Any]:
        kernels.launch(self._unpack)
        return self._results


def copy_for(place: str) -> type:
    """The :class:`BucketCopy` for buckets on ``place``: NumPy on "cpu", kernels elsewhere."""
    return HostCopy if place == "cpu" else KernelCopy


class GradBucket:
    """A bucket: parameters whose gradients travel together, in one flat buffer.

    What it is. ``index`` is its position in launch order; ``params`` its parameters;
    ``process_group`` the group of the DataParallel; ``dtype`` the entries' dtype. The entries
    are the parameters' gradients and, in the last bucket, one more: a one-element array of the
    reducer's own (its check that every rank saw the gradients it expected), which a hook must
    average like the rest. In a flat buffer, entry ``i`` starts at ``offsets[i]``.

    Its memory. On the host, the bucket sets aside ``numel`` elements of its dtype from the
    process group when it is built (:meth:`BucketCopy.reserve`): on shared memory that is the
    one collective a bucket makes outside its all-reduces, and every rank builds the same
    buckets in the same order. The first wire dtype a hook packs, when it fits, gets that
    memory; any other gets memory of its own.

    How gradients come in. The reducer hands each final gradient to :meth:`note`. On the host
    it is copied at once, scaled, into the buffer the hook packed last step (the early
    packing), so that when the last gradient arrives the bucket is ready for the wire.

    How the hook sends it. ``gradients`` holds this step's arrays, one per entry (None: zeros).
    The hook calls :meth:`pack`, which writes what the early packing did not and returns the
    :class:`BucketCopy`; it all-reduces ``copy.flat`` and returns a :class:`BucketWork`.

    How results come back. ``BucketWork.wait()`` waits for the all-reduce and returns
    ``copy.unpack()``: one array per entry.
    """

    __slots__ = ("index", "params", "process_group", "offsets", "gradients", "_entries", "_memory", "_copies", "_early")

    def __init__(
        self, index: int, params: Sequence[Any], extra: Sequence[Any], process_group: Any, reserve: bool = True
    ) -> None:
        self.index = index
        self.params = list(params)
        self.process_group = process_group
        self._entries = [p._data for p in self.params] + list(extra)
        self.offsets: List[int] = []
        total = 0
        for array in self._entries:
            self.offsets.append(total)
            total += array.size
        self.gradients: List[Any] = [None] * len(self.params) + list(extra)
        self._memory = self._copy_type().reserve(process_group, total * self.dtype.itemsize) if reserve else None
        self._copies: Dict[Any, BucketCopy] = {}
        self._early: Optional[HostCopy] = None

    @property
    def dtype(self) -> Any:
        """The entries' dtype."""
        return self._entries[0].dtype

    @property
    def numel(self) -> int:
        """Elements in the bucket, all entries together."""
        return self.offsets[-1] + self._entries[-1].size

    def _copy_type(self) -> type:
        return copy_for(backend.place_of(self._entries[0]))

    def copy(self, wire_dtype: Any = None) -> BucketCopy:
        """This bucket's :class:`BucketCopy` for ``wire_dtype`` (default: the bucket's dtype),
        made at the first call and reused afterwards."""
        key = self.dtype if wire_dtype is None else numpy.dtype(wire_dtype)
        copy = self._copies.get(key)
        if copy is None:
            nbytes = self.numel * key.itemsize
            if self._memory is not None and nbytes <= self._memory.nbytes:
                flat, self._memory = self._memory[:nbytes].view(key), None
            else:
                flat = backend.get_array_module(self._entries[0]).zeros(self.numel, dtype=key)
            copy = self._copy_type()(self._entries, self.offsets, flat)
            self._copies[key] = copy
        return copy

    def pack(self, wire_dtype: Any = None, scale: float = 1.0) -> BucketCopy:
        """The bucket's copy for ``wire_dtype`` with every entry written, times ``scale``."""
        copy = self.copy(wire_dtype)
        if self._early is not None and self._early is not copy:
            self._early.forget()
        copy.pack(self.gradients, scale)
        self._early = copy if copy.EAGER else None
        return copy

    def pack_fresh(self, numel: int, scale: float) -> BucketCopy:
        """A copy of the bucket in a buffer of ``numel`` elements, zeros after the entries, (at least :attr:`numel`)
        made for this launch only, every entry written times ``scale``: the reduce-scatter form,
        which keeps no full-size buffer between steps and needs one padded to the group size."""
        flat = backend.get_array_module(self._entries[0]).empty(numel, dtype=self.dtype)
        flat[self.numel :] = 0  # the padding; pack writes every entry
        copy = self._copy_type()(self._entries, self.offsets, flat)
        copy.pack(self.gradients, scale)
        return copy

    def note(self, entry: int, grad: Any) -> None:
        """Record a parameter's final gradient for this step (the reducer calls this)."""
        self.gradients[entry] = grad
        if self._early is not None:
            self._early.note(entry, grad)

    def reset(self) -> None:
        """Forget this step's gradients: once the hook has packed them, or when a backward pass
        was abandoned before its end (the reducer calls this)."""
        count = len(self.params)
        self.gradients[:count] = [None] * count
        if self._early is not None:
            self._early.forget()


class BucketWork:
    """What a hook returns: a collective's work and the unpack that follows it.

    ``wait()`` waits for the collective (raising its error, if any) and returns the unpacked
    gradients.
    """

    __slots__ = ("_work", "_unpack")

    def __init__(self, work: Any, unpack: Callable[[], List[Any]]) -> None:
        self._work = work
        self._unpack = unpack

    def wait(self) -> List[Any]:
        self._work.wait()
        with timeline.span("unpack", "reducer"):
            return self._unpack()


def _average(process_group: Any, bucket: GradBucket, wire_dtype: Any) -> BucketWork:
    """Pack with 1/world_size (Paddle's order: divide, then sum), all-reduce, unpack on wait."""
    group = bucket.process_group if process_group is None else process_group
    copy = bucket.pack(wire_dtype, 1.0 / group.size)
    return BucketWork(group.all_reduce(copy.flat, sync_op=False), copy.unpack)


def allreduce_hook(process_group: Any, bucket: GradBucket) -> BucketWork:
    """Average the bucket over ``process_group`` in the gradients' own dtype (the default)."""
    return _average(process_group, bucket, bucket.dtype)


def _compressed(bucket: GradBucket, half: Any) -> Any:
    return half if bucket.dtype == numpy.float32 else bucket.dtype


def fp16_compress_hook(process_group: Any, bucket: GradBucket) -> BucketWork:
    """Average a float32 bucket as float16 on the wire; other dtypes travel as they are."""
    return _average(process_group, bucket, _compressed(bucket, numpy.float16))


def bf16_compress_hook(process_group: Any, bucket: GradBucket) -> BucketWork:
    """Average a float32 bucket as bfloat16 on the wire; other dtypes travel as they are."""
    import ml_dtypes

    return _average(process_group, bucket, _compressed(bucket, ml_dtypes.bfloat16))


class GradShards:
    """The state of :func:`reduce_scatter_hook`: this rank's block of each bucket's averaged
    gradients.

    ``blocks[b]`` holds ``block_sizes[b]`` elements of bucket ``b``'s dtype: elements
    ``[rank * size, (rank + 1) * size)`` of the bucket's flat buffer (entries one after the other,
    zeros after the last up to ``size * group size``). ``filled[b]`` says whether the block holds
    gradients since :meth:`clear`; a second backward before it adds to them, as gradients
    accumulate without sharding.
    """

    def __init__(self, block_sizes: Sequence[int], dtypes: Sequence[Any], xp: Any = numpy) -> None:
        self.blocks = [xp.zeros(size, dtype=dtype) for size, dtype in zip(block_sizes, dtypes)]
        self.filled = [False] * len(self.blocks)

    def target(self, index: int) -> Any:
        """Where bucket ``index``'s block of the next averaged gradients should be received:
        the block itself when it holds no gradients yet, else a new array to add in."""
        block = self.blocks[index]
        return backend.get_array_module(block).empty_like(block) if self.filled[index] else block

    def receive(self, index: int, averaged: Any) -> None:
        """Take bucket ``index``'s block of one backward's averaged gradients (received into
        :meth:`target`)."""
        if averaged is not self.blocks[index]:
            self.blocks[index] += averaged
        self.filled[index] = True

    def clear(self) -> None:
        """Forget the gradients (the optimizer's ``clear_grad``): the next backward overwrites."""
        self.filled = [False] * len(self.blocks)


def reduce_scatter_hook(shards: GradShards, bucket: GradBucket) -> BucketWork:
    """Average the bucket over its process group, keeping only this rank's block in ``shards``.

    The bucket is packed times 1/world_size (as :func:`allreduce_hook` packs it) into a buffer
    padded to ``world_size`` blocks, which is reduce-scattered: rank ``r`` receives block ``r``.
    The entries after the parameters (the reducer's check count) are all-reduced besides, so
    every rank sees them. Each parameter's own gradient is dropped once packed (the last
    reference but the tape's), so that backward does not hold every bucket's gradients at once;
    ``wait()`` returns None for every parameter (the reducer then drops any gradient left: the
    averaged values live in ``shards``) and the extra entries' sums.
    """
    group = bucket.process_group
    received = shards.target(bucket.index)
    copy = bucket.pack_fresh(received.size * group.size, 1.0 / group.size)
    for param, grad in zip(bucket.params, bucket.gradients):
        if grad is not None and param._grad is grad:
            param._grad = None  # packed: dropped now, so the buckets in flight hold one copy
    work = group.reduce_scatter(received, copy.flat, sync_op=False)
    count = len(bucket.params)
    extra = copy.flat[bucket.offsets[count] : bucket.numel].copy() if len(bucket.offsets) > count else None
    extra_work = group.all_reduce(extra, sync_op=False) if extra is not None else None

    def unpack() -> List[Any]:
        shards.receive(bucket.index, received)
        results: List[Any] = [None] * count
        if extra_work is not None:
            extra_work.wait()
            for start, entry in zip(bucket.offsets[count:], bucket.gradients[count:]):
                start -= bucket.offsets[count]
                results.append(extra[start : start + entry.size].reshape(entry.shape))
        return results

    return BucketWork(work, unpack)


class CallCounter:
    """The state of :func:`counting_hook`: ``calls`` lists ``(bucket index, elements)``."""

    def __init__(self) -> None:
        self.calls: List[tuple] = []


def counting_hook(counter: CallCounter, bucket: GradBucket) -> BucketWork:
    """Record the bucket in ``counter`` and leave the gradients as they are: no communication."""
    counter.calls.append((bucket.index, bucket.numel))
    copy = bucket.pack()
    return BucketWork(Work.completed("counting_hook (no communication)"), copy.unpack)


# What DataParallel.register_comm_hook accepts: hook(state, bucket) -> a BucketWork.
CommHook = Callable[[Optional[Any], GradBucket], BucketWork]
