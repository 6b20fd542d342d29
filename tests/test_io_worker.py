"""DataLoader(num_workers > 0) (``minidp/io/worker.py``): worker processes load batches in order,
run worker_init_fn, see get_worker_info, re-raise their errors naming the worker, time out, and
leave no process behind."""
import os
import time

import numpy as np
import psutil
import pytest

import minidp
from minidp.io import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

pytestmark = pytest.mark.timeout(60)

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
        return np.array([i, info.id, info.num_workers, -1 if _initialised_by is None else _initialised_by,
                         os.getpid(), minidp.rand([1]).item()])


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


class Counting(IterableDataset):
    def __init__(self, n=7):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        return iter(range(info.id, self.n, info.num_workers) if info else range(self.n))


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
    batches = np.concatenate(rows(DataLoader(WhoLoads(), batch_size=2, num_workers=2,
                                             worker_init_fn=remember_worker)))
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


@pytest.mark.parametrize("kwargs, error, match", [
    ({"num_workers": -1}, ValueError, "num_workers must be a non-negative int"),
    ({"num_workers": 1, "prefetch_factor": 0}, ValueError, "prefetch_factor must be a positive int"),
    ({"num_workers": 1, "timeout": -1}, ValueError, "timeout must be a non-negative"),
    ({"num_workers": 1, "worker_init_fn": 3}, TypeError, "worker_init_fn must be callable"),
])
def test_worker_options_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        DataLoader(WhoLoads(), **kwargs)
