"""Data loading: datasets, samplers (including the data-parallel one) and the DataLoader."""
from .dataloader import DataLoader, default_collate_fn
from .dataset import Dataset, Subset, TensorDataset
from .sampler import BatchSampler, DistributedBatchSampler, RandomSampler, Sampler, SequenceSampler

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "default_collate_fn", "BatchSampler",
           "DistributedBatchSampler", "Sampler", "SequenceSampler", "RandomSampler"]
