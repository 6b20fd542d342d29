"""All-reduce benchmark: minidp gloo (TCP and shared memory) and mpi against PyTorch gloo, raw
mpi4py and raw TCP.

Usage::

    python tools/bench_collectives.py [--nprocs 2] [--sizes 4K,64K,1M,16M,64M]
                                      [--plot tools/out/bench_collectives.png] [--json results.json]

Every contender runs in its own set of fresh processes on 127.0.0.1 and all-reduces float32
arrays of each size in place; rank 0 reports the time per call (median of several timed blocks,
after warm-up). Bus bandwidth is ``2 (n - 1) / n * bytes / time``, the traffic each link carries,
so it compares directly with the loopback ceiling: two processes that send to each other and
receive from each other at once over plain TCP sockets (per-direction bandwidth; the better of a
sender thread beside a receiving main thread and a single thread polling a non-blocking socket).
Contenders run in alternation for ``--rounds`` rounds; the table shows each size's best time and
the notes compare minidp's shared-memory transport with PyTorch gloo and mpi4py by the best and
by the median of the rounds. ``minidp gloo shm, allocate`` all-reduces an array from
``ProcessGroup.allocate`` (already in shared memory: no copy-in), as DataParallel's buckets do.
PyTorch and mpi4py rows appear only where they are installed
(PyTorch is never a minidp dependency). The table is printed in Markdown, the plot written as PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy

from bench_timing import pyplot

DEFAULT_SIZES = "4K,64K,1M,16M,64M"
BYTES_PER_SIZE_BUDGET = 640 << 20
TIMED_BLOCKS = 5
WORKER_TIMEOUT_SECONDS = 300

CONTENDERS = {
    "minidp-gloo": "minidp gloo TCP",
    "minidp-shm": "minidp gloo shm",
    "minidp-shm-zc": "minidp gloo shm, allocate",
    "minidp-mpi": "minidp mpi",
    "torch-gloo": "PyTorch gloo",
    "mpi4py": "raw mpi4py",
    "loopback": "TCP loopback ceiling",
}


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def iterations_for(nbytes: int) -> int:
    """Calls per timed block: enough to move the budget, between 2 and 2000."""
    return max(2, min(2000, BYTES_PER_SIZE_BUDGET // (TIMED_BLOCKS * max(nbytes, 1))))


def time_calls(call: Callable[[], None], nbytes: int, sync: Callable[[], None]) -> float:
    """Median seconds per call over ``TIMED_BLOCKS`` blocks, after two warm-up calls."""
    iterations = iterations_for(nbytes)
    call()
    call()
    blocks = []
    for _ in range(TIMED_BLOCKS):
        sync()
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        blocks.append((time.perf_counter() - start) / iterations)
    return statistics.median(blocks)


# --- workers: each runs inside one rank and returns {size: seconds} --------------------------
def worker_minidp(sizes: List[int], allocate: bool = False) -> Dict[int, float]:
    import minidp.distributed as dist

    group = dist.init_parallel_env()
    pg = group.process_group
    results = {}
    for nbytes in sizes:
        array = pg.allocate((nbytes // 4,), "float32") if allocate else numpy.zeros(nbytes // 4, numpy.float32)
        results[nbytes] = time_calls(lambda: pg.all_reduce(array), nbytes, pg.barrier)
    dist.destroy_process_group()
    return results


def worker_minidp_allocated(sizes: List[int]) -> Dict[int, float]:
    return worker_minidp(sizes, allocate=True)


def worker_torch_gloo(sizes: List[int]) -> Dict[int, float]:
    import torch
    import torch.distributed as tdist

    torch.set_num_threads(1)
    tdist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    results = {}
    for nbytes in sizes:
        tensor = torch.zeros(nbytes // 4, dtype=torch.float32)
        results[nbytes] = time_calls(lambda: tdist.all_reduce(tensor), nbytes, tdist.barrier)
    tdist.destroy_process_group()
    return results


def worker_mpi4py(sizes: List[int]) -> Dict[int, float]:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    results = {}
    for nbytes in sizes:
        array = numpy.zeros(nbytes // 4, numpy.float32)
        results[nbytes] = time_calls(lambda: comm.Allreduce(MPI.IN_PLACE, array), nbytes, comm.Barrier)
    return results


def _connect_pair() -> socket.socket:
    """One TCP connection between rank 0 (listening on MASTER_PORT) and rank 1."""
    address = ("127.0.0.1", int(os.environ["MASTER_PORT"]))
    if int(os.environ["RANK"]) == 0:
        with socket.create_server(address) as listener:
            listener.settimeout(WORKER_TIMEOUT_SECONDS)
            peer, _ = listener.accept()
    else:
        deadline = time.monotonic() + WORKER_TIMEOUT_SECONDS
        while True:
            try:
                peer = socket.create_connection(address, timeout=WORKER_TIMEOUT_SECONDS)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return peer


def worker_loopback(sizes: List[int]) -> Dict[int, float]:
    """Both ranks send ``size`` bytes to each other at once; seconds per exchange.

    Two plain-socket ways are timed and the faster kept per size: a persistent sender thread
    with ``sendall`` while the main thread receives, and one thread driving a non-blocking
    socket with ``poll``.
    """
    peer = _connect_pair()
    outbox: "queue.SimpleQueue" = queue.SimpleQueue()
    sent: "queue.SimpleQueue" = queue.SimpleQueue()

    def sender() -> None:
        while True:
            view = outbox.get()
            if view is None:
                return
            peer.sendall(view)
            sent.put(True)

    def threaded_exchange(outgoing: memoryview, incoming: memoryview) -> None:
        outbox.put(outgoing)
        received = 0
        while received < len(incoming):
            count = peer.recv_into(incoming[received:])
            if count == 0:
                raise ConnectionError("peer closed")
            received += count
        sent.get(timeout=WORKER_TIMEOUT_SECONDS)

    def non_blocking_exchange(outgoing: memoryview, incoming: memoryview) -> None:
        done_sending = done_receiving = 0
        while done_sending < len(outgoing) or done_receiving < len(incoming):
            moved = False
            if done_sending < len(outgoing):
                try:
                    done_sending += peer.send(outgoing[done_sending:])
                    moved = True
                except BlockingIOError:
                    pass
            if done_receiving < len(incoming):
                try:
                    count = peer.recv_into(incoming[done_receiving:])
                except BlockingIOError:
                    count = -1
                if count == 0:
                    raise ConnectionError("peer closed")
                if count > 0:
                    done_receiving += count
                    moved = True
            if not moved:
                poller = select.poll()
                poller.register(
                    peer,
                    (select.POLLOUT if done_sending < len(outgoing) else 0)
                    | (select.POLLIN if done_receiving < len(incoming) else 0),
                )
                poller.poll(WORKER_TIMEOUT_SECONDS * 1000)

    token_out, token_in = memoryview(bytearray(1)), memoryview(bytearray(1))
    results = {}
    for nbytes in sizes:
        outgoing = memoryview(numpy.zeros(nbytes, numpy.uint8))
        incoming = memoryview(numpy.empty(nbytes, numpy.uint8))
        peer.settimeout(WORKER_TIMEOUT_SECONDS)
        threading.Thread(target=sender, daemon=True).start()
        threaded = time_calls(
            lambda: threaded_exchange(outgoing, incoming), nbytes, lambda: threaded_exchange(token_out, token_in)
        )
        outbox.put(None)
        peer.setblocking(False)
        polled = time_calls(
            lambda: non_blocking_exchange(outgoing, incoming),
            nbytes,
            lambda: non_blocking_exchange(token_out, token_in),
        )
        results[nbytes] = min(threaded, polled)
    peer.close()
    return results


WORKERS = {
    "minidp-gloo": worker_minidp,
    "minidp-shm": worker_minidp,
    "minidp-shm-zc": worker_minidp_allocated,
    "minidp-mpi": worker_minidp,
    "torch-gloo": worker_torch_gloo,
    "mpi4py": worker_mpi4py,
    "loopback": worker_loopback,
}


# --- the driver -----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _mpiexec() -> Optional[str]:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _importable(module: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def _clean_environment() -> Dict[str, str]:
    drop = (
        "PADDLE_TRAINER_ID",
        "PADDLE_TRAINERS_NUM",
        "PADDLE_TRAINER_ENDPOINTS",
        "PADDLE_CURRENT_ENDPOINT",
        "PADDLE_MASTER",
        "PADDLE_DISTRI_BACKEND",
        "RANK",
        "WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
    )
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(commands: List[List[str]], environments: List[Dict[str, str]]) -> Dict[int, float]:
    """Start the rank processes, wait (bounded), kill leftovers, return rank 0's result."""
    processes, outputs = [], []
    try:
        for command, env in zip(commands, environments):
            out = tempfile.TemporaryFile("w+")
            outputs.append(out)
            processes.append(
                subprocess.Popen(
                    command, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True
                )
            )
        deadline = time.monotonic() + WORKER_TIMEOUT_SECONDS
        for process in processes:
            process.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
    text = ""
    for out in outputs:
        out.seek(0)
        text += out.read()
        out.close()
    for line in text.splitlines():
        if line.startswith("RESULT "):
            return {int(k): v for k, v in json.loads(line[7:]).items()}
    raise RuntimeError(f"benchmark processes failed:\n{text[-4000:]}")


