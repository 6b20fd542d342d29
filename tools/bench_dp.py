"""Data-parallel step time: minidp DataParallel (gloo, mpi) against one process and PyTorch DDP.

The model is tools/bench_engine.py's MLP 784-1024-1024-10 (ReLU, cross-entropy, SGD), batch 64
per rank, float32, one BLAS thread per rank. Every configuration runs in its own fresh processes
on 127.0.0.1 (free ports, every job under a timeout and killed with its process group), all in
the same run: configurations alternate over ``--rounds`` rounds, steps are timed in blocks, and
the best block counts (noise only adds time), so the ratios are fair on a noisy machine:

  1 process        minidp without DataParallel (the target's reference), plus hand-written NumPy
                   and PyTorch for context;
  minidp gloo      2 processes, minidp.DataParallel on the gloo backend (started with the
                   PADDLE_* environment, as spawn and the launcher write it), through shared
                   memory (the default between ranks of one host) and, as "gloo-tcp", with
                   MINIDP_TRANSPORT=tcp;
  minidp mpi       2 processes under mpiexec, DataParallel on the mpi backend, plus the
                   reference "hand-written NumPy step + one MPI Allreduce of all gradients";
                   skipped with a reason when mpi4py or mpiexec is missing;
  PyTorch DDP      2 processes, DistributedDataParallel on gloo; skipped when torch is missing.

Inside each 2-process job the synchronised step alternates, block by block, with the same step
without synchronisation (``no_sync()``), so that

  exposed communication = step time - no-sync step time

is measured under the same load. For minidp the benchmark also wraps the process group's
``_all_reduce`` (run on the communication thread) and the reducer's end-of-backward wait to
record, per step, how long the all-reduces ran, how much of that ran while backward was still
computing (overlap), and how long the main thread waited after backward. "all-reduce alone" is
the same buckets all-reduced with no computation around them. Each 2-process job first checks
that the replicas are bit-identical after a few synchronised steps.

Targets: minidp gloo / PyTorch DDP <= 1.0; minidp mpi / 1 process <= 1.3.

``--sweep`` measures instead how the step time and the exposed communication of minidp
DataParallel (gloo, shared memory) change with the world size (``--nproc``, at DataParallel's
default buckets of 25 MiB and a last one of 1 MiB) and with the bucket size (``--bucket-mb``, at
world size 2; a bucket size caps every bucket, the last one included: comm_buffer_size =
last_comm_buffer_size). Every configuration runs in fresh processes, after ``--warmup`` steps,
for ``--steps`` steps in each of ``--rounds`` rounds (configurations alternate); every rank times
every step, and reads the exposed communication of the step from
``DataParallel.communication_stats()``: the wait, after backward, for the buckets' all-reduces
that backward did not hide. The steps of all ranks and rounds are pooled into a median and an
interquartile range. World sizes above the core count are run anyway and marked oversubscribed.

Usage: python tools/bench_dp.py [--steps N] [--rounds R] [--only single,gloo,mpi,ddp]
                                [--plot tools/out/bench_dp.png] [--json FILE]
       python tools/bench_dp.py --sweep [--nproc 1 2 4] [--bucket-mb 0.5 2 4 8] [--steps N]
                                [--warmup N] [--rounds R] [--mlp 784,1024,1024,10]
                                [--plot tools/out/bench_dp_sweep.png] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# bench_engine pins OMP/OpenBLAS/MKL to one thread before NumPy loads; the children inherit it.
import bench_engine  # noqa: E402  (must come before NumPy)
from bench_collectives import (  # noqa: E402
    _clean_environment,
    _free_port,
    _importable,
    _mpiexec,
    format_size,
)
from bench_timing import pyplot  # noqa: E402

import numpy as np  # noqa: E402

SIZES = [784, 1024, 1024, 10]
BATCH = 64
LR = 0.01
WARMUP_STEPS = 10
NPROCS = 2
PG_TIMEOUT_SECONDS = 60
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PLOT = os.path.join(REPO, "tools", "out", "bench_dp.png")
DEFAULT_SWEEP_PLOT = os.path.join(REPO, "tools", "out", "bench_dp_sweep.png")
SWEEP_NPROCS = [1, 2, 4]
SWEEP_BUCKET_MB = [0.5, 2.0, 4.0, 8.0]
SWEEP_BUCKET_WORLD = 2  # the world size at which the bucket size varies

CONFIGS = {
    "single": "1 process",
    "gloo": "minidp DataParallel, gloo (shared memory)",
    "gloo-tcp": "minidp DataParallel, gloo over TCP",
    "mpi": "minidp DataParallel, mpi",
    "ddp": "PyTorch DDP, gloo",
}

# mode name -> row label in the step-time table
MODE_LABELS = {
    ("single", "minidp"): "1 process: minidp, no DataParallel",
    ("single", "numpy"): "1 process: hand-written NumPy",
    ("single", "torch"): "1 process: PyTorch",
    ("gloo", "dp"): "2 procs: minidp DataParallel, gloo shared memory",
    ("gloo", "no_sync"): "2 procs: minidp gloo shared memory, inside no_sync()",
    ("gloo-tcp", "dp"): "2 procs: minidp DataParallel, gloo over TCP",
    ("gloo-tcp", "no_sync"): "2 procs: minidp gloo over TCP, inside no_sync()",
    ("mpi", "dp"): "2 procs: minidp DataParallel, mpi",
    ("mpi", "no_sync"): "2 procs: minidp mpi, inside no_sync()",
    ("mpi", "numpy_allreduce"): "2 procs: NumPy + one MPI Allreduce (reference)",
    ("mpi", "numpy_local"): "2 procs: NumPy, no Allreduce",
    ("ddp", "dp"): "2 procs: PyTorch DDP, gloo",
    ("ddp", "no_sync"): "2 procs: PyTorch DDP, inside no_sync()",
}


# --- pieces shared by the workers -----------------------------------------------------------
def local_batch(rank: int, sizes: List[int] = SIZES) -> Tuple[np.ndarray, np.ndarray]:
    """This rank's fixed batch (each rank sees different data, as in data parallelism)."""
    rng = np.random.default_rng(1000 + rank)
    x = rng.standard_normal((BATCH, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], BATCH).astype(np.int64)
    return x, labels


