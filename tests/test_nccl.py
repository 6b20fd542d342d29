"""The nccl backend's Python logic, run without a GPU against the stand-in of nccl_standin.py.

Ranks are threads sharing NumPy "device" memory; each gets its own store client and stand-in
runtime. Only ``CupyRuntime`` (the real CUDA and NCCL calls) stays out of reach here; it runs
in tests/test_gpu.py on machines with GPUs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minidp
from dist_utils import run_workers
from minidp.core import backend
from minidp.core.distributed.backends import GroupSpec, ReduceOp
from minidp.core.distributed.backends.base import Collective, Fingerprint
from minidp.distributed.backends import nccl
from minidp.distributed.backends.flight_recorder import RECORD_LENGTH, compare_records, decode_record
from minidp.core.distributed.store import TCPStore
from nccl_standin import DeviceArray, StandinNcclError, StandinRuntime, World, device_array
from reduce_cases import check_every_op_and_dtype

pytestmark = pytest.mark.timeout(60)


# --- harness ---------------------------------------------------------------------------------


class Job:
    """A store and one stand-in runtime per rank; ``groups`` builds a group on given ranks."""

    def __init__(self, size: int, tuple_ids: bool = False) -> None:
        self.size = size
        self.world = World()
        self.master = TCPStore("127.0.0.1", 0, is_master=True, timeout=10)
        self.stores = [TCPStore("127.0.0.1", self.master.port, timeout=10) for _ in range(size)]
        self.runtimes = [StandinRuntime(self.world, tuple_ids) for _ in range(size)]
        self.built = []

    def groups(self, ranks=None, timeout: float = 10.0, name: str = "default"):
        members = tuple(range(self.size)) if ranks is None else tuple(ranks)
        groups = [
            nccl.create_process_group(
                GroupSpec(name=name, global_ranks=members, global_rank=rank, timeout=timeout, store=self.stores[rank]),
                runtime=self.runtimes[rank],
            )
            for rank in range(self.size)
        ]
        self.built += [group for group in groups if group is not None]
        return groups

    def close(self) -> None:
        for group in self.built:  # the watchdogs of groups a test left running
            if group._watchdog is not None:
                group._watchdog.stop()
        for runtime in self.runtimes:
            runtime.stop()
        for store in self.stores:
            store.close()
        self.master.close()


@pytest.fixture
def job_of():
    jobs = []

    def make(size: int, tuple_ids: bool = False) -> Job:
        jobs.append(Job(size, tuple_ids))
        return jobs[-1]

    yield make
    for job in jobs:
        job.close()


def in_threads(groups, body, timeout: float = 30.0) -> list:
    """``body(group)`` for every group at once, one thread each; the results in rank order."""
    results, errors = [None] * len(groups), [None] * len(groups)

    def target(index: int) -> None:
        try:
            results[index] = body(groups[index])
        except BaseException as error:  # re-raised in the test's thread
            errors[index] = error

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(len(groups))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "a rank did not finish"
    for error in errors:
        if error is not None:
            raise error
    return results


def connect(groups) -> None:
    """Run a first collective on every rank, so that the communicators exist."""
    in_threads(groups, lambda g: g.all_reduce(device_array([0.0], "float32")))


# --- the unique id ---------------------------------------------------------------------------


def test_unique_id_is_normalised_from_bytes_and_from_signed_or_unsigned_ints():
    raw = bytes(range(128))
    signed = tuple(b - 256 if b > 127 else b for b in raw)
    assert nccl.normalize_unique_id(raw) == raw
    assert nccl.normalize_unique_id(bytearray(raw)) == raw
    assert nccl.normalize_unique_id(signed) == raw
    assert nccl.normalize_unique_id(list(raw)) == raw
    assert nccl.unique_id_argument(raw, as_tuple=False) == raw
    assert nccl.unique_id_argument(raw, as_tuple=True) == signed
    with pytest.raises(ValueError, match="128 bytes"):
        nccl.normalize_unique_id(raw[:64])
    with pytest.raises(ValueError, match="byte values"):
        nccl.normalize_unique_id((300,) + signed[1:])


@pytest.mark.parametrize("tuple_ids", [False, True], ids=["bytes-ids", "tuple-ids"])
@pytest.mark.parametrize("size", [2, 3])
def test_rank_0_id_reaches_every_rank_through_the_store(job_of, size, tuple_ids):
    job = job_of(size, tuple_ids)
    groups = job.groups()
    assert [r.unique_id_calls for r in job.runtimes] == [1] + [0] * (size - 1)
    assert all(not r.communicators for r in job.runtimes), "the communicator is made lazily"
    sums = in_threads(groups, lambda g: _all_reduce_rank(g))
    ids = {r.communicators[0].unique_id for r in job.runtimes}
    assert len(ids) == 1
    assert all(len(r.communicators) == 1 for r in job.runtimes)
    assert sums == [sum(range(1, size + 1))] * size


def _all_reduce_rank(group) -> float:
    x = device_array([group.rank + 1.0], "float32")
    group.all_reduce(x)
    return float(x[0])


def test_subgroup_id_comes_from_its_first_member_and_non_members_get_none(job_of):
    job = job_of(3)
    groups = job.groups(ranks=(1, 2), name="group_1")
    assert groups[0] is None
    assert [r.unique_id_calls for r in job.runtimes] == [0, 1, 0]
    assert job.runtimes[0].calls == []
    assert in_threads(groups[1:], _all_reduce_rank) == [3.0, 3.0]
    assert groups[1].describe("all_reduce") == "nccl all_reduce on group 'group_1' at rank 0 (global 1)"


def test_reinitialising_a_group_name_gets_a_fresh_id(job_of):
    job = job_of(2)
    first = job.groups()
    in_threads(first, _all_reduce_rank)
    for group in first:
        group.shutdown()
    second = job.groups()
    assert in_threads(second, _all_reduce_rank) == [3.0, 3.0]
    assert job.runtimes[0].communicators[0].unique_id != job.runtimes[0].communicators[1].unique_id


class ThreadMpiComm:
    """``Bcast`` semantics of an mpi4py communicator, for ranks that are threads."""

    def __init__(self, shared: dict, rank: int) -> None:
        self.shared = shared
        self.rank = rank

    def Bcast(self, buffer: np.ndarray, root: int = 0) -> None:
        barrier = self.shared["barrier"]
        if self.rank == root:
            self.shared["data"] = buffer.copy()
        barrier.wait()
        buffer[:] = self.shared["data"]
        barrier.wait()


@pytest.mark.parametrize("members", [(0, 1), (0, 1, 2), (1, 2)], ids=str)
def test_id_travels_over_mpi_bcast_when_there_is_no_store(members):
    world_size = max(3, len(members))
    world = World()
    shared = {"barrier": threading.Barrier(world_size)}
    runtimes = [StandinRuntime(world) for _ in range(world_size)]
    try:

        def build(rank: int):
            spec = GroupSpec(name="g", global_ranks=members, global_rank=rank, timeout=10)
            return nccl.create_process_group(spec, runtime=runtimes[rank], mpi_comm=ThreadMpiComm(shared, rank))

        groups = in_threads(list(range(world_size)), build)
        assert [g is None for g in groups] == [r not in members for r in range(world_size)]
        assert [r.unique_id_calls for r in runtimes] == [int(r == members[0]) for r in range(world_size)]
        member_groups = [groups[r] for r in members]
        total = sum(range(1, len(members) + 1))
        assert in_threads(member_groups, _all_reduce_rank) == [float(total)] * len(members)
        assert len({runtimes[r].communicators[0].unique_id for r in members}) == 1
        watchdogs = [group._watchdog for group in member_groups]
        assert all(watchdog.store is None for watchdog in watchdogs), "no store to watch"
        in_threads(member_groups, lambda g: g.shutdown())
        assert not any(watchdog._thread.is_alive() for watchdog in watchdogs)
    finally:
        for runtime in runtimes:
            runtime.stop()


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    import shutil

    return shutil.which("mpiexec") or shutil.which("mpirun")


@pytest.mark.mpi
def test_id_travels_over_real_mpi_under_mpiexec(tmp_path):
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install 'minidp[mpi]')")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec/mpirun found next to python or on PATH")
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        sys.path.insert(0, sys.argv[2])
        from minidp.core.distributed.backends import GroupSpec
        from minidp.distributed.backends import nccl
        from nccl_standin import StandinRuntime, World
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        runtime = StandinRuntime(World(), tuple_ids=True)
        spec = GroupSpec(name="g", global_ranks=(1, 0), global_rank=rank, timeout=10)
        group = nccl.create_process_group(spec, runtime=runtime)
        report = f"{group.rank} {group._unique_id.hex()} {runtime.unique_id_calls}"
        Path(sys.argv[1], f"rank{rank}.txt").write_text(f"{report} {'cupy' in sys.modules}")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "MASTER_", "OMPI_", "PMI_"))}
    command = [mpiexec, "-n", "2", sys.executable, "-c", script, str(tmp_path), str(Path(__file__).parent)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert [r[0] for r in reports] == ["1", "0"]
    assert reports[0][1] == reports[1][1] and len(bytes.fromhex(reports[0][1])) == 128
    assert [r[2:] for r in reports] == [["0", "False"], ["1", "False"]]


def test_an_id_that_never_arrives_is_reported(job_of):
    job = job_of(2)
    spec = GroupSpec(name="default", global_ranks=(0, 1), global_rank=1, timeout=0.2, store=job.stores[1])
    with pytest.raises(RuntimeError, match="rank 1: the NCCL id from rank 0 did not arrive"):
        nccl.create_process_group(spec, runtime=job.runtimes[1])


def test_a_group_without_store_outside_mpirun_is_refused(monkeypatch):
    for name in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(name, raising=False)
    spec = GroupSpec(name="lonely", global_ranks=(0, 1), global_rank=0, timeout=5)
    with pytest.raises(RuntimeError, match="rank 0: .*group 'lonely' has none.*mpirun"):
        nccl.create_process_group(spec, runtime=StandinRuntime(World()))


def test_mpirun_without_mpi4py_is_explained(monkeypatch):
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    spec = GroupSpec(name="default", global_ranks=(0, 1), global_rank=0, timeout=5)
    with pytest.raises(RuntimeError, match="rank 0: sharing the NCCL id under mpirun needs mpi4py"):
        nccl.create_process_group(spec, runtime=StandinRuntime(World()))


@pytest.mark.skipif(backend.is_compiled_with_cuda(), reason="a CUDA device is visible here")
def test_without_a_device_the_factory_says_so():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    try:
        spec = GroupSpec(name="default", global_ranks=(0, 1), global_rank=1, timeout=5, store=master)
        with pytest.raises(RuntimeError, match="rank 1: the nccl backend needs a CUDA device"):
            nccl.create_process_group(spec)
        assert master.num_keys() == 0
    finally:
        master.close()


def test_importing_the_backend_does_not_import_cupy():
    code = "import sys, minidp.distributed.backends.nccl; print('cupy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


# --- collectives against NumPy -----------------------------------------------------------------


def _collectives(group) -> dict:
    rank, size = group.rank, group.size
    out = {}
    for op in ReduceOp:
        for dtype in ("float32", "float64", "int64"):
            x = device_array(np.arange(5) * (rank + 1) + rank, dtype)
            group.all_reduce(x, op)
            out[f"all_reduce {op.name} {dtype}"] = np.asarray(x)
    flags = device_array([rank == 0, False, True], "bool")
    group.all_reduce(flags, ReduceOp.SUM)
    out["all_reduce bool"] = np.asarray(flags)
    b = device_array(np.full(4, rank, "float32"))
    group.broadcast(b, src=size - 1)
    out["broadcast"] = np.asarray(b)
    gathered = device_array(np.zeros((size, 2, 2), "int32"))
    group.all_gather(gathered, device_array(np.full((2, 2), rank, "int32")))
    out["all_gather"] = np.asarray(gathered)
    for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX):
        scattered = device_array(np.zeros(3, "float32"))
        group.reduce_scatter(scattered, device_array(np.arange(3 * size, dtype="float32") + rank), op)
        out[f"reduce_scatter {op.name}"] = np.asarray(scattered)
    empty = device_array(np.zeros(0, "float32"))
    group.all_reduce(empty)
    group.broadcast(empty, 0)
    group.reduce_scatter(empty, device_array(np.zeros(0, "float32")))
    token = device_array(np.zeros(3, "int32"))
    if rank == 0:
        group.send(device_array([7, 8, 9], "int32"), dst=1)
    elif rank == 1:
        group.recv(token, src=0)
    out["recv"] = np.asarray(token)
    works = [group.all_reduce(device_array(np.full(100, i + rank, "float64")), sync_op=False) for i in range(8)]
    out["async"] = [w.wait() for w in works]
    group.barrier()
    return out


def _reference(size: int) -> dict:
    reduce = {
        ReduceOp.SUM: np.sum,
        ReduceOp.AVG: np.sum,
        ReduceOp.MAX: np.max,
        ReduceOp.MIN: np.min,
        ReduceOp.PROD: np.prod,
    }
    out = {}
    for op in ReduceOp:
        for dtype in ("float32", "float64", "int64"):
            stacked = np.stack([(np.arange(5) * (r + 1) + r).astype(dtype) for r in range(size)])
            value = reduce[op](stacked, axis=0).astype(dtype)
            if op == ReduceOp.AVG:
                value = value / size if dtype != "int64" else value // size
            out[f"all_reduce {op.name} {dtype}"] = value.astype(dtype)
    out["all_reduce bool"] = np.array([True, False, True])
    out["broadcast"] = np.full(4, size - 1, "float32")
    out["all_gather"] = np.stack([np.full((2, 2), r, "int32") for r in range(size)])
    return out


@pytest.mark.parametrize("size", [2, 3])
def test_collectives_match_numpy(job_of, size):
    job = job_of(size)
    results = in_threads(job.groups(), _collectives)
    reference = _reference(size)
    inputs = np.stack([np.arange(3 * size, dtype="float32") + r for r in range(size)])
    for rank, got in enumerate(results):
        for key, wanted in reference.items():
            np.testing.assert_array_equal(got[key], wanted, err_msg=f"rank {rank}: {key}")
        block = slice(3 * rank, 3 * rank + 3)
        np.testing.assert_array_equal(got["reduce_scatter SUM"], inputs[:, block].sum(0))
        np.testing.assert_allclose(got["reduce_scatter AVG"], inputs[:, block].sum(0) / size)
        np.testing.assert_array_equal(got["reduce_scatter MAX"], inputs[:, block].max(0))
        np.testing.assert_array_equal(got["recv"], [7, 8, 9] if rank == 1 else [0, 0, 0])
        assert got["async"] == [True] * 8


def test_every_reduce_op_on_every_dtype_including_bfloat16(job_of):
    job = job_of(2)
    results = in_threads(
        job.groups(), lambda g: check_every_op_and_dtype(g, to_device=lambda a: a.view(DeviceArray), to_host=np.asarray)
    )
    for rank, failures in enumerate(results):
        assert failures == [], f"rank {rank}: {failures}"


def test_numpy_arrays_and_host_tensors_are_staged_and_complete_before_returning(job_of):
    job = job_of(2)

    def body(group):
        x = np.full(3, group.rank + 1.0, "float32")
        work = group.all_reduce(x, sync_op=False)
        done = work.is_completed()
        gathered = np.zeros((2, 2), "int64")
        group.all_gather(gathered, np.array([group.rank, 10], "int64"))
        tensor = minidp.to_tensor(np.array([group.rank, 5.0]))
        group.all_reduce(tensor, ReduceOp.MAX)
        return x, done, gathered, tensor.numpy()

    for x, done, gathered, tensor in in_threads(job.groups(), body):
        np.testing.assert_array_equal(x, [3.0, 3.0, 3.0])
        assert done
        np.testing.assert_array_equal(gathered, [[0, 10], [1, 10]])
        np.testing.assert_array_equal(tensor, [1.0, 5.0])
    calls = job.runtimes[0].calls
    assert ("to_device", "nccl1") in calls and ("to_host",) in calls


# --- streams, events and ordering ----------------------------------------------------------


def test_nccl_stream_waits_for_an_event_of_the_producing_stream_before_each_call(job_of):
    job = job_of(2)
    groups = job.groups()
    connect(groups)
    for runtime in job.runtimes:
        runtime.calls.clear()
    in_threads(groups, lambda g: g.all_reduce(device_array([1.0, 2.0]), ReduceOp.AVG))
    calls = job.runtimes[0].calls
    kinds = [call[0] for call in calls]
    assert kinds == ["record", "wait_event", "allReduce", "record"], calls
    produced, waited = calls[0], calls[1]
    assert produced[2] == "compute", "the ready event is recorded on the producing stream"
    assert waited[1:] == ("nccl1", produced[1]), "the NCCL stream waits for that event"
    assert calls[2] == ("allReduce", "nccl1", nccl.NCCL_AVG), "AVG is NCCL's own ncclAvg"
    assert calls[3][2] == "nccl1", "completion is recorded on the NCCL stream after the call"


def test_async_collective_runs_after_the_producing_stream_and_wait_follows_the_event(job_of):
    job = job_of(2)
    groups = job.groups()
    connect(groups)
    gate = threading.Event()
    buffers = [device_array(np.zeros(4, "float32")) for _ in groups]
    for rank, runtime in enumerate(job.runtimes):  # a "kernel" still running on the GPU

        def kernel(buffer=buffers[rank], value=rank + 1.0):
            gate.wait(10)
            buffer[:] = value

        runtime.compute.enqueue(kernel)

    started = time.monotonic()
    works = in_threads(groups, lambda g: g.all_reduce(buffers[g.rank], sync_op=False))
    assert time.monotonic() - started < 5, "issuing must not block the host"
    assert not any(w.is_completed() for w in works)
    with pytest.raises(RuntimeError, match="did not complete within 0.05 s"):
        works[0].wait(timeout=0.05)
    gate.set()
    assert all(w.wait() for w in works)
    for buffer in buffers:
        np.testing.assert_array_equal(buffer, [3.0] * 4)
    assert all(r.communicators[0].aborted is False for r in job.runtimes)


def test_operations_are_issued_on_the_group_device_whatever_device_is_current(job_of):
    job = job_of(2)
    groups = job.groups()
    connect(groups)
    created = []
    for runtime in job.runtimes:
        runtime.current = 1  # set_device after the first collective, or another thread's device
        new_event = runtime.new_event

        def recording_new_event(new_event=new_event):
            created.append(new_event())
            return created[-1]

        runtime.new_event = recording_new_event
    in_threads(groups, lambda g: g.all_reduce(device_array([1.0, 2.0]), sync_op=False).wait())
    assert len(created) == 4 and all(event.device == 0 for event in created)
    assert [runtime.current for runtime in job.runtimes] == [1, 1], "the caller's device returns"


# --- failures ------------------------------------------------------------------------------


def test_timeout_aborts_the_communicator_and_names_rank_and_operation(job_of):
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    earlier = groups[0].all_reduce(device_array([2.0]), sync_op=False)  # rank 1 never joins
    with pytest.raises(RuntimeError) as caught:
        groups[0].barrier(timeout=0.5)  # times out long before ``earlier``
    message = str(caught.value)
    assert "nccl barrier on group 'default' at rank 0" in message
    assert "timed out" in message and "aborted" in message
    # rank 1 issued nothing more, but its watchdog published its record
    assert "rank 1 is behind (its last: all_reduce SUM float32[1] (#1))" in message
    assert "rank 0 at #3, rank 1 at #1" in message
    assert job.runtimes[0].communicators[0].aborted
    assert ("abort",) in job.runtimes[0].calls
    with pytest.raises(RuntimeError, match="all_reduce .* unusable after an earlier failure"):
        earlier.wait()
    with pytest.raises(RuntimeError, match="unusable after an earlier failure"):
        groups[0].all_gather(device_array(np.zeros((2, 1))), device_array([1.0]))
    groups[0].shutdown()  # returns: the failed work is logged, not raised


def test_issuing_calls_never_overlap_nor_do_error_checks_and_abort(job_of):
    """NCCL lets check_async_error and abort run beside an issuing call (the abort unblocks it),
    but two issuing calls, or two of those, must never be inside the communicator at once."""
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)
    group = groups[0]
    first = group.all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins

    def issue_many() -> None:
        for _ in range(60):
            try:
                group.all_reduce(device_array([1.0]), sync_op=False)
            except RuntimeError:  # the group failed: the timeout aborted it
                return

    issuers = [threading.Thread(target=issue_many, daemon=True) for _ in range(2)]
    for thread in issuers:
        thread.start()
    with pytest.raises(RuntimeError, match="timed out"):
        first.wait()  # polls check_async_error, then aborts, while the issuers issue
    for thread in issuers:
        thread.join(10)
    communicator = job.runtimes[0].communicators[0]
    assert communicator.aborted
    assert communicator.overlaps == []


def test_an_operation_the_abort_cut_short_fails_though_its_event_then_fires(job_of):
    """Another operation's failure aborts the communicator; the abort ends ``first`` (rank 1
    never joins it), whose event then fires. Its waiter must get the failure, not success."""
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    group = groups[0]
    first = group.all_reduce(device_array([1.0]), sync_op=False)
    second = group.all_reduce(device_array([1.0]), sync_op=False)
    group._fail(second, RuntimeError("the second all-reduce failed"))
    assert job.runtimes[0].communicators[0].aborted
    assert first._event.fired.wait(10)  # the stream went on past the aborted call
    with pytest.raises(RuntimeError, match=r"unusable after an earlier failure \(the second all-reduce failed\)"):
        first.wait()


def test_two_ranks_that_both_send_first_deadlock_and_the_timeout_says_so(job_of):
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)

    def send_then_receive(group):
        peer = 1 - group.rank
        started = time.monotonic()
        try:
            group.send(device_array([group.rank + 1.0]), peer)
            group.recv(device_array([0.0]), peer)
        except RuntimeError as error:
            return str(error), time.monotonic() - started
        return "no error", 0.0

    for rank, (message, waited) in enumerate(in_threads(groups, send_then_receive)):
        assert f"nccl send on group 'default' at rank {rank}: timed out" in message
        assert waited >= 0.4
    # the same exchange in a safe order completes: rank 0 sends first, rank 1 receives first
    job2 = job_of(2)
    groups = job2.groups(timeout=5)

    def ordered(group):
        peer, received = 1 - group.rank, device_array([0.0])
        if group.rank == 0:
            group.send(device_array([1.0]), peer)
            group.recv(received, peer)
        else:
            group.recv(received, peer)
            group.send(device_array([2.0]), peer)
        return float(received[0])

    assert in_threads(groups, ordered) == [2.0, 1.0]


def test_a_call_that_blocks_the_host_is_aborted_at_the_group_timeout(job_of):
    """NCCL's first send to a peer blocks the host until the peer posts its receive, holding the
    issue lock: the watchdog must time it out and abort without waiting for that lock (the abort
    flag is what unblocks the call)."""
    job = job_of(2)
    groups = job.groups(timeout=1)
    connect(groups)
    outcome = []

    def send() -> None:
        try:
            groups[0].send(device_array([1.0]), 1)  # rank 1 never receives
        except RuntimeError as error:
            outcome.append(str(error))

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    sender.join(20)
    assert not sender.is_alive(), "the blocked send was never aborted"
    assert outcome and outcome[0].startswith("nccl send on group 'default' at rank 0: timed out")
    assert "blocked" in outcome[0] and "aborted" in outcome[0]
    assert job.runtimes[0].communicators[0].aborted
    with pytest.raises(RuntimeError, match="unusable after an earlier failure"):
        groups[0].all_reduce(device_array([1.0]))


def test_abort_is_local_and_peers_learn_of_it_through_their_own_timeout(job_of):
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)
    with pytest.raises(RuntimeError, match="rank 0: timed out"):
        groups[0].all_reduce(device_array([1.0]))  # rank 1 is not there yet
    assert job.runtimes[0].communicators[0].aborted
    assert not job.runtimes[1].communicators[0].aborted
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="at rank 1: timed out"):
        groups[1].all_reduce(device_array([1.0]))  # its peer aborted: nothing answers
    assert time.monotonic() - started >= 0.4, "rank 1 learns only through its own timeout"
    assert job.runtimes[1].communicators[0].aborted


def test_a_barrier_that_not_every_rank_enters_times_out(job_of):
    job = job_of(2)
    groups = job.groups()
    connect(groups)
    with pytest.raises(ValueError, match="barrier timeout must be positive"):
        groups[0].barrier(timeout=0)
    with pytest.raises(RuntimeError, match="nccl barrier on group 'default' at rank 0: timed out"):
        groups[0].barrier(timeout=0.2)


def test_a_rank_missing_at_the_first_collective_is_named(job_of):
    job = job_of(3)
    groups = job.groups(timeout=0.5)
    with pytest.raises(RuntimeError, match=r"rank 2 did not reach the group's first collective"):
        in_threads(groups[:2], lambda g: g.all_reduce(device_array([1.0])))


def test_an_asynchronous_nccl_error_aborts_and_raises(job_of):
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    communicator = job.runtimes[0].communicators[0]
    communicator.async_error = StandinNcclError("unhandled system error")
    started = time.monotonic()
    with pytest.raises(RuntimeError) as caught:
        work.wait()
    assert time.monotonic() - started < 5, "an asynchronous error must not wait for the timeout"
    message = str(caught.value)
    assert "nccl all_reduce on group 'default' at rank 0" in message
    assert "asynchronous error" in message and "unhandled system error" in message
    assert communicator.aborted


def test_a_cuda_error_fails_the_group_at_once_naming_rank_and_operation(job_of):
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    assert not work.is_completed()
    job.runtimes[0].inject_cuda_error("cudaErrorIllegalAddress: an illegal memory access was encountered")
    started = time.monotonic()
    with pytest.raises(RuntimeError) as caught:
        work.wait()
    assert time.monotonic() - started < 5, "a CUDA error must not wait for the group timeout"
    message = str(caught.value)
    assert "nccl all_reduce on group 'default' at rank 0: CUDA reported an error" in message
    assert "cudaErrorIllegalAddress" in message and "aborted" in message
    assert job.runtimes[0].communicators[0].aborted
    with pytest.raises(RuntimeError, match="nccl broadcast .* unusable after an earlier failure"):
        groups[0].broadcast(device_array([1.0]), 0)


class FakeCudaRuntimeModule:
    """``cupy.cuda.runtime``'s eventQuery and check_status, answering with a chosen status."""

    def __init__(self, status: int) -> None:
        self.status = status

    def eventQuery(self, pointer: int) -> int:
        return self.status

    def check_status(self, status: int) -> None:
        if status:
            raise RuntimeError(f"cudaError {status}")


