"""The gloo backend's TCP transport (GlooProcessGroup) on real processes: collectives against
NumPy, async order, failures."""

import hashlib
import os
import signal
import time

import ml_dtypes
import numpy as np
import pytest

from dist_utils import WorkerFailure, run_workers, run_workers_outcomes
from minidp.core.distributed.backends.base import Collective, Fingerprint, ReduceOp
from minidp.core.distributed.backends.tcp import GlooProcessGroup, SMALL_ALL_REDUCE_BYTES
from minidp.core.distributed.store import TCPStore
from mismatch_cases import check_mismatch_reports, run_mismatch_cases
from reduce_cases import check_every_op_and_dtype

DTYPES = ["float16", "float32", "float64", "int32", "int64"]
# 0, 1, odd, just past the small-message path, odd and ring-sized, several MiB
COUNTS = [0, 1, 7, SMALL_ALL_REDUCE_BYTES // 4 + 3, 100_003]
BIG_COUNT = (3 << 20) // 4 + 5
OPS = list(ReduceOp)


def make_group(timeout=30.0):
    """A gloo group over the whole job, from the variables run_workers sets."""
    rank, size = int(os.environ["PADDLE_TRAINER_ID"]), int(os.environ["PADDLE_TRAINERS_NUM"])
    store = TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), is_master=rank == 0, timeout=timeout)
    return GlooProcessGroup(store, rank, size, name="test", timeout=timeout), store


def contribution(rank, count, dtype, op, salt=0):
    """What rank ``rank`` contributes: small values so PROD and float16 stay exact enough."""
    rng = np.random.default_rng([rank, count, salt, int(op)])
    if op == ReduceOp.PROD:
        values = rng.choice([1, 2], size=count) if np.dtype(dtype).kind == "i" else rng.uniform(0.9, 1.1, count)
    else:
        values = rng.integers(-8, 9, size=count)
    return values.astype(dtype)


def expected_reduction(arrays, op, size):
    stacked = np.stack([a.astype(np.float64) for a in arrays])
    result = {
        ReduceOp.SUM: stacked.sum(0),
        ReduceOp.MAX: stacked.max(0),
        ReduceOp.MIN: stacked.min(0),
        ReduceOp.PROD: stacked.prod(0),
        ReduceOp.AVG: stacked.sum(0) / size,
    }[op]
    if op == ReduceOp.AVG and arrays[0].dtype.kind == "i":
        result = np.trunc(stacked.sum(0) / size)  # toward zero, as Paddle's AVG
    return result


def tolerance(dtype):
    return {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}.get(dtype, 0)


def check_close(failures, label, got, want, dtype):
    if not np.allclose(got.astype(np.float64), want, rtol=tolerance(dtype), atol=tolerance(dtype)):
        failures.append(f"{label}: got {got[:5]} want {want[:5]}")


def all_reduce_worker():
    pg, _ = make_group()
    failures, digests = [], []
    cases = [(c, d, op) for c in COUNTS for d in DTYPES for op in OPS]
    cases += [(BIG_COUNT, "float32", ReduceOp.SUM), (BIG_COUNT, "float64", ReduceOp.AVG)]
    for count, dtype, op in cases:
        array = contribution(pg.rank, count, dtype, op)
        pg.all_reduce(array, op)
        want = expected_reduction([contribution(r, count, dtype, op) for r in range(pg.size)], op, pg.size)
        check_close(failures, f"all_reduce {op.name} {dtype} x{count}", array, want, dtype)
        digests.append(hashlib.sha1(array.tobytes()).hexdigest())
    scalar = np.array(pg.rank + 1.0)
    pg.all_reduce(scalar)
    if scalar != pg.size * (pg.size + 1) / 2:
        failures.append(f"0-d all_reduce gave {scalar}")
    pg.shutdown()
    return failures, digests


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_all_reduce_every_op_dtype_and_size(world_size):
    results = run_workers(all_reduce_worker, world_size, timeout=100)
    for rank, (failures, _) in enumerate(results):
        assert failures == [], f"rank {rank}: {failures}"
    digests = [d for _, d in results]
    assert all(d == digests[0] for d in digests), "ranks disagree bit-for-bit"