def time_modes(
    steps: Dict[str, Callable[[], None]], blocks: int, block: int, sync: Callable[[], None], warmup: int
) -> Dict[str, List[float]]:
    """Seconds per step of each mode, per block; modes alternate block by block.

    ``sync`` (a barrier) lines the ranks up before every block, so a block never includes the
    wait for a peer that was still finishing the previous mode.
    """
    for step in steps.values():
        for _ in range(warmup):
            step()
    times: Dict[str, List[float]] = {name: [] for name in steps}
    for _ in range(blocks):
        for name, step in steps.items():
            sync()
            start = time.perf_counter()
            for _ in range(block):
                step()
            times[name].append((time.perf_counter() - start) / block)
    return times


def time_calls(call: Callable[[], None], sync: Callable[[], None], repeat: int = 21) -> List[float]:
    """Seconds of each of ``repeat`` calls, each after a barrier (two warm-up calls first)."""
    call()
    call()
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def emit(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def digest(arrays) -> int:
    """A 63-bit fingerprint of the bytes of ``arrays`` (to check that replicas agree)."""
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return int.from_bytes(h.digest(), "little") >> 1


# --- workers ---------------------------------------------------------------------------------
def worker_single(args) -> None:
    """One process: minidp without DataParallel, hand-written NumPy and (if present) PyTorch."""
    x, labels = local_batch(0)
    weights = bench_engine.init_weights(SIZES)
    numpy_weights = [(w.copy(), b.copy()) for w, b in weights]
    steps = {
        "minidp": bench_engine.minidp_step_fn(weights, x, labels, LR, "ce"),
        "numpy": lambda: bench_engine.numpy_step(numpy_weights, x, labels, LR, "ce"),
    }
    try:
        steps["torch"] = bench_engine.torch_step_fn(weights, x, labels, LR, "ce")
    except ImportError:
        pass
    times = time_modes(steps, args.steps // args.block, args.block, lambda: None, args.warmup)
    emit({"steps": times})


class ReducerProbe:
    """Per-step communication timings of a minidp DataParallel, read from outside the reducer.

    Wraps (on the instances, minidp itself is untouched) the process group's ``_all_reduce``,
    which the communication thread runs for each bucket, and the reducer's
    ``_finish_backward``, which runs when the autograd walk is over and waits for the buckets.
    """

    def __init__(self, model, pg) -> None:
        self.reducer = model._reducer
        if self.reducer is None:
            raise RuntimeError("DataParallel built no reducer (world size 1?)")
        self.intervals: List[Tuple[float, float]] = []
        self.backward_start = 0.0
        self.backward_end = 0.0
        self.finish_end = 0.0
        self.enabled = False
        self.records: List[Tuple[float, ...]] = []
        original_all_reduce = pg._all_reduce
        original_finish = self.reducer._finish_backward

        def timed_all_reduce(array, op):
            start = time.perf_counter()
            try:
                original_all_reduce(array, op)
            finally:
                self.intervals.append((start, time.perf_counter()))

        def timed_finish():
            self.backward_end = time.perf_counter()
            original_finish()
            self.finish_end = time.perf_counter()

        pg._all_reduce = timed_all_reduce
        self.reducer._finish_backward = timed_finish

    FIELDS = ("wait", "backward", "first_launch", "busy", "overlap")

    def record(self) -> None:
        """Account the step that just ended (call after ``loss.backward()``)."""
        if self.enabled:
            start, end = self.backward_start, self.backward_end
            busy = sum(b - a for a, b in self.intervals)
            overlap = sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.intervals)
            first = min(self.reducer._launched_at) - start
            self.records.append((self.finish_end - end, end - start, first, busy, overlap))
        self.intervals.clear()

    def summary(self, dp_blocks: List[float], block: int) -> dict:
        """Mean per-step timings over the fastest synchronised block (the table's 'best')."""
        best = min(range(len(dp_blocks)), key=dp_blocks.__getitem__)
        rows = self.records[best * block : (best + 1) * block]
        if len(self.records) != len(dp_blocks) * block or not rows:
            raise RuntimeError(f"probe saw {len(self.records)} steps, expected {len(dp_blocks) * block}")
        out = {name: sum(r[i] for r in rows) / len(rows) for i, name in enumerate(self.FIELDS)}
        out["buckets"] = [[list(p.shape) for p in params] for params in self.reducer.buckets]
        out["bucket_bytes"] = [int(b.copy().flat.nbytes) for b in self.reducer._buckets]
        return out


def numpy_dp_step(weights, grads, flat, x, labels, comm, scale: float) -> None:
    """Hand-written NumPy forward/backward, one all-reduce of all gradients (if ``comm``), SGD."""
    from mpi4py import MPI

    acts, pre = [x], []
    last = len(weights) - 1
    for i, (w, b) in enumerate(weights):
        z = acts[-1] @ w + b
        pre.append(z)
        acts.append(np.maximum(z, 0) if i < last else z)
    out = acts[-1]
    e = np.exp(out - out.max(axis=1, keepdims=True))
    g = e / e.sum(axis=1, keepdims=True)
    g[np.arange(x.shape[0]), labels] -= 1
    g /= x.shape[0]
    for i in range(last, -1, -1):
        gw, gb = grads[i]
        np.matmul(acts[i].T, g, out=gw)
        g.sum(axis=0, out=gb)
        if i > 0:
            g = (g @ weights[i][0].T) * (pre[i - 1] > 0)
    if comm is not None:
        flat *= scale
        comm.Allreduce(MPI.IN_PLACE, flat)
    for (w, b), (gw, gb) in zip(weights, grads):
        w -= LR * gw
        b -= LR * gb


def numpy_dp_steps(rank: int, world: int) -> Dict[str, Callable[[], None]]:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    x, labels = local_batch(rank)
    weights = bench_engine.init_weights(SIZES)
    flat = np.zeros(sum(w.size + b.size for w, b in weights), np.float32)
    grads, offset = [], 0
    for w, b in weights:
        gw = flat[offset : offset + w.size].reshape(w.shape)
        offset += w.size
        gb = flat[offset : offset + b.size]
        offset += b.size
        grads.append((gw, gb))
    return {
        "numpy_allreduce": lambda: numpy_dp_step(weights, grads, flat, x, labels, comm, 1 / world),
        "numpy_local": lambda: numpy_dp_step(weights, grads, flat, x, labels, None, 1.0),
    }


def worker_minidp(args) -> None:
    """One rank of minidp DataParallel (gloo from the PADDLE_* environment, mpi under mpiexec)."""
    import minidp
    import minidp.distributed as dist
    import minidp.nn.functional as F

    group = dist.init_parallel_env()
    if group is None:
        raise RuntimeError("init_parallel_env returned None: the job has a single process")
    pg = group.process_group
    rank, world = dist.get_rank(), dist.get_world_size()
    backend = pg.backend_name
    x, labels = local_batch(rank)
    model = minidp.DataParallel(bench_engine.minidp_model(bench_engine.init_weights(SIZES)))
    opt = minidp.optimizer.SGD(learning_rate=LR, parameters=model.parameters())
    probe = ReducerProbe(model, pg)
    xt, yt = minidp.to_tensor(x), minidp.to_tensor(labels)

    def step() -> None:
        loss = F.cross_entropy(model(xt), yt)
        probe.backward_start = time.perf_counter()
        loss.backward()
        probe.record()
        opt.step()
        opt.clear_grad()

    def step_no_sync() -> None:
        with model.no_sync():
            loss = F.cross_entropy(model(xt), yt)
            loss.backward()
        opt.step()
        opt.clear_grad()

    # Correctness first: after a few synchronised steps from rank 0's weights, every replica
    # must hold bit-identical parameters. (no_sync steps below let them drift apart, which does
    # not matter for timing.)
    for _ in range(3):
        step()
    prints = np.zeros((world, 1), np.int64)
    pg.all_gather(prints, np.array([digest(p.numpy() for p in model.parameters())], np.int64))
    replicas_identical = bool((prints == prints[0]).all())

    steps = {"dp": step, "no_sync": step_no_sync}
    if backend == "mpi" and not args.no_reference:
        steps.update(numpy_dp_steps(rank, world))
    for fn in steps.values():  # warm up outside the probed region
        for _ in range(args.warmup):
            fn()
    probe.enabled = True
    times = time_modes(steps, args.steps // args.block, args.block, pg.barrier, warmup=0)
    probe.enabled = False

    # The same buckets all-reduced back to back with nothing else running (fresh buffers).
    buffers = [np.zeros_like(b.copy().flat) for b in probe.reducer._buckets]

    def all_buckets() -> None:
        works = [pg.all_reduce(buf, sync_op=False) for buf in buffers]
        for work in works:
            work.wait()

    alone = time_calls(all_buckets, pg.barrier)
    if rank == 0:
        emit(
            {
                "steps": times,
                "probe": probe.summary(times["dp"], args.block),
                "allreduce_alone": alone,
                "replicas_identical": replicas_identical,
                "backend": backend,
            }
        )
    dist.destroy_process_group()


def worker_ddp(args) -> None:
    """One rank of PyTorch DistributedDataParallel on gloo."""
    import datetime

    import torch
    import torch.distributed as tdist

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    tdist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=PG_TIMEOUT_SECONDS)
    )
    layers = []
    for i, (w, b) in enumerate(bench_engine.init_weights(SIZES)):
        linear = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w.T.copy()))
            linear.bias.copy_(torch.from_numpy(b))
        layers.append(linear)
        if i < len(SIZES) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, labels = local_batch(rank)
    xt, yt = torch.from_numpy(x), torch.from_numpy(labels)
    loss_fn = torch.nn.functional.cross_entropy

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    def step_no_sync() -> None:
        opt.zero_grad()
        with model.no_sync():
            loss_fn(model(xt), yt).backward()
        opt.step()

    for _ in range(3):
        step()
    mine = torch.tensor([digest(p.detach().numpy() for p in model.parameters())])
    gathered = [torch.zeros_like(mine) for _ in range(world)]
    tdist.all_gather(gathered, mine)
    replicas_identical = all(bool((g == gathered[0]).all()) for g in gathered)

    times = time_modes(
        {"dp": step, "no_sync": step_no_sync}, args.steps // args.block, args.block, tdist.barrier, args.warmup
    )
    flat = torch.zeros(sum(p.numel() for p in model.parameters()))
    alone = time_calls(lambda: tdist.all_reduce(flat), tdist.barrier)
    if rank == 0:
        emit({"steps": times, "allreduce_alone": alone, "replicas_identical": replicas_identical, "backend": "gloo"})
    tdist.destroy_process_group()


