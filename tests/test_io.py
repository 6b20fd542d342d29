"""Datasets, collation, DataLoader, BatchSampler and DistributedBatchSampler."""
import numpy as np
import pytest

import minidp
from minidp.io import (BatchSampler, DataLoader, Dataset, DistributedBatchSampler, RandomSampler,
                       SequenceSampler, Subset, TensorDataset, default_collate_fn)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "y": i * i, "w": 0.5, "name": f"s{i}"}

    def __len__(self):
        return self.n


def test_tensor_dataset_and_loader_batches_in_order():
    x = minidp.to_tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = minidp.to_tensor(np.arange(10))
    dataset = TensorDataset([x, y])
    assert len(dataset) == 10
    xi, yi = dataset[3]
    assert xi.numpy().tolist() == [6.0, 7.0] and yi.item() == 3
    loader = DataLoader(dataset, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == [4, 2] and batches[0][0].dtype == np.float32
    assert len(DataLoader(dataset, batch_size=4, drop_last=True)) == 2
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset([x, minidp.to_tensor(np.arange(3))])


def test_default_collate_handles_dicts_numbers_and_strings():
    batch = next(iter(DataLoader(Squares(5), batch_size=3)))
    assert batch["x"].shape == [3, 2]
    assert batch["y"].dtype == np.int64 and batch["y"].numpy().tolist() == [0, 1, 4]
    assert batch["w"].dtype == np.float32
    assert batch["name"] == ["s0", "s1", "s2"]
    pairs = default_collate_fn([(np.zeros(2), 1), (np.ones(2), 2)])
    assert isinstance(pairs, list) and pairs[0].shape == [2, 2] and pairs[1].numpy().tolist() == [1, 2]
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate_fn([object()])


def test_shuffle_is_a_seeded_permutation():
    dataset = Squares(50)
    minidp.seed(7)
    first = [i for batch in DataLoader(dataset, batch_size=8, shuffle=True) for i in batch["y"].numpy()]
    minidp.seed(7)
    again = [i for batch in DataLoader(dataset, batch_size=8, shuffle=True) for i in batch["y"].numpy()]
    assert first == again and sorted(first) == [i * i for i in range(50)] and first != sorted(first)


def test_samplers_and_custom_collate():
    assert list(SequenceSampler(range(4))) == [0, 1, 2, 3]
    assert sorted(RandomSampler(range(6))) == list(range(6))
    assert len(list(RandomSampler(range(6), replacement=True, num_samples=10))) == 10
    sampler = BatchSampler(sampler=SequenceSampler(range(7)), batch_size=3)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6]] and len(sampler) == 3
    assert len(BatchSampler(dataset=range(7), batch_size=3, drop_last=True)) == 2
    loader = DataLoader(Subset(Squares(9), [8, 1]), batch_sampler=BatchSampler(dataset=range(2), batch_size=2),
                        collate_fn=lambda samples: [s["y"] for s in samples])
    assert list(loader) == [[64, 1]]
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(Squares(3), batch_size=2, batch_sampler=sampler)
    with pytest.raises(ValueError, match="exactly one"):
        BatchSampler(batch_size=2)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(dataset=range(3), batch_size=0)


@pytest.mark.parametrize("n,ranks,batch", [(20, 2, 4), (23, 3, 4), (10, 4, 3), (5, 2, 8)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_shards_are_equal_disjoint_and_cover(n, ranks, batch, shuffle):
    shards = []
    for rank in range(ranks):
        sampler = DistributedBatchSampler(range(n), batch, num_replicas=ranks, rank=rank, shuffle=shuffle)
        sampler.set_epoch(3)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert all(len(b) == batch for b in batches[:-1])
        shards.append([i for b in batches for i in b])
    per_rank = -(-n // ranks)
    assert all(len(shard) == per_rank for shard in shards)
    everything = [i for shard in shards for i in shard]
    assert sorted(set(everything)) == list(range(n))
    assert len(everything) - n == per_rank * ranks - n
    if n % ranks == 0:
        assert len(set(everything)) == len(everything)


def test_distributed_sampler_epochs_and_drop_last():
    def order(epoch, rank):
        sampler = DistributedBatchSampler(range(40), 5, num_replicas=2, rank=rank, shuffle=True)
        sampler.set_epoch(epoch)
        return [i for b in sampler for i in b]

    assert order(1, 0) == order(1, 0) and order(1, 0) != order(2, 0)
    assert not set(order(1, 0)) & set(order(1, 1))
    sampler = DistributedBatchSampler(range(40), 5, num_replicas=2, rank=0, shuffle=True)
    assert [i for b in sampler for i in b] != [i for b in sampler for i in b]
    dropped = DistributedBatchSampler(range(11), 4, num_replicas=2, rank=1, drop_last=True)
    assert len(dropped) == 1 and [len(b) for b in dropped] == [4]
    with pytest.raises(ValueError, match="rank"):
        DistributedBatchSampler(range(4), 2, num_replicas=2, rank=2)


def test_distributed_sampler_defaults_to_the_parallel_environment(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    sampler = DistributedBatchSampler(range(8), 2)
    assert (sampler.nranks, sampler.local_rank) == (2, 1)
    assert [i for b in sampler for i in b] == [2, 3, 6, 7]


# --- audit ---------------------------------------------------------------------------------------
def test_tensor_dataset_rows_of_a_1d_tensor_are_0d_tensors():
    ds = TensorDataset([minidp.to_tensor(np.arange(6.0).reshape(3, 2)), minidp.to_tensor(np.arange(3))])
    x, y = ds[1]
    assert y.shape == [] and y.place == "cpu" and y.numpy() == 1 and y.item() == 1
    assert isinstance(y._data, np.ndarray) and x.numpy().tolist() == [2.0, 3.0]


class Indices(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


@pytest.mark.parametrize("n,batch,ranks,drop_last,expected", [
    # paddle.io.DistributedBatchSampler(..., shuffle=True) after set_epoch(3), Paddle 3.3
    (10, 3, 3, False, [[[5, 4, 1], [9]], [[2, 1, 6], [8]], [[7, 0, 3], [0]]]),
    (11, 2, 4, True, [[[5, 4]], [[1, 2]], [[0, 6]], [[7, 0]]]),
    (7, 2, 2, False, [[[5, 0], [3, 1]], [[4, 6], [0, 2]]]),
])
def test_distributed_sampler_shuffles_exactly_as_paddle(n, batch, ranks, drop_last, expected):
    for rank in range(ranks):
        sampler = DistributedBatchSampler(Indices(n), batch, num_replicas=ranks, rank=rank, shuffle=True,
                                          drop_last=drop_last)
        sampler.set_epoch(3)
        assert list(sampler) == expected[rank]