def other_collectives_worker():
    pg, _ = make_group()
    n, r = pg.size, pg.rank
    failures = []
    for count in COUNTS + [BIG_COUNT]:
        for dtype in DTYPES if count != BIG_COUNT else ["float32"]:
            for src in range(n):
                array = contribution(r, count, dtype, ReduceOp.SUM, salt=1)
                pg.broadcast(array, src)
                want = contribution(src, count, dtype, ReduceOp.SUM, salt=1)
                if not np.array_equal(array, want):
                    failures.append(f"broadcast src {src} {dtype} x{count}")
            gathered = np.empty((n, count), dtype)
            pg.all_gather(gathered, contribution(r, count, dtype, ReduceOp.SUM, salt=2))
            for k in range(n):
                if not np.array_equal(gathered[k], contribution(k, count, dtype, ReduceOp.SUM, salt=2)):
                    failures.append(f"all_gather block {k} {dtype} x{count}")
            for op in OPS if count < BIG_COUNT else [ReduceOp.SUM]:
                inputs = [contribution(k, count * n, dtype, op, salt=3) for k in range(n)]
                out = np.empty(count, dtype)
                pg.reduce_scatter(out, inputs[r].copy(), op)
                want = expected_reduction(inputs, op, n)[r * count : (r + 1) * count]
                check_close(failures, f"reduce_scatter {op.name} {dtype} x{count}", out, want, dtype)
    pg.barrier()
    pg.shutdown()
    return failures


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_broadcast_all_gather_reduce_scatter(world_size):
    for rank, failures in enumerate(run_workers(other_collectives_worker, world_size, timeout=100)):
        assert failures == [], f"rank {rank}: {failures}"


def send_recv_worker():
    pg, _ = make_group()
    n, r = pg.size, pg.rank
    received = np.empty(BIG_COUNT, np.float32)
    mine = np.full(BIG_COUNT, r, np.float32)
    # even ranks send first, odd ranks receive first: large messages cannot deadlock
    for phase in (0, 1):
        if (r % 2 == 0) == (phase == 0):
            if r + 1 < n:
                pg.send(mine, r + 1)
        elif r > 0:
            pg.recv(received, r - 1)
    pg.barrier()
    pg.shutdown()
    return float(received[0]) if r > 0 else None, float(received[-1]) if r > 0 else None


@pytest.mark.timeout(60)
def test_send_recv_along_a_chain():
    results = run_workers(send_recv_worker, 3, timeout=50)
    assert results == [(None, None), (0.0, 0.0), (1.0, 1.0)]


def async_worker():
    pg, _ = make_group()
    n, r = pg.size, pg.rank
    arrays = [np.full(1 + 4000 * (i % 7), i + r, np.float64) for i in range(60)]
    works = [pg.all_reduce(a, sync_op=False) for a in arrays]
    # order-dependent chain on one buffer: only issue order gives the expected value
    chain = np.full(1000, float(r + 1))
    chain_works = [
        pg.all_reduce(chain, sync_op=False),
        pg.broadcast(chain, 1, sync_op=False),
        pg.all_reduce(chain, ReduceOp.MAX, sync_op=False),
    ]
    order_ok = True
    for k in reversed(range(len(works))):
        works[k].wait()
        order_ok &= all(w.is_completed() for w in works[:k])
    synchronous = np.ones(10)
    pg.all_reduce(synchronous)  # runs after everything queued before it
    order_ok &= all(w.is_completed() for w in chain_works)
    values_ok = all(np.all(a == n * i + n * (n - 1) / 2) for i, a in enumerate(arrays))
    pg.shutdown()
    return order_ok, values_ok, float(chain[0]), float(synchronous[0])