def worker_sweep(args) -> None:
    """One rank of a sweep configuration: every rank's time and exposed communication per step.

    World size 1 runs the same DataParallel-wrapped model without a process group (DataParallel
    then reduces nothing, and warns so).
    """
    import minidp
    import minidp.distributed as dist
    import minidp.nn.functional as F

    sizes = parse_mlp(args.mlp)
    pg = None
    if int(os.environ.get("PADDLE_TRAINERS_NUM", "1")) > 1:
        pg = dist.init_parallel_env().process_group
    rank = pg.rank if pg is not None else 0
    buffers = {}
    if args.worker_bucket_mb:
        buffers = {"comm_buffer_size": args.worker_bucket_mb, "last_comm_buffer_size": args.worker_bucket_mb}
    model = minidp.DataParallel(bench_engine.minidp_model(bench_engine.init_weights(sizes)), **buffers)
    opt = minidp.optimizer.SGD(learning_rate=LR, parameters=model.parameters())
    x, labels = local_batch(rank, sizes)
    xt, yt = minidp.to_tensor(x), minidp.to_tensor(labels)

    def step() -> None:
        F.cross_entropy(model(xt), yt).backward()
        opt.step()
        opt.clear_grad()

    for _ in range(args.warmup):
        step()
    if pg is not None:
        pg.barrier()
    timings = np.zeros((2, args.steps))
    for i in range(args.steps):
        waited = model.communication_stats()["wait_seconds"]
        start = time.perf_counter()
        step()
        timings[0, i] = time.perf_counter() - start
        timings[1, i] = model.communication_stats()["wait_seconds"] - waited
    buckets = []
    if pg is not None:
        gathered = np.zeros((pg.size, 2, args.steps))
        pg.all_gather(gathered, timings)
        timings = gathered.transpose(1, 0, 2).reshape(2, -1)
        buckets = [sum(p.numpy().nbytes for p in params) for params in model._reducer.buckets]
    if rank == 0:
        emit({"step": timings[0].tolist(), "wait": timings[1].tolist(), "buckets": buckets})
    if pg is not None:
        dist.destroy_process_group()