def test_cupy_runtime_makes_nccl_connect_peers_at_init_unless_told_otherwise(monkeypatch):
    """Where NCCL connects inside the first collective (NCCL_RUNTIME_CONNECT=1, the default of
    2.22+), that call blocks the host; at init, the store meeting bounds the wait."""
    fake_nccl = SimpleNamespace(available=True, get_version=lambda: 22300)
    fake_cupy = SimpleNamespace(__version__="14.2.0", cuda=SimpleNamespace(nccl=fake_nccl))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", fake_cupy.cuda)
    monkeypatch.setattr(backend, "cuda_device_count", lambda: 1)
    monkeypatch.delenv("NCCL_RUNTIME_CONNECT", raising=False)
    nccl.CupyRuntime("rank 0")
    assert os.environ["NCCL_RUNTIME_CONNECT"] == "0"
    monkeypatch.setenv("NCCL_RUNTIME_CONNECT", "1")
    nccl.CupyRuntime("rank 0")
    assert os.environ["NCCL_RUNTIME_CONNECT"] == "1", "the user's choice is kept"


@pytest.mark.parametrize("status, answer", [(0, True), (600, False), (700, "cudaError 700")])
def test_cupy_runtime_tells_a_pending_event_from_a_cuda_error(status, answer):
    runtime = nccl.CupyRuntime.__new__(nccl.CupyRuntime)
    runtime._cupy = SimpleNamespace(cuda=SimpleNamespace(runtime=FakeCudaRuntimeModule(status)))
    event = SimpleNamespace(ptr=0x1234)
    if isinstance(answer, bool):
        assert runtime.event_done(event) is answer
    else:
        with pytest.raises(RuntimeError, match=answer):
            runtime.event_done(event)


