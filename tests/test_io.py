"""minidp.io: datasets, collation, DataLoader, BatchSampler and DistributedBatchSampler; and
DataLoader(num_workers > 0) (``minidp/io/worker.py``): worker processes load batches in order,
run worker_init_fn, see get_worker_info, re-raise their errors naming the worker, time out, and
leave no process behind."""

import os
import time

import numpy as np
import psutil
import pytest

import minidp
from minidp.io import (
    BatchSampler,
    DataLoader,
    Dataset,
    DistributedBatchSampler,
    RandomSampler,
    SequenceSampler,
    Subset,
    TensorDataset,
    default_collate_fn,
)

pytestmark = pytest.mark.timeout(60)  # a hung worker process fails its test instead of the run


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
    assert batch["w"].dtype == np.float64  # Python floats batch as float64, as in Paddle
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
    loader = DataLoader(
        Subset(Squares(9), [8, 1]),
        batch_sampler=BatchSampler(dataset=range(2), batch_size=2),
        collate_fn=lambda samples: [s["y"] for s in samples],
    )
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


@pytest.mark.parametrize(
    "n,batch,ranks,drop_last,expected",
    [
        # paddle.io.DistributedBatchSampler(..., shuffle=True) after set_epoch(3), Paddle 3.3
        (10, 3, 3, False, [[[5, 4, 1], [9]], [[2, 1, 6], [8]], [[7, 0, 3], [0]]]),
        (11, 2, 4, True, [[[5, 4]], [[1, 2]], [[0, 6]], [[7, 0]]]),
        (7, 2, 2, False, [[[5, 0], [3, 1]], [[4, 6], [0, 2]]]),
    ],
)
def test_distributed_sampler_shuffles_exactly_as_paddle(n, batch, ranks, drop_last, expected):
    for rank in range(ranks):
        sampler = DistributedBatchSampler(
            Indices(n), batch, num_replicas=ranks, rank=rank, shuffle=True, drop_last=drop_last
        )
        sampler.set_epoch(3)
        assert list(sampler) == expected[rank]


# ---------------------------------------------------------------------------------------------
# More datasets and samplers, batch_size=None, iterable datasets (checked against Paddle 3.3.1)
# ---------------------------------------------------------------------------------------------
from minidp.io import (
    ChainDataset,
    ComposeDataset,
    ConcatDataset,
    IterableDataset,  # noqa: E402
    SubsetRandomSampler,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


class Pairs(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.array([i, i], "float32"), i


class Counting(IterableDataset):
    """0..n-1; in a worker, only the numbers congruent to its id modulo the number of workers."""

    def __init__(self, n=7):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        return iter(range(info.id, self.n, info.num_workers) if info else range(self.n))


def test_concat_and_compose_datasets():
    concat = ConcatDataset([list(range(3)), list(range(10, 12))])
    assert len(concat) == 5 and [concat[i] for i in range(5)] == [0, 1, 2, 10, 11] and concat[-1] == 11
    with pytest.raises(IndexError):
        concat[5]
    composed = ComposeDataset([Pairs(), Pairs()])
    assert len(composed) == 4
    sample = composed[1]
    assert len(sample) == 4 and sample[1] == 1 and sample[3] == 1
    with pytest.raises(ValueError, match="one length"):
        ComposeDataset([Pairs(), list(range(3))])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Counting()])


def test_chain_and_iterable_datasets():
    assert list(ChainDataset([Counting(3), Counting(2)])) == [0, 1, 2, 0, 1]
    with pytest.raises(TypeError, match="not an IterableDataset"):
        ChainDataset([Pairs()])
    with pytest.raises(TypeError, match="no length"):
        len(Counting())