WORKERS = {"single": worker_single, "minidp": worker_minidp, "ddp": worker_ddp, "sweep": worker_sweep}


# --- the driver ------------------------------------------------------------------------------
def _free_ports(count: int) -> List[int]:
    """``count`` distinct ports that were free on 127.0.0.1 a moment ago."""
    if count == 1:
        return [_free_port()]
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            probes.append(probe)
        return [p.getsockname()[1] for p in probes]
    finally:
        for probe in probes:
            probe.close()


def run_job(
    commands: List[List[str]], environments: List[Dict[str, str]], timeout: float
) -> Tuple[Optional[dict], str]:
    """Start the processes, wait at most ``timeout`` s, kill what is left; (result, log).

    Each process leads its own session, so killing its process group also ends what it started
    (mpiexec's proxies and ranks). When one process fails, the others are ended at once instead
    of waiting for their collective timeouts.
    """
    processes, outputs = [], []
    failure = ""
    try:
        for command, env in zip(commands, environments):
            out = tempfile.TemporaryFile("w+")
            outputs.append(out)
            processes.append(
                subprocess.Popen(
                    command, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=REPO
                )
            )
        deadline = time.monotonic() + timeout
        while True:
            codes = [p.poll() for p in processes]
            if any(code not in (None, 0) for code in codes):
                failure = f"a process exited with status {[c for c in codes if c][0]}"
                break
            if all(code == 0 for code in codes):
                break
            if time.monotonic() > deadline:
                failure = f"timed out after {timeout:g} s"
                break
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass
    log = ""
    for out in outputs:
        out.seek(0)
        log += out.read()
        out.close()
    result = None
    for line in log.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
    if failure and result is None:
        return None, f"{failure}:\n{log[-3000:]}"
    if result is None:
        return None, f"no result printed:\n{log[-3000:]}"
    return result, log


def worker_environment() -> Dict[str, str]:
    """The environment every benchmark process starts from: no job variables, no debug logging,
    this repository importable, and the process group's timeout."""
    base = _clean_environment()
    base["PADDLE_PG_TIMEOUT"] = str(PG_TIMEOUT_SECONDS * 1000)
    base.pop("MINIDP_LOG_LEVEL", None)
    base["PYTHONPATH"] = REPO + os.pathsep + base.get("PYTHONPATH", "")
    return base


def gloo_environments(base: Dict[str, str], nprocs: int, transport: str) -> List[Dict[str, str]]:
    """Each rank's environment for a gloo job of ``nprocs`` ranks on 127.0.0.1, as spawn and the
    launcher write it (``transport``: shm or tcp)."""
    master, *rank_ports = _free_ports(nprocs + 1)
    endpoints = ",".join(f"127.0.0.1:{p}" for p in rank_ports)
    return [
        dict(
            base,
            RANK=str(rank),
            WORLD_SIZE=str(nprocs),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(master),
            PADDLE_TRAINER_ID=str(rank),
            PADDLE_TRAINERS_NUM=str(nprocs),
            PADDLE_TRAINER_ENDPOINTS=endpoints,
            PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{rank_ports[rank]}",
            PADDLE_DISTRI_BACKEND="gloo",
            MINIDP_TRANSPORT=transport,
        )
        for rank in range(nprocs)
    ]


def run_config(name: str, args) -> Tuple[Optional[dict], str]:
    base = worker_environment()
    worker = [
        sys.executable,
        os.path.abspath(__file__),
        "--steps",
        str(args.steps),
        "--block",
        str(args.block),
        "--warmup",
        str(args.warmup),
    ]
    if args.no_reference:
        worker.append("--no-reference")
    if name == "single":
        return run_job([worker + ["--worker", "single"]], [base], args.timeout)
    if name == "mpi":
        env = dict(base, PADDLE_DISTRI_BACKEND="mpi")
        return run_job([[_mpiexec(), "-n", str(NPROCS), *worker, "--worker", "minidp"]], [env], args.timeout)
    environments = gloo_environments(base, NPROCS, "tcp" if name == "gloo-tcp" else "shm")
    kind = "ddp" if name == "ddp" else "minidp"
    return run_job([worker + ["--worker", kind]] * NPROCS, environments, args.timeout)


