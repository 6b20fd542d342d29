"""Samplers: which sample indices go into which batch, in which order, on which rank."""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, Sequence, Tuple

import numpy

from ..core.distributed.env import ParallelEnv
from ..core.random import host_generator


class Sampler:
    """Yields sample indices of ``data_source``. Subclasses define ``__iter__`` and ``__len__``."""

    def __init__(self, data_source: Any = None) -> None:
        self.data_source = data_source


class SequenceSampler(Sampler):
    """0, 1, ..., len - 1."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh permutation at every pass, drawn from the generator :func:`minidp.seed` resets."""

    def __init__(
        self,
        data_source: Any,
        replacement: bool = False,
        num_samples: Optional[int] = None,
        generator: Optional[numpy.random.Generator] = None,
    ) -> None:
        super().__init__(data_source)
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples must be a positive int, got {num_samples!r}")
        if num_samples is not None and not replacement:
            raise ValueError("RandomSampler: num_samples is only meaningful with replacement=True")
        self.replacement, self._num_samples, self.generator = replacement, num_samples, generator

    def __iter__(self) -> Iterator[int]:
        generator = self.generator or host_generator()
        n = len(self.data_source)
        if self.replacement:
            return iter(generator.integers(0, n, len(self)).tolist())
        return iter(generator.permutation(n).tolist())

    def __len__(self) -> int:
        return self._num_samples or len(self.data_source)


class SubsetRandomSampler(Sampler):
    """The given indices in a fresh random order at every pass."""

    def __init__(self, indices: Sequence[int]) -> None:
        indices = list(indices)
        if not indices:
            raise ValueError("SubsetRandomSampler: indices must not be empty")
        super().__init__(indices)
        self.indices = indices

    def __iter__(self) -> Iterator[int]:
        return iter([self.indices[i] for i in host_generator().permutation(len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (with or
    without replacement)."""

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True) -> None:
        if hasattr(weights, "numpy"):
            weights = weights.numpy()
        weights = numpy.asarray(weights, dtype=numpy.float64).reshape(-1)
        if weights.size == 0 or (weights < 0).any() or not numpy.isfinite(weights).all() or weights.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive int, got {num_samples!r}")
        if not replacement and num_samples > int((weights > 0).sum()):
            raise ValueError(
                f"WeightedRandomSampler: without replacement num_samples ({num_samples}) cannot exceed "
                f"the number of positive weights ({int((weights > 0).sum())})"
            )
        super().__init__()
        self.weights, self.num_samples, self.replacement = weights, num_samples, bool(replacement)

    def __iter__(self) -> Iterator[int]:
        chosen = host_generator().choice(
            self.weights.size, self.num_samples, replace=self.replacement, p=self.weights / self.weights.sum()
        )
        return iter(chosen.tolist())

    def __len__(self) -> int:
        return self.num_samples


def _check_batch_args(cls: str, batch_size: Any, drop_last: Any) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"{cls}: batch_size must be a positive int, got {batch_size!r}")
    if not isinstance(drop_last, bool):
        raise TypeError(f"{cls}: drop_last must be a bool, got {drop_last!r}")


def _batches(indices: Any, batch_size: int, drop_last: bool) -> Iterator[list]:
    batch = []
    for index in indices:
        batch.append(index)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


class BatchSampler(Sampler):
    """Groups the indices of a sampler (or of ``dataset``, shuffled or in order) into batches."""

    def __init__(
        self,
        dataset: Any = None,
        sampler: Optional[Sampler] = None,
        shuffle: bool = False,
        batch_size: int = 1,
        drop_last: bool = False,
    ) -> None:
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: pass exactly one of dataset and sampler")
        if sampler is not None and shuffle:
            raise ValueError(
                "BatchSampler: shuffle applies to a dataset; with a sampler, let the sampler decide the order"
            )
        _check_batch_args("BatchSampler", batch_size, drop_last)
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        super().__init__(sampler)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list]:
        return _batches(self.sampler, self.batch_size, self.drop_last)

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _parallel_env() -> Tuple[int, int]:
    """(world size, rank) of this process, from :class:`ParallelEnv`, the one source of both (it
    knows Paddle's launchers and MPI's)."""
    env = ParallelEnv()
    return env.world_size, env.rank


class DistributedBatchSampler(BatchSampler):
    """The batches of one rank: every rank gets a disjoint shard of the same length.

    As in Paddle, the index list is padded by repeating its start up to a multiple of
    ``num_replicas``; with ``shuffle`` the padded list is then shuffled by
    ``numpy.random.RandomState(epoch)``, so every rank (and Paddle itself) permutes identically;
    rank r takes batches r, r + R, r + 2R, ... of it, and the tail that is shorter than R
    batches is split evenly. The epoch advances by one at every shuffled pass, or is set with
    :meth:`set_epoch`.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        num_replicas: Optional[int] = None,
        rank: Optional[int] = None,
        shuffle: bool = False,
        drop_last: bool = False,
    ) -> None:
        _check_batch_args("DistributedBatchSampler", batch_size, drop_last)
        if num_replicas is None or rank is None:
            world_size, env_rank = _parallel_env()
            num_replicas = world_size if num_replicas is None else num_replicas
            rank = env_rank if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas <= 0:
            raise ValueError(f"DistributedBatchSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedBatchSampler: rank must lie in [0, {num_replicas}), got {rank!r}")
        self.dataset, self.batch_size, self.drop_last, self.shuffle = dataset, batch_size, drop_last, shuffle
        self.nranks, self.local_rank = num_replicas, rank
        self.sampler = None
        self.epoch = 0
        self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def _local_indices(self) -> list:
        n = len(self.dataset)
        indices = numpy.arange(self.total_size) % n
        if self.shuffle:
            numpy.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks == 1:
            return indices.tolist()
        stride = self.batch_size * self.nranks
        tail = self.total_size % stride
        head = indices[: self.total_size - tail].reshape(-1, self.nranks, self.batch_size)[:, self.local_rank]
        share = tail // self.nranks
        rest = indices[self.total_size - tail :][self.local_rank * share : (self.local_rank + 1) * share]
        return head.reshape(-1).tolist() + rest.tolist()

    def __iter__(self) -> Iterator[list]:
        return _batches(self._local_indices(), self.batch_size, self.drop_last)

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_samples // self.batch_size
        return -(-self.num_samples // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Choose the permutation of the next pass (call with the same epoch on every rank)."""
        self.epoch = int(epoch)