def test_random_split_by_lengths_and_fractions_is_a_seeded_partition():
    minidp.seed(4)
    parts = random_split(list(range(10)), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    assert sorted([p[i] for p in parts for i in range(len(p))]) == list(range(10))
    minidp.seed(4)
    again = random_split(list(range(10)), [3, 7])
    assert [again[0][i] for i in range(3)] == [parts[0][i] for i in range(3)]
    assert [len(p) for p in random_split(list(range(10)), [0.3, 0.7])] == [3, 7]  # Paddle 3.3.1 gives [3, 7]
    assert [len(p) for p in random_split(list(range(10)), [0.5, 0.25, 0.25])] == [6, 2, 2]  # as Paddle 3.3.1
    with pytest.raises(ValueError, match="summing to the dataset's length 10"):
        random_split(list(range(10)), [3, 6])


def test_subset_and_weighted_samplers():
    minidp.seed(0)
    assert sorted(SubsetRandomSampler([5, 7, 9])) == [5, 7, 9] and len(SubsetRandomSampler([5, 7, 9])) == 3
    weighted = WeightedRandomSampler(np.array([0.0, 1.0, 3.0]), 200)
    drawn = list(weighted)
    assert len(drawn) == len(weighted) == 200 and 0 not in drawn and drawn.count(2) > drawn.count(1)
    unique = list(WeightedRandomSampler([1.0, 1.0, 1.0, 0.0], 3, replacement=False))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot exceed the number of positive weights"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([-1.0, 2.0], 2)


def test_batch_size_none_yields_converted_samples():
    samples = list(DataLoader(Pairs(), batch_size=None))
    assert len(samples) == 4
    array, index = samples[1]
    assert isinstance(array, minidp.Tensor) and array.shape == [2] and index == 1
    assert list(DataLoader(Counting(3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Pairs(), batch_size=None)) == 4


def test_iterable_dataset_batches_in_stream_order_and_has_no_length():
    loader = DataLoader(Counting(), batch_size=2)
    assert [b.numpy().tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6]]
    assert [b.numpy().tolist() for b in DataLoader(Counting(), batch_size=2, drop_last=True)] == [
        [0, 1],
        [2, 3],
        [4, 5],
    ]
    with pytest.raises(TypeError, match="no length"):
        len(loader)
    with pytest.raises(ValueError, match="IterableDataset decides its own order"):
        DataLoader(Counting(), batch_size=2, shuffle=True)


def test_custom_collate_fn_and_paddles_argument_order():
    loader = DataLoader(Pairs(), None, None, True, None, 2, collate_fn=lambda samples: [s[1] for s in samples])
    assert list(loader) == [[0, 1], [2, 3]]
    assert get_worker_info() is None


# ---------------------------------------------------------------------------------------------
# Worker processes (num_workers > 0)
# ---------------------------------------------------------------------------------------------

_initialised_by = None


def remember_worker(worker_id):
    """A worker_init_fn: records which worker ran it, for WhoLoads to report."""
    global _initialised_by
    _initialised_by = worker_id


def failing_init(worker_id):
    raise ValueError(f"init of worker {worker_id} fails on purpose")


class WhoLoads(Dataset):
    """Sample i: [i, worker id, number of workers, the id worker_init_fn saw, pid, a random draw]."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array(
            [
                i,
                info.id,
                info.num_workers,
                -1 if _initialised_by is None else _initialised_by,
                os.getpid(),
                minidp.rand([1]).item(),
            ]
        )


class Failing(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise KeyError(f"sample {i} is missing")
        return np.float32(i)


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(30)
        return np.float32(i)


class Dying(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            os._exit(3)
        return np.float32(i)


def children():
    return {child.pid for child in psutil.Process().children(recursive=True)}


@pytest.fixture
def no_leftover_workers():
    before = children()
    yield
    deadline = time.monotonic() + 10
    while children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children() - before == set()


def rows(loader):
    return [batch.numpy() for batch in loader]


def test_batches_arrive_in_sampler_order_with_the_same_values(no_leftover_workers):
    data = TensorDataset([minidp.arange(40, dtype="float32").reshape([20, 2])])
    minidp.seed(5)
    here = [b[0].numpy() for b in DataLoader(data, batch_size=3, shuffle=True)]
    minidp.seed(5)
    there = [b[0].numpy() for b in DataLoader(data, batch_size=3, shuffle=True, num_workers=3, prefetch_factor=1)]
    assert len(there) == 7
    for mine, theirs in zip(here, there):
        np.testing.assert_array_equal(mine, theirs)


def test_workers_run_init_fn_and_see_their_worker_info(no_leftover_workers):
    batches = np.concatenate(rows(DataLoader(WhoLoads(), batch_size=2, num_workers=2, worker_init_fn=remember_worker)))
    assert batches[:, 0].tolist() == list(range(12))
    assert batches[:, 1].tolist() == [0, 0, 1, 1] * 3  # round-robin over the workers, two samples per batch
    assert set(batches[:, 2]) == {2}
    np.testing.assert_array_equal(batches[:, 3], batches[:, 1])
    assert len(set(batches[:, 4])) == 2 and os.getpid() not in set(batches[:, 4])
    draws = {worker: batches[batches[:, 1] == worker, 5] for worker in (0, 1)}
    assert not np.array_equal(draws[0], draws[1])  # each worker has its own seed
    assert get_worker_info() is None


def test_seeding_the_main_process_makes_worker_draws_repeat(no_leftover_workers):
    minidp.seed(11)
    first = np.concatenate(rows(DataLoader(WhoLoads(), batch_size=4, num_workers=2)))[:, 5]
    minidp.seed(11)
    second = np.concatenate(rows(DataLoader(WhoLoads(), batch_size=4, num_workers=2)))[:, 5]
    np.testing.assert_array_equal(first, second)


def test_iterable_dataset_is_shared_out_by_worker_info(no_leftover_workers):
    loader = DataLoader(Counting(), batch_size=2, num_workers=2)
    # Paddle 3.3.1 gives the same batches in the same order.
    assert [b.numpy().tolist() for b in loader] == [[0, 2], [1, 3], [4, 6], [5]]
    assert sorted(int(x) for x in DataLoader(Counting(5), batch_size=None, num_workers=3)) == list(range(5))


def test_a_worker_error_is_raised_in_the_main_process_naming_the_worker(no_leftover_workers):
    with pytest.raises(KeyError, match=r"DataLoader worker 1 raised KeyError:(.|\n)*sample 3 is missing"):
        rows(DataLoader(Failing(), batch_size=1, num_workers=2))


def test_a_failing_worker_init_fn_is_reported(no_leftover_workers):
    with pytest.raises(ValueError, match="init of worker 0 fails on purpose"):
        rows(DataLoader(Failing(), batch_size=1, num_workers=2, worker_init_fn=failing_init))


def test_timeout_raises_instead_of_waiting(no_leftover_workers):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out.*timeout=1 s"):
        rows(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=1))
    assert time.monotonic() - start < 15


def test_a_worker_that_dies_is_reported(no_leftover_workers):
    with pytest.raises(RuntimeError, match=r"DataLoader worker 1 \(pid \d+\) exited unexpectedly with exit code 3"):
        rows(DataLoader(Dying(), batch_size=1, num_workers=2))


def test_abandoning_an_epoch_stops_the_workers(no_leftover_workers):
    loader = DataLoader(WhoLoads(), batch_size=1, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    assert len(children()) >= 2
    iterator.close()


def test_persistent_workers_serve_every_epoch_and_stop_with_the_loader(no_leftover_workers):
    loader = DataLoader(WhoLoads(), batch_size=3, num_workers=2, persistent_workers=True)
    first = np.concatenate(rows(loader))
    second = np.concatenate(rows(loader))
    assert set(first[:, 4]) == set(second[:, 4])  # the same worker processes
    streams = DataLoader(Counting(), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.numpy().tolist() for b in streams] == [b.numpy().tolist() for b in streams]
    del loader, streams


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_workers": -1}, ValueError, "num_workers must be a non-negative int"),
        ({"num_workers": 1, "prefetch_factor": 0}, ValueError, "prefetch_factor must be a positive int"),
        ({"num_workers": 1, "timeout": -1}, ValueError, "timeout must be a non-negative"),
        ({"num_workers": 1, "worker_init_fn": 3}, TypeError, "worker_init_fn must be callable"),
    ],
)
def test_worker_options_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        DataLoader(WhoLoads(), **kwargs)
