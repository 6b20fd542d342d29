"""DataLoader: iterate over a dataset in batches of tensors."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Iterator, Optional

import numpy

from ..core import backend, timeline
from ..core.tensor import Tensor
from ..core.op_util import wrap
from ..ops.creation import to_tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequenceSampler, _check_batch_args
from .worker import WorkerPool


def _batch_tensor(array: Any) -> Tensor:
    """A tensor at the current place around a freshly stacked array (no second copy on the CPU)."""
    if backend.get_device() == "cpu" and isinstance(array, numpy.ndarray):
        return wrap(array)
    return to_tensor(array)


def default_collate_fn(samples: list) -> Any:
    """Stack a list of samples field by field into batch tensors.

    Tensors and arrays are stacked along a new first axis; Python ints become an int64 tensor
    and floats a float64 one (as in Paddle, which batches them with NumPy); tuples and lists are
    collated per position (giving a list), dicts per key; strings are returned as a list.
    """
    first = samples[0]
    if isinstance(first, Tensor):
        xp = backend.get_array_module(first._data)
        return _batch_tensor(xp.stack([s._data for s in samples]))
    if isinstance(first, numpy.ndarray):
        return _batch_tensor(numpy.stack(samples))
    if isinstance(first, (bool, numpy.bool_)):
        return _batch_tensor(numpy.array(samples, dtype=bool))
    if isinstance(first, numbers.Integral):
        return _batch_tensor(numpy.array(samples, dtype=numpy.int64))
    if isinstance(first, numbers.Real):
        return _batch_tensor(numpy.array(samples, dtype=numpy.float64))
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, dict):
        return {key: default_collate_fn([s[key] for s in samples]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate_fn: samples in one batch have different numbers of fields")
        return [default_collate_fn(list(field)) for field in zip(*samples)]
    raise TypeError(
        f"default_collate_fn: cannot batch samples of type {type(first).__name__}; pass a collate_fn that can"
    )


def default_convert_fn(sample: Any) -> Any:
    """What ``DataLoader(batch_size=None)`` does to each sample (Paddle's rule): NumPy arrays become
    tensors, tuples and lists become lists, dicts keep their keys, everything else stays."""
    if isinstance(sample, numpy.ndarray):
        return _batch_tensor(sample)
    if isinstance(sample, dict):
        return {key: default_convert_fn(value) for key, value in sample.items()}
    if isinstance(sample, (tuple, list)) and not isinstance(sample, str):
        return [default_convert_fn(value) for value in sample]
    return sample


def arrays_to_tensors(batch: Any) -> Any:
    """What the loop receives from a ``collate_fn`` of its own (Paddle's rule, in the main process
    and in workers alike): every NumPy array (0-d included) and tensor becomes a tensor of its
    dtype, every sequence (tuple, list, range) a list and every mapping a dict, at any depth;
    strings, bytes, numbers (NumPy scalars included) and other objects are left as they are."""
    if isinstance(batch, (str, bytes, Tensor)):
        return batch
    if isinstance(batch, numpy.ndarray):
        return _batch_tensor(batch)
    if isinstance(batch, Mapping):
        return {key: arrays_to_tensors(value) for key, value in batch.items()}
    if isinstance(batch, Sequence):
        return [arrays_to_tensors(value) for value in batch]
    return batch


class _TensorCollate:
    """A user's ``collate_fn`` followed by :func:`arrays_to_tensors`; a class, not a closure, so
    that it travels to worker processes."""

    def __init__(self, collate_fn: Callable) -> None:
        self.collate_fn = collate_fn

    def __call__(self, samples: Any) -> Any:
        return arrays_to_tensors(self.collate_fn(samples))


class _MapFetcher:
    """Builds the batch at given indices of a map-style dataset (one sample when unbatched)."""

    def __init__(self, dataset: Any, collate_fn: Callable, batched: bool) -> None:
        self.dataset, self.collate_fn, self.batched = dataset, collate_fn, batched

    def reset(self) -> None:
        """Nothing to restart: indices say where to read."""

    def fetch(self, indices: Any) -> Any:
        if self.batched:
            return self.collate_fn([self.dataset[i] for i in indices])
        return self.collate_fn(self.dataset[indices])


class _StreamFetcher:
    """Builds the next batch (or sample, when unbatched) of an iterable dataset; StopIteration at its end."""

    def __init__(self, dataset: Any, collate_fn: Callable, batch_size: Optional[int], drop_last: bool) -> None:
        self.dataset, self.collate_fn = dataset, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last
        self._samples: Optional[Iterator] = None

    def reset(self) -> None:
        """Start the stream over at the next fetch."""
        self._samples = None

    def fetch(self, indices: Any = None) -> Any:
        if self._samples is None:
            self._samples = iter(self.dataset)
        if self.batch_size is None:
            return self.collate_fn(next(self._samples))
        batch = list(itertools.islice(self._samples, self.batch_size))
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate_fn(batch)


class DataLoader:
    """Batches of ``dataset``, with Paddle's signature and behaviour.

    Map-style datasets are read in the order of ``batch_sampler``, or of a sampler built from
    ``batch_size``/``shuffle``/``drop_last`` (shuffling draws from the generator :func:`minidp.seed`
    resets; for data-parallel training pass a :class:`DistributedBatchSampler`). An
    :class:`IterableDataset` is batched in stream order. ``batch_size=None`` yields samples one by
    one, converted by :func:`default_convert_fn` unless ``collate_fn`` is given. What a
    ``collate_fn`` returns reaches the loop through :func:`arrays_to_tensors` (its NumPy arrays
    become tensors). Calling the loader (``for batch in loader():``) is iterating over it.

    ``num_workers > 0`` loads in that many worker processes (see :mod:`minidp.io.worker`):
    ``prefetch_factor`` batches per worker in flight, ``worker_init_fn(worker_id)`` run in each
    worker first, :func:`get_worker_info` available there, ``timeout`` seconds at most per batch
    (0: no limit), ``persistent_workers`` keeps them between epochs. ``feed_list``, ``places``,
    ``return_list``, ``use_buffer_reader``, ``reader_buffer_size`` and ``use_shared_memory``
    concern Paddle's static graph and its C++ reader; they are accepted and change nothing.
    """

    def __init__(
        self,
        dataset: Any,
        feed_list: Any = None,
        places: Any = None,
        return_list: bool = True,
        batch_sampler: Optional[Any] = None,
        batch_size: Optional[int] = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        collate_fn: Optional[Callable] = None,
        num_workers: int = 0,
        use_buffer_reader: bool = True,
        reader_buffer_size: int = 2,
        prefetch_factor: int = 2,
        use_shared_memory: bool = True,
        timeout: float = 0,
        worker_init_fn: Optional[Callable] = None,
        persistent_workers: bool = False,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative int, got {num_workers!r}")
        if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor <= 0:
            raise ValueError(f"DataLoader: prefetch_factor must be a positive int, got {prefetch_factor!r}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"DataLoader: timeout must be a non-negative number of seconds, got {timeout!r}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable, got {worker_init_fn!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {collate_fn!r}")
        self.is_iterable = isinstance(dataset, IterableDataset)
        batched = batch_size is not None or batch_sampler is not None
        if self.is_iterable:
            if shuffle or batch_sampler is not None:
                raise ValueError(
                    "DataLoader: an IterableDataset decides its own order; shuffle and batch_sampler "
                    "apply to map-style datasets only"
                )
            self.batch_sampler = None
            if batch_size is not None:
                _check_batch_args("DataLoader", batch_size, drop_last)
        elif batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler already decides batch_size, shuffle and "
                    "drop_last; leave them at their defaults"
                )
            self.batch_sampler = batch_sampler
        elif batch_size is None:
            self.batch_sampler = None
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        else:
            self.batch_sampler = BatchSampler(
                dataset=dataset, shuffle=shuffle, batch_size=batch_size, drop_last=drop_last
            )
        self.dataset, self.return_list = dataset, return_list
        self.batch_size, self.drop_last = batch_size, drop_last
        self.collate_fn = collate_fn or (default_collate_fn if batched else default_convert_fn)
        make_batch = self.collate_fn if collate_fn is None else _TensorCollate(collate_fn)
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.worker_init_fn, self.persistent_workers = worker_init_fn, bool(persistent_workers)
        if self.is_iterable:
            self._fetcher: Any = _StreamFetcher(dataset, make_batch, batch_size if batched else None, drop_last)
        else:
            self._fetcher = _MapFetcher(dataset, make_batch, batched)
        self._pool: Optional[WorkerPool] = None

    def _index_stream(self) -> Optional[Iterator]:
        """The epoch's indices: batches of them, single ones when unbatched, None for a stream."""
        if self.is_iterable:
            return None
        return iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self) -> Iterator[Any]:
        batches = self._iterate_here() if self.num_workers == 0 else self._iterate_in_workers()
        return timeline.batches(batches)

    def __call__(self) -> Iterator[Any]:
        """An iterator over the batches, as ``iter(loader)`` (Paddle scripts write ``loader()``)."""
        return iter(self)

    def _iterate_here(self) -> Iterator[Any]:
        fetcher = self._fetcher
        indices = self._index_stream()
        if indices is None:
            fetcher.reset()
            while True:
                try:
                    batch = fetcher.fetch()
                except StopIteration:
                    return
                yield batch
        for index in indices:
            yield fetcher.fetch(index)

    def _iterate_in_workers(self) -> Iterator[Any]:
        pool = self._pool
        if pool is None:
            pool = WorkerPool(self._fetcher, self.dataset, self.num_workers, self.worker_init_fn, self.timeout)
            if self.persistent_workers:
                self._pool = pool
        elif self.is_iterable:
            pool.restart_streams()
        try:
            yield from pool.run_epoch(self._index_stream(), self.prefetch_factor * self.num_workers)
        finally:
            if not self.persistent_workers:
                pool.close()

    def __len__(self) -> int:
        if self.is_iterable:
            # TypeError (Paddle raises ValueError) so that list(loader) and the like still work.
            raise TypeError("DataLoader: an IterableDataset has no length, so neither has its loader")
        if self.batch_sampler is None:
            return len(self.sampler)
        return len(self.batch_sampler)