def available_configs(only: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """The configurations to run, and a printed reason for each one skipped."""
    skipped: Dict[str, str] = {}
    if not (_importable("mpi4py") and _mpiexec()):
        skipped["mpi"] = (
            "mpi4py is not installed" if not _importable("mpi4py") else "no mpiexec next to the interpreter or on PATH"
        )
    if not _importable("torch"):
        skipped["ddp"] = "torch is not installed"
    names = [n for n in (only or list(CONFIGS)) if n not in skipped]
    return names, {n: r for n, r in skipped.items() if not only or n in only}


def pooled(rounds: List[dict]) -> dict:
    """One configuration's rounds combined: every mode's blocks pooled; the probe of the round
    with the fastest synchronised block; the fastest all-reduce alone; replicas checked in all."""
    steps: Dict[str, List[float]] = {}
    per_round: Dict[str, List[float]] = {}
    for r in rounds:
        for mode, blocks in r["steps"].items():
            steps.setdefault(mode, []).extend(blocks)
            per_round.setdefault(mode, []).append(min(blocks))
    out = {"steps": steps, "per_round": per_round}
    if "dp" in steps:
        fastest = min(rounds, key=lambda r: min(r["steps"]["dp"]))
        if "probe" in fastest:
            out["probe"] = fastest["probe"]
        alone = [t for r in rounds for t in r["allreduce_alone"]]
        out["allreduce_alone"] = (statistics.median(alone), min(alone))
        out["replicas_identical"] = all(r["replicas_identical"] for r in rounds)
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def report(
    raw: Dict[str, List[dict]], skipped: Dict[str, str], failed: Dict[str, str], rounds: int, block: int
) -> Tuple[str, Dict[str, float]]:
    results = {name: pooled(r) for name, r in raw.items() if r}
    best: Dict[Tuple[str, str], float] = {}
    lines = [
        f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, float32, one BLAS thread "
        f"per rank; time per step of blocks of {block} steps: best and median over "
        f"{rounds} round(s), and each round's best",
        "",
        "| configuration | ms/step (best) | ms/step (median) | vs 1 process | best per round |",
        "|---|---|---|---|---|",
    ]
    single = None
    if "single" in results:
        single = min(results["single"]["steps"]["minidp"])
    for (config, mode), label in MODE_LABELS.items():
        if config not in results or mode not in results[config]["steps"]:
            continue
        blocks = results[config]["steps"][mode]
        best[(config, mode)] = min(blocks)
        relative = f"{min(blocks) / single:.2f}x" if single else "n/a"
        rounds_text = " / ".join(ms(t) for t in results[config]["per_round"][mode])
        lines.append(f"| {label} | {ms(min(blocks))} | {ms(statistics.median(blocks))} | {relative} | {rounds_text} |")
    for config, reason in skipped.items():
        lines.append(f"| {CONFIGS[config]} | skipped: {reason} | | | |")
    for config in failed:
        lines.append(f"| {CONFIGS[config]} | FAILED (log above) | | | |")

    comm_rows = []
    for config in ("gloo", "gloo-tcp", "mpi", "ddp"):
        if (config, "dp") not in best or (config, "no_sync") not in best:
            continue
        r = results[config]
        exposed = best[(config, "dp")] - best[(config, "no_sync")]
        probe = r.get("probe")
        alone = f"{ms(r['allreduce_alone'][0])} ({ms(r['allreduce_alone'][1])})"
        if probe:
            busy, overlap = probe["busy"], probe["overlap"]
            share = f"{overlap / busy:.0%}" if busy > 0 else "n/a"
            comm_rows.append(
                f"| {CONFIGS[config]} | {ms(exposed)} | {ms(probe['wait'])} | {ms(busy)} | "
                f"{ms(overlap)} ({share}) | {alone} | "
                f"{ms(probe['backward'])} / {ms(probe['first_launch'])} |"
            )
        else:
            comm_rows.append(f"| {CONFIGS[config]} | {ms(exposed)} | n/a | n/a | n/a | {alone} | n/a |")
    if comm_rows:
        note = (
            "Communication (ms per step). exposed = synchronised step - no_sync step (best "
            "blocks); wait = main thread's wait for the buckets after the autograd walk; "
            "all-reduce busy = time the communication thread spent in all-reduces; "
            "overlapped = the part of it that ran while backward was still computing (with "
            "2 ranks on 2 cores it shares the CPU with backward rather than hiding behind "
            "it); alone = median (min) of the same all-reduce(s) with no computation around "
            "them (PyTorch: one flat buffer of all gradients); backward / 1st launch = "
            "autograd walk length and when, within it, the first bucket started. Probe "
            "columns are means over the fastest synchronised block."
        )
        lines += [
            "",
            textwrap.fill(note, 100),
            "",
            "| configuration | exposed | wait after backward | all-reduce busy | overlapped "
            "with backward | all-reduce alone, median (min) | backward / 1st launch |",
            "|---|---|---|---|---|---|---|",
        ] + comm_rows
        for config in ("gloo", "mpi"):
            probe = results.get(config, {}).get("probe")
            if probe:
                sizes = ", ".join(
                    f"{b / 2**20:.2f} MiB {shapes}" for b, shapes in zip(probe["bucket_bytes"], probe["buckets"])
                )
                lines.append(f"- {CONFIGS[config]} buckets, in launch order: {sizes}")
                break
    for config, r in results.items():
        if "replicas_identical" in r:
            lines.append(
                f"- {CONFIGS[config]}: replicas bit-identical after 3 synchronised steps: "
                f"{'yes' if r['replicas_identical'] else 'NO'}"
            )
    return "\n".join(lines), {f"{c}/{m}": v for (c, m), v in best.items()}


def targets(best: Dict[str, float]) -> List[str]:
    lines = ["", "targets"]

    def check(label: str, numerator: str, denominator: str, limit: float) -> None:
        if numerator in best and denominator in best:
            ratio = best[numerator] / best[denominator]
            verdict = "PASS" if ratio <= limit else "FAIL"
            lines.append(f"  {label}: {ratio:.3f} (target <= {limit:.2f})  {verdict}")
        else:
            lines.append(f"  {label}: not measured (target <= {limit:.2f})  n/a")

    check("minidp gloo DataParallel / PyTorch DDP", "gloo/dp", "ddp/dp", 1.0)
    check("minidp gloo (shared memory) / PyTorch DDP", "gloo/dp", "ddp/dp", 0.8)
    check("minidp gloo (shared memory) / 1 process", "gloo/dp", "single/minidp", 1.25)
    check("minidp mpi DataParallel / 1 process  ", "mpi/dp", "single/minidp", 1.3)
    for label, key in (
        ("minidp gloo", "gloo/dp"),
        ("minidp gloo over TCP", "gloo-tcp/dp"),
        ("PyTorch DDP", "ddp/dp"),
        ("NumPy + MPI Allreduce", "mpi/numpy_allreduce"),
    ):
        if key in best and "single/minidp" in best:
            lines.append(f"  ({label} / 1 process = {best[key] / best['single/minidp']:.3f})")
    return lines


def plot(best: Dict[str, float], path: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    keys = [f"{c}/{m}" for (c, m) in MODE_LABELS if f"{c}/{m}" in best]
    labels = [MODE_LABELS[tuple(k.split("/"))] for k in keys]
    values = [best[k] * 1e3 for k in keys]
    colours = [
        "tab:gray"
        if k.startswith("single")
        else "tab:blue"
        if k.startswith("gloo")
        else "tab:green"
        if k.startswith("mpi")
        else "tab:orange"
        for k in keys
    ]
    figure, axis = plt.subplots(figsize=(8, 0.45 * len(keys) + 1.2))
    axis.barh(range(len(keys)), values, color=colours)
    axis.set_yticks(range(len(keys)), labels, fontsize=8)
    axis.invert_yaxis()
    for i, v in enumerate(values):
        axis.text(v, i, f" {v:.1f}", va="center", fontsize=8)
    axis.set_xlabel("ms per training step (best block)")
    axis.set_title(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}/rank, 1 BLAS thread/rank")
    axis.set_xlim(0, max(values) * 1.12)
    axis.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"plot written to {path}")


# --- the sweep over world size and bucket size ----------------------------------------------
SweepConfig = Tuple[int, Optional[float]]  # (world size, bucket MiB; None: DataParallel's default)


def parse_mlp(text: str) -> List[int]:
    """The layer widths in ``text`` ("784,1024,1024,10"): an input, any hidden, an output."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(
            f"--mlp takes two or more positive layer widths separated by commas, such as 784,1024,1024,10; got {text!r}"
        )
    return sizes


def sweep_configs(nprocs: List[int], bucket_mbs: List[float]) -> List[SweepConfig]:
    """Every world size at the default buckets, then every bucket size at world size 2."""
    configs = [(n, None) for n in nprocs] + [(SWEEP_BUCKET_WORLD, b) for b in bucket_mbs]
    return list(dict.fromkeys(configs))


def sweep_label(config: SweepConfig) -> str:
    world, bucket_mb = config
    buckets = "default buckets" if bucket_mb is None else f"buckets of {bucket_mb:g} MiB"
    return f"{world} rank(s), {buckets}"


def run_sweep_config(config: SweepConfig, args) -> Tuple[Optional[dict], str]:
    """Run one configuration of the sweep in fresh processes; (rank 0's result, log)."""
    world, bucket_mb = config
    worker = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        "sweep",
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--mlp",
        args.mlp,
    ]
    if bucket_mb is not None:
        worker += ["--worker-bucket-mb", repr(bucket_mb)]
    base = worker_environment()
    if world == 1:
        return run_job([worker], [base], args.timeout)
    return run_job([worker] * world, gloo_environments(base, world, "shm"), args.timeout)


def run_sweep(args) -> dict:
    """Every configuration once per round (the order rotating), steps pooled over the rounds."""
    configs = sweep_configs(args.nproc, args.bucket_mb)
    measured: Dict[SweepConfig, dict] = {c: {"step": [], "wait": [], "buckets": []} for c in configs}
    failed: Dict[SweepConfig, str] = {}
    for round_index in range(args.rounds):
        shift = round_index % len(configs)
        for config in configs[shift:] + configs[:shift]:
            if config in failed:
                continue
            print(f"round {round_index + 1}/{args.rounds}: {sweep_label(config)} ...", file=sys.stderr, flush=True)
            result, log = run_sweep_config(config, args)
            if result is None:
                failed[config] = log
                print(f"{sweep_label(config)} FAILED: {log}", flush=True)
                continue
            measured[config]["step"] += result["step"]
            measured[config]["wait"] += result["wait"]
            measured[config]["buckets"] = result["buckets"]
    return {
        "cores": os.cpu_count(),
        "mlp": parse_mlp(args.mlp),
        "batch": BATCH,
        "steps": args.steps,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "configs": [dict(world=w, bucket_mb=b, **measured[(w, b)]) for w, b in configs if (w, b) not in failed],
        "failed": [{"world": w, "bucket_mb": b, "log": log} for (w, b), log in failed.items()],
    }


def quartiles(values: List[float]) -> Tuple[float, float, float]:
    """First quartile, median and third quartile of ``values``."""
    low, median, high = np.percentile(values, [25, 50, 75])
    return float(low), float(median), float(high)


def sweep_rows(data: dict) -> List[dict]:
    """One summary per measured configuration: quartiles of step time and exposed communication
    (seconds), their ratio of medians, and whether the ranks outnumber the cores."""
    rows = []
    for config in data["configs"]:
        step, wait = quartiles(config["step"]), quartiles(config["wait"])
        rows.append(
            {
                "world": config["world"],
                "bucket_mb": config["bucket_mb"],
                "buckets": config["buckets"],
                "step": step,
                "wait": wait,
                "ratio": wait[1] / step[1],
                "oversubscribed": config["world"] > data["cores"],
            }
        )
    return rows


def _spread(quartile: Tuple[float, float, float]) -> str:
    low, median, high = quartile
    return f"{ms(median)} ({ms(low)}-{ms(high)})"


def _bucket_layout(buckets: List[int]) -> str:
    if not buckets:
        return "none (one rank reduces nothing)"
    return ", ".join(format_size(b) for b in buckets)


def sweep_report(data: dict) -> str:
    """Markdown tables of the sweep: against bucket size (world size 2) and against world size
    (default buckets), with a note on oversubscribed world sizes and failed configurations."""
    rows = sweep_rows(data)
    cores = data["cores"]
    note = (
        f"minidp DataParallel on gloo (shared memory), MLP {'-'.join(map(str, data['mlp']))}, "
        f"batch {data['batch']} per rank (every rank trains its own batch), float32, one "
        f"BLAS thread per rank, {cores} cores. Per configuration: {data['warmup']} warm-up "
        f"steps, then {data['steps']} timed steps in each of {data['rounds']} round(s), every "
        "rank's steps pooled: median (interquartile range) in ms. exposed = the wait after "
        "backward for the all-reduces backward did not hide (DataParallel."
        "communication_stats()); exposed / step = ratio of the medians. A bucket size of B "
        "MiB caps every bucket (comm_buffer_size = last_comm_buffer_size = B); default = "
        "DataParallel's 25 MiB with a last bucket of 1 MiB."
    )
    lines = [textwrap.fill(note, 100)]
    by_bucket = sorted(
        (r for r in rows if r["world"] == SWEEP_BUCKET_WORLD),
        key=lambda r: (r["bucket_mb"] is None, r["bucket_mb"] or 0),
    )
    if by_bucket:
        lines += [
            "",
            f"Against bucket size, at world size {SWEEP_BUCKET_WORLD}:",
            "",
            "| bucket size | buckets in launch order | step time (ms) | exposed communication (ms) | exposed / step |",
            "|---|---|---|---|---|",
        ]
        for r in by_bucket:
            size = "default (25 / 1 MiB)" if r["bucket_mb"] is None else f"{r['bucket_mb']:g} MiB"
            lines.append(
                f"| {size} | {_bucket_layout(r['buckets'])} | {_spread(r['step'])} | "
                f"{_spread(r['wait'])} | {r['ratio']:.0%} |"
            )
    by_world = sorted((r for r in rows if r["bucket_mb"] is None), key=lambda r: r["world"])
    if by_world:
        lines += [
            "",
            "Against world size, at the default buckets:",
            "",
            "| world size | ranks per core | buckets in launch order | step time (ms) "
            "| exposed communication (ms) | exposed / step |",
            "|---|---|---|---|---|---|",
        ]
        for r in by_world:
            load = f"{r['world'] / cores:g}" + (" (oversubscribed)" if r["oversubscribed"] else "")
            lines.append(
                f"| {r['world']} | {load} | {_bucket_layout(r['buckets'])} | "
                f"{_spread(r['step'])} | {_spread(r['wait'])} | {r['ratio']:.0%} |"
            )
    crowded = sorted({r["world"] for r in rows if r["oversubscribed"]})
    if crowded:
        lines += [
            "",
            f"- Oversubscribed: world size {', '.join(map(str, crowded))} runs more "
            f"ranks than the {cores} cores, so ranks also wait for a core and for peers "
            "that are descheduled; those step times and waits measure that contention, "
            "not the communication alone.",
        ]
    for failure in data["failed"]:
        config = (failure["world"], failure["bucket_mb"])
        lines.append(f"- {sweep_label(config)}: FAILED ({failure['log'].splitlines()[0]})")
    return "\n".join(lines)


def sweep_plot(data: dict, path: str) -> None:
    """Step time and exposed communication (median, interquartile bars) against bucket size and
    against world size, side by side, as a PNG at ``path`` (nothing without matplotlib)."""
    plt = pyplot()
    if plt is None:
        return
    rows = sweep_rows(data)
    figure, (by_bucket, by_world) = plt.subplots(1, 2, figsize=(11, 4.2))

    def draw(axis, points: List[dict], x: Callable[[dict], float]) -> None:
        for key, label, colour in (("step", "step time", "tab:blue"), ("wait", "exposed communication", "tab:red")):
            xs = [x(r) for r in points]
            medians = [r[key][1] * 1e3 for r in points]
            bars = [[(r[key][1] - r[key][0]) * 1e3 for r in points], [(r[key][2] - r[key][1]) * 1e3 for r in points]]
            axis.errorbar(xs, medians, yerr=bars, marker="o", capsize=3, label=label, color=colour)
        axis.set_ylabel("ms per step (median, interquartile range)")
        axis.grid(True, alpha=0.3)

    sized = sorted(
        (r for r in rows if r["world"] == SWEEP_BUCKET_WORLD and r["bucket_mb"]), key=lambda r: r["bucket_mb"]
    )
    if sized:
        draw(by_bucket, sized, lambda r: r["bucket_mb"])
        by_bucket.set_xscale("log", base=2)
        ticks = [r["bucket_mb"] for r in sized]
        by_bucket.set_xticks(ticks, [f"{t:g}" for t in ticks])
    for r in rows:
        if r["world"] == SWEEP_BUCKET_WORLD and r["bucket_mb"] is None:
            for key, colour in (("step", "tab:blue"), ("wait", "tab:red")):
                by_bucket.axhline(r[key][1] * 1e3, color=colour, linestyle="--", alpha=0.6)
            by_bucket.plot([], [], color="gray", linestyle="--", label="default (25 / 1 MiB)")
    by_bucket.set_xlabel("bucket size (MiB)")
    by_bucket.set_title(f"against bucket size, {SWEEP_BUCKET_WORLD} ranks")
    by_bucket.legend(fontsize=8)
    worlds = sorted((r for r in rows if r["bucket_mb"] is None), key=lambda r: r["world"])
    if worlds:
        draw(by_world, worlds, lambda r: r["world"])
        by_world.set_xticks([r["world"] for r in worlds])
        if any(r["oversubscribed"] for r in worlds):
            by_world.axvspan(
                data["cores"] + 0.5,
                worlds[-1]["world"] + 0.5,
                color="gray",
                alpha=0.15,
                label=f"oversubscribed (> {data['cores']} cores)",
            )
    by_world.set_xlabel("world size (ranks)")
    by_world.set_title("against world size, default buckets")
    by_world.legend(fontsize=8)
    for axis in (by_bucket, by_world):
        axis.set_ylim(bottom=0)
    figure.suptitle(
        f"minidp DataParallel, gloo shared memory, MLP {'-'.join(map(str, data['mlp']))}, batch {data['batch']}/rank"
    )
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"plot written to {path}")


