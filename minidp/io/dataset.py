"""Datasets: indexable collections of samples that a DataLoader batches."""

from __future__ import annotations

import bisect
import itertools
import math
from typing import Any, Iterable, Iterator, Optional, Sequence

import numpy

from ..core.tensor import Tensor
from ..core.op_util import wrap
from ..core.random import host_generator


class Dataset:
    """A map-style dataset. Subclasses define ``__getitem__(index)`` (one sample: an array, a
    number, or a tuple/list/dict of them) and ``__len__()``."""


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. A DataLoader batches the stream in
    order; with worker processes every worker iterates its own copy, so the dataset should use
    :func:`minidp.io.get_worker_info` to yield only its share."""

    def __iter__(self) -> Iterator[Any]:
        raise TypeError(f"{type(self).__name__} must define __iter__ to yield its samples")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it has no length")

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it instead of indexing")


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: ``(x[i], y[i], ...)``."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError("TensorDataset: pass a non-empty list of Tensors")
        lengths = [t.shape[0] if t.ndim else None for t in tensors]
        if None in lengths or len(set(lengths)) != 1:
            raise ValueError(
                f"TensorDataset: every tensor needs the same first dimension, got shapes {[t.shape for t in tensors]}"
            )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        rows = (t._data[index] for t in self.tensors)
        # NumPy gives a scalar for a row of a 1-D array; tensors hold arrays, so make it 0-d.
        return tuple(wrap(numpy.asarray(row) if isinstance(row, numpy.generic) else row) for row in rows)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def _check_map_datasets(cls: str, datasets: Iterable) -> list:
    datasets = list(datasets)
    if not datasets:
        raise ValueError(f"{cls}: pass at least one dataset")
    for dataset in datasets:
        if isinstance(dataset, IterableDataset):
            raise TypeError(
                f"{cls}: {type(dataset).__name__} is an IterableDataset; {cls} needs indexable "
                "datasets (use ChainDataset for streams)"
            )
    return datasets


class ConcatDataset(Dataset):
    """The samples of several datasets, one after the other."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = _check_map_datasets("ConcatDataset", datasets)
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset: index out of range for {len(self)} samples")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ComposeDataset(Dataset):
    """Datasets of one length side by side: sample i is the fields of every dataset's sample i
    in one tuple (a sample that is a tuple or list contributes its fields)."""

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = _check_map_datasets("ComposeDataset", datasets)
        lengths = {len(d) for d in self.datasets}
        if len(lengths) != 1:
            raise ValueError(
                f"ComposeDataset: the datasets must have one length, got {[len(d) for d in self.datasets]}"
            )

    def __len__(self) -> int:
        return len(self.datasets[0])

    def __getitem__(self, index: int) -> tuple:
        fields: list = []
        for dataset in self.datasets:
            sample = dataset[index]
            fields.extend(sample if isinstance(sample, (tuple, list)) else [sample])
        return tuple(fields)


class ChainDataset(IterableDataset):
    """The streams of several iterable datasets, one after the other."""

    def __init__(self, datasets: Sequence[IterableDataset]) -> None:
        datasets = list(datasets)
        for dataset in datasets:
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset: {type(dataset).__name__} is not an IterableDataset")
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for dataset in self.datasets:
            yield from dataset


def random_split(dataset: Any, lengths: Sequence[float], generator: Optional[Any] = None) -> list:
    """Split ``dataset`` at random into :class:`Subset` s of the given lengths (which sum to its
    length), or of the given fractions (which sum to 1; remainders go one by one to the first
    subsets). Draws from the generator :func:`minidp.seed` resets unless ``generator`` (a NumPy
    Generator) is given."""
    lengths = list(lengths)
    total = len(dataset)
    if lengths and all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1) and sum(lengths) != total:
        counts = [int(math.floor(total * f)) for f in lengths]
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != total or any(n < 0 or int(n) != n for n in lengths):
        raise ValueError(
            f"random_split: lengths must be non-negative ints summing to the dataset's length {total} "
            f"(or fractions summing to 1), got {lengths}"
        )
    order = (generator or host_generator()).permutation(total).tolist()
    bounds = list(itertools.accumulate(int(n) for n in lengths))
    return [Subset(dataset, order[end - int(n) : end]) for n, end in zip(lengths, bounds)]