def test_shutdown_finishes_outstanding_work_then_destroys(job_of):
    job = job_of(2)
    groups = job.groups()
    works = in_threads(groups, lambda g: g.all_reduce(device_array(np.ones(8)), sync_op=False))
    in_threads(groups, lambda g: g.shutdown())
    assert all(w.is_completed() for w in works)
    assert all(r.communicators[0].destroyed for r in job.runtimes)
    with pytest.raises(RuntimeError, match="was shut down"):
        groups[0].all_reduce(device_array([1.0]))


def test_bad_arrays_are_refused_before_anything_is_queued(job_of, monkeypatch):
    job = job_of(2)
    group = job.groups()[0]
    with pytest.raises(ValueError, match="C-contiguous"):
        group.all_reduce(device_array(np.zeros((4, 4)))[:, ::2])
    with pytest.raises(TypeError, match="dtype complex64"):
        group.all_reduce(device_array(np.zeros(2, "complex64")))
    with pytest.raises(TypeError, match="moves CuPy arrays"):
        group.all_reduce([1.0, 2.0])
    with pytest.raises(TypeError, match="cannot average bool"):
        group.all_reduce(device_array([True]), ReduceOp.AVG)
    monkeypatch.setattr(job.runtimes[0], "device_of", lambda array: 1)
    with pytest.raises(ValueError, match="lives on gpu:1 but rank 0 communicates on gpu:0"):
        group.broadcast(device_array([1.0]), 0)
    assert job.runtimes[0].communicators == []