def main_sweep(args) -> int:
    """The sweep's driver: run, print the tables, write the JSON and the plot."""
    crowded = [n for n in args.nproc if n > (os.cpu_count() or 1)]
    if crowded:
        print(f"note: world size(s) {crowded} exceed the {os.cpu_count()} cores: oversubscribed", flush=True)
    started = time.monotonic()
    data = run_sweep(args)
    print()
    print(sweep_report(data))
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(data, handle, indent=1)
    if args.plot and data["configs"]:
        sweep_plot(data, args.plot)
    return 1 if data["failed"] else 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="timed steps per mode per round (default 60)")
    parser.add_argument("--block", type=int, default=10, help="steps per timed block")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="run every configuration this many times, alternating, and pool their blocks (default 3)",
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(CONFIGS)}")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds one configuration may take before it is killed"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the NumPy + MPI Allreduce reference rows")
    parser.add_argument(
        "--warmup",
        type=int,
        default=WARMUP_STEPS,
        help=f"untimed steps per mode before timing (default {WARMUP_STEPS})",
    )
    parser.add_argument(
        "--plot",
        default=None,
        help="PNG path ('' for none; default tools/out/bench_dp.png, with --sweep tools/out/bench_dp_sweep.png)",
    )
    parser.add_argument("--json", default="", help="also write the raw step times here")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="instead of the comparison, sweep "
        "minidp DataParallel (gloo, shared memory) over world size and bucket "
        "size; --steps then counts the timed steps per configuration and round",
    )
    parser.add_argument(
        "--nproc",
        type=int,
        nargs="+",
        default=None,
        help=f"the sweep's world sizes, at the default buckets (default {' '.join(map(str, SWEEP_NPROCS))})",
    )
    parser.add_argument(
        "--bucket-mb",
        type=float,
        nargs="+",
        default=None,
        help="the sweep's bucket sizes in MiB, at world size "
        f"{SWEEP_BUCKET_WORLD}: comm_buffer_size = last_comm_buffer_size (default "
        f"{' '.join(f'{b:g}' for b in SWEEP_BUCKET_MB)})",
    )
    parser.add_argument("--mlp", default=None, help=f"the sweep's layer widths (default {','.join(map(str, SIZES))})")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    parser.add_argument("--worker-bucket-mb", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        WORKERS[args.worker](args)
        return 0
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.sweep:
        args.nproc = args.nproc or SWEEP_NPROCS
        args.bucket_mb = args.bucket_mb or SWEEP_BUCKET_MB
        args.mlp = args.mlp or ",".join(map(str, SIZES))
        args.plot = DEFAULT_SWEEP_PLOT if args.plot is None else args.plot
        if min(args.nproc) < 1 or min(args.bucket_mb) <= 0:
            parser.error("--nproc takes world sizes of 1 or more, --bucket-mb positive sizes")
        if args.steps < 1 or args.rounds < 1:
            parser.error("--steps and --rounds must be at least 1")
        try:
            parse_mlp(args.mlp)
        except ValueError as error:
            parser.error(str(error))
        return main_sweep(args)
    if args.nproc or args.bucket_mb or args.mlp:
        parser.error("--nproc, --bucket-mb and --mlp set the sweep's axes and model: add --sweep")
    args.plot = DEFAULT_PLOT if args.plot is None else args.plot
    if args.steps < args.block or args.block < 1:
        parser.error("--steps must be at least --block, and --block at least 1")
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in only if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; choose from {list(CONFIGS)}")
    names, skipped = available_configs(only)
    for config, reason in skipped.items():
        print(f"skipping {CONFIGS[config]}: {reason}", flush=True)
    results: Dict[str, List[dict]] = {name: [] for name in names}
    failed: Dict[str, str] = {}
    started = time.monotonic()
    for round_index in range(args.rounds):
        # rotate the order every round, so that no configuration always follows the same one
        shift = round_index % max(1, len(names))
        for name in names[shift:] + names[:shift]:
            if name in failed:
                continue
            print(f"round {round_index + 1}/{args.rounds}: {CONFIGS[name]} ...", file=sys.stderr, flush=True)
            result, log = run_config(name, args)
            if result is None:
                failed[name] = log
                print(f"{CONFIGS[name]} FAILED: {log}", flush=True)
            else:
                results[name].append(result)
    text, best = report(results, skipped, failed, args.rounds, args.block)
    print()
    print(text)
    print("\n".join(targets(best)))
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"results": results, "failed": failed, "skipped": skipped}, handle, indent=1)
    if args.plot and best:
        plot(best, args.plot)
    return 1 if any(n in failed for n in ("single", "gloo", "mpi")) else 0


if __name__ == "__main__":
    sys.exit(main())
