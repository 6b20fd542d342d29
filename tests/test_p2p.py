"""The point-to-point schedule of ``minidp.distributed.communication.p2p.exchange`` never deadlocks.

Ranks are threads; their process group is a stand-in whose ``send`` returns only once the peer
has received the array (the rendezvous that large messages get from TCP, MPI and NCCL), and
whose operations give up after a timeout. Batches with random peers, sizes and issue orders
must complete with every array where it belongs; the naive order (all sends, then all
receives) must not, which shows the stand-in would catch a schedule that can deadlock.
"""

import queue
import threading

import numpy as np
import pytest

from minidp.distributed.collective import Group
from minidp.distributed.communication.p2p import exchange

TIMEOUT = 2.0


class RendezvousGroup:
    """One rank's process group: a send completes when the receiver has copied the data."""

    def __init__(self, rank, channels):
        self.rank = rank
        self._channels = channels

    def send(self, array, dst):
        taken = threading.Event()
        self._channels[(self.rank, dst)].put((array, taken))
        if not taken.wait(TIMEOUT):
            raise RuntimeError(f"rank {self.rank}: send to {dst} was never received")

    def recv(self, array, src):
        try:
            data, taken = self._channels[(src, self.rank)].get(timeout=TIMEOUT)
        except queue.Empty:
            raise RuntimeError(f"rank {self.rank}: nothing arrived from {src}") from None
        array[...] = data
        taken.set()


def run_ranks(size, plans, schedule):
    """Run ``schedule(group, sends, recvs)`` on ``size`` threads; return each rank's error."""
    channels = {(a, b): queue.Queue() for a in range(size) for b in range(size)}
    errors = [None] * size

    def rank_main(rank):
        group = Group(rank, 0, range(size), RendezvousGroup(rank, channels), "standin")
        try:
            schedule(group, *plans[rank])
        except Exception as error:  # reported to the test
            errors[rank] = error

    threads = [threading.Thread(target=rank_main, args=(rank,), daemon=True) for rank in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3 * TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    return errors


def random_batch(size, seed):
    """Per rank: sends and receives in a random issue order (order per peer kept), with the
    arrays each receive must end up equal to."""
    rng = np.random.RandomState(seed)
    plans = [([], []) for _ in range(size)]
    expected = [[] for _ in range(size)]
    for a in range(size):
        for b in range(size):
            for k in range(rng.randint(0, 3)):
                payload = np.full(rng.randint(0, 5), 1000 * a + 10 * b + k, np.int64)
                plans[a][0].append((payload, b))
                target = np.zeros_like(payload)
                plans[b][1].append((target, a))
                expected[b].append((target, payload))
    for sends, recvs in plans:
        for ops in (sends, recvs):  # a random order of peers, each peer's operations in order
            by_peer = {}
            for op in ops:
                by_peer.setdefault(op[1], []).append(op)
            peers = [op[1] for op in ops]
            ops[:] = [by_peer[peers[i]].pop(0) for i in rng.permutation(len(ops))]
    return plans, expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_rings_complete_in_both_directions(size):
    for step in (1, -1):
        outgoing = [np.full(8, rank, np.float64) for rank in range(size)]
        incoming = [np.zeros(8) for _ in range(size)]
        plans = [([(outgoing[r], (r + step) % size)], [(incoming[r], (r - step) % size)]) for r in range(size)]
        assert run_ranks(size, plans, exchange) == [None] * size
        assert [float(a[0]) for a in incoming] == [float((r - step) % size) for r in range(size)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", range(12))
def test_random_batches_complete_with_every_array_in_place(seed):
    size = 2 + seed % 4
    plans, expected = random_batch(size, seed)
    assert run_ranks(size, plans, exchange) == [None] * size
    for rank in range(size):
        for target, payload in expected[rank]:
            np.testing.assert_array_equal(target, payload)


def naive(group, sends, recvs):
    for array, peer in sends:
        group.process_group.send(array, peer)
    for array, peer in recvs:
        group.process_group.recv(array, peer)


@pytest.mark.timeout(60)
def test_the_stand_in_catches_the_naive_order():
    outgoing = [np.ones(4) for _ in range(3)]
    plans = [([(outgoing[r], (r + 1) % 3)], [(np.zeros(4), (r - 1) % 3)]) for r in range(3)]
    errors = run_ranks(3, plans, naive)
    assert all(isinstance(error, RuntimeError) for error in errors)


def test_sends_to_this_rank_pair_with_its_receives():
    group = Group(0, 0, [0], RendezvousGroup(0, {}), "alone")
    first, second = np.zeros(2), np.zeros(3)
    exchange(group, [(np.array([1.0, 2.0]), 0), (np.array([3.0, 4.0, 5.0]), 0)], [(first, 0), (second, 0)])
    assert first.tolist() == [1.0, 2.0] and second.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="each send to itself needs a receive of the same size"):
        exchange(group, [(np.ones(2), 0)], [(np.zeros(3), 0)])