@pytest.mark.timeout(60)
def test_many_async_collectives_complete_in_issue_order():
    for order_ok, values_ok, chain, synchronous in run_workers(async_worker, 3, timeout=50):
        assert order_ok and values_ok
        assert chain == 6.0  # sum 1+2+3 everywhere, broadcast keeps 6, max keeps 6
        assert synchronous == 3.0


def slow_peer_worker():
    pg, _ = make_group()
    if pg.rank == 1:
        time.sleep(1.5)
        pg.all_reduce(np.ones(4))
        return None
    work = pg.all_reduce(np.ones(4), sync_op=False)
    try:
        work.wait(timeout=0.01)
        early = "completed"
    except RuntimeError as error:
        early = str(error)
    work.wait()
    return early, work.is_completed()


@pytest.mark.timeout(60)
def test_work_wait_with_a_short_timeout_raises_then_completes():
    early, completed = run_workers(slow_peer_worker, 2, timeout=50)[0]
    assert "did not complete within 0.01 s" in early
    assert completed


def killed_peer_worker():
    pg, _ = make_group(timeout=120)
    pg.barrier()
    if pg.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        pg.all_reduce(np.ones(1 << 20, np.float32))
    except RuntimeError as error:
        first = str(error)
    try:
        pg.all_reduce(np.ones(4))
    except RuntimeError as error:
        second = str(error)
    return first, second


@pytest.mark.timeout(60)
def test_killed_peer_fails_fast_with_a_named_error():
    outcomes = run_workers_outcomes(killed_peer_worker, 3, timeout=50)
    assert outcomes[1].exitcode == -signal.SIGKILL
    for rank in (0, 2):
        assert outcomes[rank].ok, outcomes[rank].error
        first, second = outcomes[rank].value
        # a lost connection, not the 120 s timeout, ends the collective
        assert "gloo all_reduce on group 'test'" in first and f"at rank {rank}" in first
        assert "lost the connection to rank" in first
        assert "unusable after an earlier failure" in second


def silent_peer_worker():
    pg, _ = make_group()  # set-up under load may take a while; the all-reduce alone gets 0.5 s
    pg.timeout = 0.5
    if pg.rank == 1:
        time.sleep(1.5)
        return None
    try:
        pg.all_reduce(np.ones(8))
    except RuntimeError as error:
        return str(error)
    return "no error"


@pytest.mark.timeout(60)
def test_peer_that_never_arrives_raises_after_the_timeout():
    message = run_workers(silent_peer_worker, 2, timeout=50)[0]
    assert "gloo all_reduce on group 'test' at rank 0: timed out waiting for rank 1" in message


def absent_peer_worker():
    if os.environ["PADDLE_TRAINER_ID"] == "1":
        time.sleep(1.0)
        return None
    try:
        make_group(timeout=0.5)
    except RuntimeError as error:
        return str(error)
    return "no error"


@pytest.mark.timeout(60)
def test_group_creation_names_the_rank_that_never_came():
    message = run_workers(absent_peer_worker, 2, timeout=50)[0]
    assert "gloo connect on group 'test' at rank 0: rank 1 did not publish its address" in message


def test_single_rank_group_and_argument_checks():
    pg = GlooProcessGroup(None, 0, 1, name="solo", timeout=5)
    array = np.arange(6.0)
    pg.all_reduce(array, ReduceOp.AVG)
    assert np.array_equal(array, np.arange(6.0))
    with pytest.raises(TypeError):
        pg.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match="C-contiguous"):
        pg.all_reduce(np.ones((4, 4))[:, 1])
    with pytest.raises(ValueError, match="reduce op"):
        pg.all_reduce(array, op=17)
    with pytest.raises(ValueError, match="src"):
        pg.broadcast(array, src=1)
    with pytest.raises(ValueError, match="out_array"):
        pg.all_gather(np.empty((2, 6)), array)
    with pytest.raises(ValueError, match="itself"):
        pg.send(array, 0)
    pg.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pg.all_reduce(array)


def failing_worker():
    raise ValueError("boom from a worker")


@pytest.mark.timeout(60)
def test_run_workers_reports_a_failing_rank_with_its_traceback():
    with pytest.raises(WorkerFailure, match="boom from a worker"):
        run_workers(failing_worker, 2, timeout=30)