# --- start-up: FLAGS_selected_gpus selects the device under nccl --------------------------------


def device_selection_worker():
    """A rank of a job that asks for nccl: record set_device; carry the group over gloo."""
    import minidp.core.backend
    import minidp.distributed as dist
    from minidp.core.distributed.backends import gloo, register_backend

    chosen = []
    minidp.core.backend.is_compiled_with_cuda = lambda: True
    minidp.core.backend.set_device = chosen.append
    register_backend("nccl", gloo.create_process_group)
    group = dist.init_parallel_env()
    dist.barrier()  # rank 0 hosts the store: it must not exit while rank 1 still uses it
    return chosen, group.world_size


def test_init_parallel_env_selects_the_gpu_named_by_flags_selected_gpus():
    results = run_workers(device_selection_worker, 2, env={"PADDLE_DISTRI_BACKEND": "nccl"}, timeout=60)
    assert results == [(["gpu:0"], 2), (["gpu:1"], 2)]


# --- the flight recorder: fingerprints compared through the store --------------------------------
def test_periodic_check_names_both_operations_of_a_mismatch_on_every_rank(job_of, monkeypatch):
    monkeypatch.setenv("MINIDP_NCCL_CHECK_EVERY", "1")
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    errors = [None, None]

    def mismatched(group) -> None:
        started = time.monotonic()
        try:
            if group.rank == 0:
                group.barrier()
            else:
                group.all_reduce(device_array(np.ones(1000, np.float32)))
        except RuntimeError as error:
            errors[group.rank] = (str(error), time.monotonic() - started)

    in_threads(groups, mismatched)
    for rank, (message, seconds) in enumerate(errors):
        assert seconds < 5, "the check must not wait for the group timeout"
        assert f"at rank {rank}" in message
        assert "rank 0 called barrier (#2) while rank 1 called all_reduce SUM float32[1000] (#2)" in message
    issued = [[call for call in runtime.calls if call[0] == "allReduce"] for runtime in job.runtimes]
    assert [len(calls) for calls in issued] == [1, 1], "only connect's all_reduce reached NCCL"


