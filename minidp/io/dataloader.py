"""DataLoader: iterate over a dataset in batches of tensors."""
from __future__ import annotations

import logging
import numbers
import os
from typing import Any, Callable, Iterator, Optional

import numpy

from .. import backend
from ..autograd.tensor import Tensor
from ..ops._util import wrap
from ..ops.creation import to_tensor
from .sampler import BatchSampler

logger = logging.getLogger("minidp.io")


def _batch_tensor(array: Any) -> Tensor:
    """A tensor at the current place around a freshly stacked array (no second copy on the CPU)."""
    if backend.get_device() == "cpu" and isinstance(array, numpy.ndarray):
        return wrap(array)
    return to_tensor(array)


def default_collate_fn(samples: list) -> Any:
    """Stack a list of samples field by field into batch tensors.

    Tensors and arrays are stacked along a new first axis; Python ints become an int64 tensor
    and floats a float32 one; tuples and lists are collated per position (giving a list),
    dicts per key; strings are returned as a list.
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
        return _batch_tensor(numpy.array(samples, dtype=backend.DEFAULT_FLOAT))
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, dict):
        return {key: default_collate_fn([s[key] for s in samples]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate_fn: samples in one batch have different numbers of fields")
        return [default_collate_fn(list(field)) for field in zip(*samples)]
    raise TypeError(f"default_collate_fn: cannot batch samples of type {type(first).__name__}; pass a "
                    "collate_fn that can")


class DataLoader:
    """Batches of ``dataset``: from ``batch_sampler`` if given, else ``batch_size``/``shuffle``/``drop_last``.

    Loading runs in the calling process; ``num_workers`` and ``return_list`` are accepted for
    Paddle compatibility (batches are always lists, or whatever ``collate_fn`` returns).
    Shuffling draws from the generator :func:`minidp.seed` resets. For data-parallel
    training pass a :class:`DistributedBatchSampler`.
    """

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 batch_sampler: Optional[Any] = None, collate_fn: Optional[Callable] = None,
                 num_workers: int = 0, return_list: bool = True) -> None:
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("DataLoader: batch_sampler already decides batch_size, shuffle and "
                                 "drop_last; leave them at their defaults")
        else:
            batch_sampler = BatchSampler(dataset=dataset, shuffle=shuffle, batch_size=batch_size,
                                         drop_last=drop_last)
        if num_workers:
            logger.info("rank %s: DataLoader loads in the calling process; num_workers=%s is ignored",
                        os.environ.get("PADDLE_TRAINER_ID", "0"), num_workers)
        self.dataset = dataset
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or default_collate_fn
        self.return_list = return_list

    def __iter__(self) -> Iterator[Any]:
        dataset, collate = self.dataset, self.collate_fn
        for indices in self.batch_sampler:
            yield collate([dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler)