def test_every_public_operation_is_issued_once_as_a_described_collective(monkeypatch):
    pg = GlooProcessGroup(None, 0, 1, name="solo", timeout=5)
    issued = []
    issue = pg._issue

    def recording_issue(call, run, sync_op):
        issued.append(call)
        return issue(call, run, sync_op)

    monkeypatch.setattr(pg, "_issue", recording_issue)
    data = np.arange(6, dtype=np.float32)
    pg.all_reduce(data, ReduceOp.MAX)
    pg.broadcast(data, 0, sync_op=False).wait()
    pg.all_gather(np.empty((1, 6), np.float32), data)
    pg.reduce_scatter(np.empty(6, np.float32), data.copy(), ReduceOp.AVG)
    pg.barrier(timeout=2)
    pg.shutdown()
    f32 = np.dtype(np.float32)
    assert issued == [
        Collective("all_reduce", f32, 6, 5.0, reduce_op=ReduceOp.MAX),
        Collective("broadcast", f32, 6, 5.0, root=0),
        Collective("all_gather", f32, 6, 5.0),
        Collective("reduce_scatter", f32, 6, 5.0, reduce_op=ReduceOp.AVG),
        Collective("barrier", None, 0, 2.0),
    ]


def tensor_operands_worker():
    import minidp

    pg, _ = make_group()
    r = pg.rank
    summed = minidp.to_tensor(np.full(3, r + 1.0, np.float32))
    pg.all_reduce(summed)
    maximum = minidp.to_tensor(np.array([r, -r], np.int64))
    pg.all_reduce(maximum, ReduceOp.MAX, sync_op=False).wait()
    broadcast = minidp.to_tensor(np.full(2, float(r)))
    pg.broadcast(broadcast, 1)
    gathered = minidp.zeros([pg.size, 2], "float32")
    pg.all_gather(gathered, minidp.to_tensor(np.array([r, 10 * r], np.float32)))
    scattered = minidp.zeros([2], "float64")
    pg.reduce_scatter(scattered, minidp.to_tensor(np.arange(2.0 * pg.size) + r))
    token = minidp.zeros([3], "int32")
    if r == 0:
        pg.send(minidp.to_tensor(np.array([4, 5, 6], np.int32)), 1)
    else:
        pg.recv(token, 0)
    pg.shutdown()
    return {
        name: tensor.numpy().tolist()
        for name, tensor in [
            ("sum", summed),
            ("max", maximum),
            ("broadcast", broadcast),
            ("gather", gathered),
            ("scatter", scattered),
            ("token", token),
        ]
    }


@pytest.mark.timeout(60)
def test_process_group_collectives_take_minidp_tensors_in_place():
    results = run_workers(tensor_operands_worker, 2, timeout=50)
    for rank, got in enumerate(results):
        assert got["sum"] == [3.0] * 3
        assert got["max"] == [1, 0]
        assert got["broadcast"] == [1.0, 1.0]
        assert got["gather"] == [[0.0, 0.0], [1.0, 10.0]]
        assert got["scatter"] == [1.0 + 4 * rank, 3.0 + 4 * rank]
        assert got["token"] == ([0, 0, 0] if rank == 0 else [4, 5, 6])


def every_op_and_dtype_worker():
    pg, _ = make_group()
    failures = check_every_op_and_dtype(pg)
    pg.shutdown()
    return failures


@pytest.mark.timeout(60)
def test_every_reduce_op_on_every_dtype_including_bfloat16_and_uint8():
    for rank, failures in enumerate(run_workers(every_op_and_dtype_worker, 2, timeout=50)):
        assert failures == [], f"rank {rank}: {failures}"


def mismatch_worker():
    rank, size = int(os.environ["PADDLE_TRAINER_ID"]), int(os.environ["PADDLE_TRAINERS_NUM"])
    store = TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), is_master=rank == 0, timeout=30)
    names = iter(range(100))
    report = run_mismatch_cases(lambda: GlooProcessGroup(store, rank, size, name=f"case{next(names)}", timeout=30))
    GlooProcessGroup(store, rank, size, name="done", timeout=30).barrier()  # store outlives all
    return report