def test_a_timeout_names_the_rank_that_issued_one_collective_fewer(job_of, monkeypatch):
    monkeypatch.delenv("MINIDP_NCCL_CHECK_EVERY", raising=False)
    job = job_of(2)
    groups = job.groups(timeout=1.0)
    connect(groups)  # collective #1
    groups[1].all_reduce(device_array([1.0]), sync_op=False)  # rank 1: #2, then it stops
    groups[0].all_reduce(device_array([1.0]))
    groups[1].shutdown()  # publishes rank 1's record
    with pytest.raises(RuntimeError) as caught:
        groups[0].all_reduce(device_array([1.0]))  # #3: rank 1 never joins
    message = str(caught.value)
    assert "timed out" in message
    assert "rank 1 is behind (its last: all_reduce SUM float64[1] (#2))" in message
    assert "rank 0 at #3, rank 1 at #2" in message


def test_a_mismatch_that_fails_in_nccl_is_named_from_the_flight_records(job_of, monkeypatch):
    monkeypatch.setenv("MINIDP_NCCL_CHECK_EVERY", "0")
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)
    messages = [None, None]

    def mismatched(group) -> None:
        with pytest.raises(RuntimeError) as caught:
            if group.rank == 0:
                group.barrier()
            else:
                group.all_reduce(device_array(np.ones(1000, np.float32)))
        messages[group.rank] = str(caught.value)

    in_threads(groups, mismatched)
    for message in messages:
        assert "asynchronous error" in message
        assert "rank 0 called barrier (#2) while rank 1 called all_reduce SUM float32[1000] (#2)" in message