def run_contender(name: str, nprocs: int, sizes: List[int]) -> Dict[int, float]:
    worker = [sys.executable, os.path.abspath(__file__), "--worker", name, "--sizes", ",".join(map(str, sizes))]
    base = _clean_environment()
    if name in ("minidp-mpi", "mpi4py"):
        env = dict(base, PADDLE_DISTRI_BACKEND="mpi")
        return _run([[_mpiexec(), "-n", str(nprocs), *worker]], [env])
    port = _free_port()
    endpoints = ",".join(f"127.0.0.1:{port + 1 + r}" for r in range(nprocs))
    environments = []
    for rank in range(nprocs):
        environments.append(
            dict(
                base,
                RANK=str(rank),
                WORLD_SIZE=str(nprocs),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                PADDLE_TRAINER_ID=str(rank),
                PADDLE_TRAINERS_NUM=str(nprocs),
                PADDLE_TRAINER_ENDPOINTS=endpoints,
                PADDLE_DISTRI_BACKEND="gloo",
                MINIDP_TRANSPORT="tcp" if name == "minidp-gloo" else "shm",
            )
        )
    return _run([worker] * nprocs, environments)


def available_contenders(nprocs: int) -> List[str]:
    names = ["minidp-gloo", "minidp-shm", "minidp-shm-zc"]
    if nprocs == 2:
        names.append("loopback")
    if _importable("torch"):
        names.append("torch-gloo")
    if _importable("mpi4py") and _mpiexec():
        names += ["minidp-mpi", "mpi4py"]
    return names


