"""Datasets: indexable collections of samples that a DataLoader batches."""
from __future__ import annotations

from typing import Any, Sequence

import numpy

from ..autograd.tensor import Tensor
from ..ops._util import wrap


class Dataset:
    """A map-style dataset. Subclasses define ``__getitem__(index)`` (one sample: an array, a
    number, or a tuple/list/dict of them) and ``__len__()``."""


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: ``(x[i], y[i], ...)``."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError("TensorDataset: pass a non-empty list of Tensors")
        lengths = [t.shape[0] if t.ndim else None for t in tensors]
        if None in lengths or len(set(lengths)) != 1:
            raise ValueError(f"TensorDataset: every tensor needs the same first dimension, got shapes "
                             f"{[t.shape for t in tensors]}")
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