@pytest.mark.parametrize("every, checked", [("0", []), ("4", [4, 8])])
def test_the_check_touches_the_store_only_every_n_collectives(job_of, monkeypatch, every, checked):
    monkeypatch.setenv("MINIDP_NCCL_CHECK_EVERY", every)
    job = job_of(2)
    groups = job.groups(timeout=30)
    requests = [[], []]
    for rank, store in enumerate(job.stores):

        def counted(*args, _request=store._request, _rank=rank):
            requests[_rank].append(args[0])
            return _request(*args)

        monkeypatch.setattr(store, "_request", counted)
    in_threads(groups, lambda g: [g.all_reduce(device_array([1.0])) for _ in range(9)])
    meeting = 2  # the first collective: set this rank's key, wait for the others'
    per_check = 2 + 2  # set, wait, and get both ranks' fingerprints
    assert [len(r) for r in requests] == [meeting + per_check * len(checked)] * 2
    prefix = groups[0]._prefix
    assert [seq for seq in range(1, 10) if job.master.check([f"{prefix}/fp/{seq}/0"])] == checked


def test_a_bad_check_period_is_refused(job_of, monkeypatch):
    monkeypatch.setenv("MINIDP_NCCL_CHECK_EVERY", "-3")
    job = job_of(2)
    with pytest.raises(ValueError, match="MINIDP_NCCL_CHECK_EVERY='-3' must be a whole number"):
        job.groups()