@pytest.mark.timeout(90)
@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_that_issue_different_operations_all_raise_naming_both(world_size):
    check_mismatch_reports(run_workers(mismatch_worker, world_size, timeout=80))


def test_fingerprints_round_trip_describe_themselves_and_pair_sends_with_receives():
    bf16 = np.dtype(ml_dtypes.bfloat16)
    reduce = Fingerprint.of(Collective("all_reduce", bf16, 1000, 5.0, reduce_op=ReduceOp.AVG), 12)
    barrier = Fingerprint.of(Collective("barrier", None, 0, 5.0), 12)
    send = Fingerprint.of(Collective("send", np.dtype(np.int64), 5, 5.0, root=1), 3)
    for fingerprint in (reduce, barrier, send):
        encoded = fingerprint.encode()
        assert len(encoded) == Fingerprint.SIZE
        assert Fingerprint.decode(encoded) == fingerprint
    assert str(reduce) == "all_reduce AVG bfloat16[1000] (#12)"
    assert str(barrier) == "barrier (#12)"
    assert str(send) == "send int64[5] to rank 1 (#3)"
    receive = Fingerprint.of(Collective("recv", np.dtype(np.int64), 5, 5.0, root=0), 3)
    assert send.counterpart(0) == receive and receive.counterpart(1) == send
    assert reduce.counterpart(0) == reduce
    garbage = Fingerprint.decode(bytes(range(200, 256)) + bytes(Fingerprint.SIZE - 56))
    assert isinstance(str(garbage), str)


def silent_client_worker():
    """Rank 0 opens a connection to rank 1's set-up listener that never says a word, then
    creates the group: rank 1 must accept rank 0 all the same."""
    import socket

    rank, size = int(os.environ["PADDLE_TRAINER_ID"]), int(os.environ["PADDLE_TRAINERS_NUM"])
    store = TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), is_master=rank == 0, timeout=30)
    silent = None
    if rank == 0:
        host, _, port = store.get("gloo/silent/1/addr/1", timeout=30).decode().rpartition(":")
        silent = socket.create_connection((host, int(port)), timeout=30)
    group = GlooProcessGroup(store, rank, size, name="silent", timeout=30)
    array = np.full(3, rank + 1.0)
    group.all_reduce(array)
    group.barrier()
    group.shutdown()
    if silent is not None:
        silent.close()
    return array.tolist()


@pytest.mark.timeout(60)
def test_a_silent_connection_to_the_set_up_listener_does_not_hold_up_the_real_peer():
    assert run_workers(silent_client_worker, 2, timeout=50) == [[3.0, 3.0, 3.0]] * 2


@pytest.mark.timeout(30)
def test_a_group_whose_peer_never_comes_names_the_silent_connection_it_dropped():
    """Rank 1 of two, alone: a client connects and says nothing; at the group timeout the error
    names both the missing rank and the connection dropped for want of a greeting."""
    import socket
    import threading

    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=20)
    connected = threading.Event()
    clients = []

    def connect_silently():
        client = TCPStore("127.0.0.1", store.port, is_master=False, timeout=20)
        host, _, port = client.get("gloo/alone/1/addr/1", timeout=20).decode().rpartition(":")
        client.close()
        clients.append(socket.create_connection((host, int(port)), timeout=20))
        connected.set()

    thread = threading.Thread(target=connect_silently, daemon=True)
    thread.start()
    try:
        with pytest.raises(RuntimeError) as raised:
            GlooProcessGroup(store, 1, 2, name="alone", timeout=2)
        thread.join(20)
        assert connected.is_set()
        message = str(raised.value)
        assert "rank 0 did not connect within 2 s" in message, message
        assert "dropped meanwhile: 127.0.0.1:" in message and "(no greeting)" in message, message
    finally:
        for client in clients:
            client.close()
        store.close()