def bus_bandwidth(nbytes: int, seconds: float, nprocs: int, name: str) -> float:
    factor = 1.0 if name == "loopback" else 2 * (nprocs - 1) / nprocs
    return factor * nbytes / seconds


def format_size(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def shared_memory_notes(rounds: Dict[str, Dict[int, List[float]]], sizes: List[int], nprocs: int) -> List[str]:
    """minidp shm against PyTorch gloo and mpi4py: bus bandwidth and latency, best and median."""
    lines = []
    for name in ("minidp-shm", "minidp-shm-zc"):
        if name not in rounds:
            continue
        for nbytes in sizes:
            ours = rounds[name][nbytes]
            best, median = min(ours), statistics.median(ours)
            cells = [
                (
                    f"best {best * 1e6:,.1f} us / median {median * 1e6:,.1f} us "
                    f"({bus_bandwidth(nbytes, best, nprocs, name) / 1e9:.2f} / "
                    f"{bus_bandwidth(nbytes, median, nprocs, name) / 1e9:.2f} GB/s)"
                )
            ]
            for other in ("torch-gloo", "mpi4py"):
                if other in rounds:
                    theirs = rounds[other][nbytes]
                    cells.append(
                        f"{min(theirs) / min(ours):.2f}x (median "
                        f"{statistics.median(theirs) / statistics.median(ours):.2f}x) "
                        f"{CONTENDERS[other]}'s speed"
                    )
            lines.append(f"- {CONTENDERS[name]} at {format_size(nbytes)}: " + ", ".join(cells))
    return lines


def load_note(before: List[float], after: List[float]) -> str:
    """The load averages around the run: timings from a shared machine need them to be read."""

    def text(load: List[float]) -> str:
        return "/".join(f"{x:.2f}" for x in load)

    return (
        f"load average (1/5/15 min) on {os.cpu_count()} cores: {text(before)} before, "
        f"{text(after)} after (above the core count, contenders shared cores with other work)"
    )


def report(results: Dict[str, Dict[int, float]], sizes: List[int], nprocs: int) -> str:
    names = [n for n in CONTENDERS if n in results]
    lines = [
        f"All-reduce of float32 on {nprocs} ranks (time per call / bus bandwidth GB/s); "
        "loopback = per-direction bandwidth of a two-way TCP exchange",
        "",
        "| size | " + " | ".join(CONTENDERS[n] for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for nbytes in sizes:
        cells = []
        for name in names:
            seconds = results[name][nbytes]
            bandwidth = bus_bandwidth(nbytes, seconds, nprocs, name) / 1e9
            cells.append(f"{seconds * 1e6:,.0f} us / {bandwidth:.2f}")
        lines.append(f"| {format_size(nbytes)} | " + " | ".join(cells) + " |")
    lines.append("")
    gloo = results.get("minidp-gloo", {})
    for nbytes in sizes:
        notes = []
        if "torch-gloo" in results:
            torch_seconds = results["torch-gloo"][nbytes]
            notes.append(f"{torch_seconds / gloo[nbytes]:.2f}x PyTorch gloo's bandwidth")
        if "loopback" in results:
            ceiling = bus_bandwidth(nbytes, results["loopback"][nbytes], nprocs, "loopback")
            notes.append(f"{bus_bandwidth(nbytes, gloo[nbytes], nprocs, 'gloo') / ceiling:.0%} of the loopback ceiling")
        if notes:
            lines.append(f"- minidp gloo at {format_size(nbytes)}: " + ", ".join(notes))
    return "\n".join(lines)


def plot(results: Dict[str, Dict[int, float]], sizes: List[int], nprocs: int, path: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name in CONTENDERS:
        if name not in results:
            continue
        values = [bus_bandwidth(s, results[name][s], nprocs, name) / 1e9 for s in sizes]
        axis.plot(sizes, values, marker="o", label=CONTENDERS[name], linestyle="--" if name == "loopback" else "-")
    axis.set_xscale("log", base=2)
    axis.set_xticks(sizes, [format_size(s) for s in sizes])
    axis.set_xlabel("message size (float32 all-reduce)")
    axis.set_ylabel("bus bandwidth (GB/s)")
    axis.set_title(f"All-reduce on {nprocs} ranks, 127.0.0.1")
    axis.grid(True, alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated sizes in bytes, with K/M suffixes")
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated contenders to run (default: all available of {', '.join(CONTENDERS)})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="run every contender this many "
        "times, alternating, and keep each size's best (damps noise from other "
        "load)",
    )
    parser.add_argument(
        "--plot",
        help="PNG path ('' for none)",
        default=str(Path(__file__).resolve().parent / "out" / "bench_collectives.png"),
    )
    parser.add_argument("--json", default="", help="also write the raw timings here")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if args.worker:
        result = WORKERS[args.worker](sizes)
        if int(os.environ.get("RANK", os.environ.get("PMI_RANK", "0"))) == 0:
            print("RESULT " + json.dumps(result), flush=True)
        return
    names = [n.strip() for n in args.only.split(",") if n.strip()] or available_contenders(args.nprocs)
    rounds: Dict[str, Dict[int, List[float]]] = {}
    load_before = list(os.getloadavg())
    for round_index in range(args.rounds):
        for name in names:
            print(f"round {round_index + 1}/{args.rounds}: {CONTENDERS[name]} ...", file=sys.stderr, flush=True)
            for nbytes, seconds in run_contender(name, args.nprocs, sizes).items():
                rounds.setdefault(name, {}).setdefault(nbytes, []).append(seconds)
    results = {name: {nbytes: min(times) for nbytes, times in by_size.items()} for name, by_size in rounds.items()}
    print(report(results, sizes, args.nprocs))
    print("\n".join(shared_memory_notes(rounds, sizes, args.nprocs)))
    print(load_note(load_before, list(os.getloadavg())))
    if args.json:
        Path(args.json).write_text(
            json.dumps({n: {str(k): v for k, v in r.items()} for n, r in results.items()}, indent=1)
        )
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        plot(results, sizes, args.nprocs, args.plot)


if __name__ == "__main__":
    main()