def test_the_periodic_check_names_a_rank_that_never_reaches_it(job_of, monkeypatch):
    monkeypatch.setenv("MINIDP_NCCL_CHECK_EVERY", "2")
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)
    with pytest.raises(
        RuntimeError,
        match=r"nccl all_reduce on group 'default' at rank 0: rank 1 "
        r"did not reach collective #2 within 0.5 s",
    ):
        groups[0].all_reduce(device_array([1.0]))  # rank 1 never issues it
    assert [call for call in job.runtimes[0].calls if call[0] == "allReduce"] == [
        ("allReduce", "nccl1", nccl.NCCL_SUM)
    ], "the unchecked collective never reached NCCL"


def test_compared_records_name_the_first_difference_else_who_is_behind():
    def record(ops, start=1):
        return [
            Fingerprint.of(
                Collective(op, np.dtype("float32"), 8, 1.0, reduce_op=ReduceOp.SUM)
                if op == "all_reduce"
                else Collective(op, None, 0, 1.0),
                seq,
            )
            for seq, op in enumerate(ops, start)
        ]

    def describe(rank):
        return f"rank {rank}"

    ahead = record(["all_reduce"] * RECORD_LENGTH, start=100)
    assert decode_record(b"".join(f.encode() for f in ahead)) == ahead
    # rank 2 is 90 collectives behind: no number is in every window, and the windows agree
    behind = record(["all_reduce"] * 10, start=1)
    text = compare_records({0: ahead, 1: ahead, 2: behind}, describe)
    assert text.startswith("rank 2 is behind (its last: all_reduce SUM float32[8] (#10))")
    assert "rank 0 at #163, rank 1 at #163, rank 2 at #10" in text
    differing = record(["all_reduce", "barrier", "barrier"])
    text = compare_records({0: record(["all_reduce"] * 3), 1: differing}, describe)
    assert "rank 0 called all_reduce SUM float32[8] (#2) while rank 1 called barrier (#2)" in text
    assert compare_records({0: ahead, 1: ahead}, describe) == ("the ranks' records agree up to collective #163")


def test_a_timeout_keeps_its_message_when_the_store_is_gone(job_of):
    job = job_of(2)
    groups = job.groups(timeout=0.3)
    connect(groups)
    job.stores[0].close()
    with pytest.raises(RuntimeError, match="timed out .* Flight records unavailable"):
        groups[0].all_reduce(device_array([1.0]))  # rank 1 never joins
    groups[0].shutdown()  # publishing fails too, and is only logged


# --- the watchdog: records on request, and the timeout of work nobody waits on -------------------


def test_a_rank_stuck_outside_every_collective_is_named_through_its_watchdog(job_of):
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)  # collective #1
    released = threading.Event()

    def body(group):
        if group.rank == 0:
            released.wait(30)  # the main thread is busy elsewhere: it never issues #2
            return None
        try:
            group.all_reduce(device_array([1.0]))  # #2
        except RuntimeError as error:
            return str(error)
        finally:
            released.set()
        return "no error"

    message = in_threads(groups, body)[1]
    assert "nccl all_reduce on group 'default' at rank 1: timed out" in message
    assert "rank 0 is behind (its last: all_reduce SUM float32[1] (#1))" in message
    assert "rank 0 at #1, rank 1 at #2" in message
    assert "published no record" not in message


def test_a_peer_whose_watchdog_is_gone_is_reported_as_silent(job_of):
    job = job_of(2)
    groups = job.groups(timeout=0.5)
    connect(groups)
    groups[1]._watchdog.stop()  # as if rank 1's process had died: nothing answers for it
    with pytest.raises(RuntimeError) as caught:
        groups[0].broadcast(device_array([1.0]), 0)
    message = str(caught.value)
    assert "nccl broadcast on group 'default' at rank 0: timed out" in message
    assert "rank 0's last collective: broadcast float64[1] from rank 0 (#2)" in message
    assert "rank 1 published no record within 2 s (no watchdog answered" in message


