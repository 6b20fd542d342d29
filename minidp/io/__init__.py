"""Data loading: datasets, samplers (including the data-parallel one) and the DataLoader."""

from .dataloader import DataLoader, default_collate_fn
from .dataset import Dataset, Subset, TensorDataset
from .sampler import BatchSampler, DistributedBatchSampler, RandomSampler, Sampler, SequenceSampler
from .dataset import ChainDataset, ComposeDataset, ConcatDataset, IterableDataset, random_split
from .sampler import SubsetRandomSampler, WeightedRandomSampler
from .worker import WorkerInfo, get_worker_info

__all__ = [
    "Dataset",
    "TensorDataset",
    "Subset",
    "DataLoader",
    "default_collate_fn",
    "BatchSampler",
    "DistributedBatchSampler",
    "Sampler",
    "SequenceSampler",
    "RandomSampler",
]
__all__ += [
    "IterableDataset",
    "ConcatDataset",
    "ComposeDataset",
    "ChainDataset",
    "random_split",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "WorkerInfo",
    "get_worker_info",
]