def test_work_nobody_waits_on_is_failed_by_the_watchdog_at_the_group_timeout(job_of, caplog):
    job = job_of(2)
    groups = job.groups(timeout=0.5, name="unwaited")
    connect(groups)
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    assert work._done.wait(30), "the watchdog fails the work though nobody waits on it"
    assert job.runtimes[0].communicators[0].aborted
    errors = [
        record for record in caplog.records if record.levelname == "ERROR" and "group 'unwaited'" in record.getMessage()
    ]
    assert [record.threadName for record in errors] == ["minidp-nccl-watchdog-unwaited-0"]
    logged = errors[0].getMessage()
    assert logged.startswith("nccl all_reduce on group 'unwaited' at rank 0: timed out")
    assert "rank 1 is behind (its last: all_reduce SUM float32[1] (#1))" in logged
    with pytest.raises(RuntimeError) as caught:
        work.wait()
    assert str(caught.value) == logged
    with pytest.raises(RuntimeError, match="unusable after an earlier failure"):
        groups[0].all_reduce(device_array([1.0]))


def test_an_asynchronous_nccl_error_in_work_nobody_waits_on_fails_it_before_its_deadline(job_of):
    job = job_of(2)
    groups = job.groups(timeout=30, name="unwaited")
    connect(groups)
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    job.runtimes[0].communicators[0].async_error = StandinNcclError("unhandled system error")
    assert work._done.wait(10), "the watchdog polls check_async_error, not only deadlines"
    with pytest.raises(RuntimeError, match="asynchronous error .*unhandled system error"):
        work.wait()
    assert job.runtimes[0].communicators[0].aborted


def test_events_are_queried_on_the_group_device_from_any_thread(job_of):
    """A query on another device would create a CUDA context there (on GPU 0 from the watchdog)."""
    job = job_of(2)
    groups = job.groups(timeout=30)
    connect(groups)  # on device 0
    runtime = job.runtimes[0]
    runtime.current = 1  # another thread's device
    runtime.query_devices.clear()
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    assert not work.is_completed()
    assert runtime.query_devices == {0}


class CompletingOnRelease:
    """An issue lock whose release lets another thread complete the outstanding work at once,
    as the watchdog or a second issuing thread may."""

    def __init__(self, group) -> None:
        self._lock = threading.RLock()
        self._group = group

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc) -> None:
        self._lock.release()
        for work in list(self._group._outstanding):
            self._group._stream.synchronize()
            self._group._poll(work)


def test_issuing_survives_another_thread_completing_the_work_as_the_lock_is_released(job_of):
    job = job_of(2)
    groups = job.groups()
    connect(groups)
    for group in groups:
        group._issue_lock = CompletingOnRelease(group)
    works = in_threads(groups, lambda g: g.all_reduce(device_array([g.rank + 1.0]), sync_op=False))
    assert all(work.is_completed() and work.wait() for work in works)


def test_work_that_completes_while_the_watchdog_times_it_out_keeps_its_first_outcome(job_of):
    """The watchdog decides a work timed out, and while it gathers the flight records the
    event fires and the issuing thread, pruning its outstanding work, delivers the result: the
    work stays completed (a thread that saw it succeed is not contradicted later)."""
    job = job_of(2)
    groups = job.groups(timeout=0.5, name="late")
    connect(groups)
    work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
    with_records = groups[0]._with_records

    def completing_meanwhile(message):
        error = with_records(message)
        work._event.fired.set()
        assert groups[0]._poll(work, check_communicator=False)  # as the issuing thread would
        return error

    groups[0]._with_records = completing_meanwhile
    assert work._done.wait(30)
    groups[0]._watchdog.stop()
    assert work.wait()


def test_a_group_without_a_store_fails_work_nobody_waits_on_too():
    world = World()
    runtimes = [StandinRuntime(world) for _ in range(2)]
    groups = [
        nccl.NcclProcessGroup(bytes(128), rank, 2, runtime=runtimes[rank], name="storeless", timeout=0.5)
        for rank in range(2)
    ]
    try:
        connect(groups)
        work = groups[0].all_reduce(device_array([1.0]), sync_op=False)  # rank 1 never joins
        assert work._done.wait(30), "the watchdog, sleeping on its stop flag, fails the work"
        with pytest.raises(RuntimeError, match="group 'storeless' at rank 0: timed out"):
            work.wait()
        in_threads(groups, lambda g: g.shutdown())
        assert not any(group._watchdog._thread.is_alive() for group in groups)
    finally:
        for runtime in runtimes:
            runtime.stop()


def test_shutdown_stops_the_watchdogs_and_closes_their_store_connections(job_of):
    before = set(threading.enumerate())
    job = job_of(2)
    groups = job.groups()
    clients = 1 + job.size  # the master's own connection and one per rank
    connect(groups)
    watchdogs = [
        thread for thread in set(threading.enumerate()) - before if thread.name.startswith("minidp-nccl-watchdog")
    ]
    assert sorted(thread.name for thread in watchdogs) == [
        "minidp-nccl-watchdog-default-0",
        "minidp-nccl-watchdog-default-1",
    ]
    in_threads(groups, lambda g: g.shutdown())
    assert not any(thread.is_alive() for thread in watchdogs)
    assert not [
        thread for thread in set(threading.enumerate()) - before if thread.name.startswith("minidp-nccl-watchdog")
    ]
    job.master._server.wait_for_clients(clients, 30)
    assert len(job.master._server._clients) == clients
