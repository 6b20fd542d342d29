"""Sharded data parallelism: the memory each rank holds, and step time against DataParallel.

    python tools/bench_sharding.py memory [--ranks 1,2,4] [--width 2500] [--layers 4]
    python tools/bench_sharding.py speed [--ranks 2] [--steps 20] [--rounds 3] [--model bench|big]
    python tools/bench_sharding.py section [--steps 20] [--rounds 3] > sharding.md

``memory`` trains an MLP of ``--layers`` square Linear layers of ``--width`` (4 x 2500 x 2500:
25 M float32 parameters, about 100 MB) with Adam, for DataParallel and each level of
``group_sharded_parallel``, on 1, 2 and 4 gloo ranks (fresh processes on 127.0.0.1), and reports
per rank, from the arrays' own sizes:

- params, grads, state: bytes of parameters, gradients and optimizer state the rank holds after
  a backward pass (before the step), i.e. what stays between steps;
- peak: the largest amount of memory held at once during one whole step (forward, backward,
  optimizer step) beyond what was held before it, by tracemalloc, with the batch and
  activations: NumPy's arrays and ``p_g_os``'s gathered parameters (their buffers report to
  tracemalloc while held); the process group's shared memory is not in it.

On 1 rank there is nothing to shard: each level is the plain model (DataParallel warns).

``speed`` times steps of DataParallel and each level on ``--ranks`` ranks, each rank with one
BLAS thread: after 3 warm-up steps, ``--rounds`` rounds of ``--steps`` steps per level, the levels
alternating step by step so that they share the machine's noise; per round the median step of
the slowest rank, and the median of the rounds. ``--model bench`` is tools/bench_dp.py's MLP
784-1024-1024-10 with batch 64 and SGD, ``big`` the memory model with Adam (batch 32).

``section`` runs both at 2 ranks (both models) and prints the Markdown section of
docs/benchmarks.md with the run's details, for ``python tools/report.py --include``. Model
set-up and the byte counts are tools/sharding_setup.py's, shared with the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timezone
from typing import Any, Dict, List

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import sharding_setup  # noqa: E402
from bench_models import commit, load_average, machine  # noqa: E402
from sharding_setup import LEVELS, held_bytes  # noqa: E402


def build(sizes: List[int]) -> Any:
    import minidp
    import minidp.nn as nn

    minidp.seed(1)
    layers = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def wrap(level: str, model: Any, optimizer_name: str) -> tuple:
    import minidp.optimizer as optim

    make = {
        "adam": lambda params: optim.Adam(learning_rate=1e-4, parameters=params),
        "sgd": lambda params: optim.SGD(learning_rate=1e-3, parameters=params),
    }[optimizer_name]
    return sharding_setup.wrap(level, model, make(model.parameters()), segment_size=2**16)


def batch(rank: int, sizes: List[int], rows: int) -> tuple:
    import minidp

    rng = np.random.default_rng(rank)
    x = minidp.to_tensor(rng.standard_normal((rows, sizes[0])).astype("float32"))
    y = minidp.to_tensor(rng.integers(0, sizes[-1], rows).astype("int64"))
    return x, y


def step(model: Any, optimizer: Any, x: Any, y: Any) -> None:
    import minidp.nn.functional as F

    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.clear_grad()


def memory_worker(sizes: List[int], output: str) -> None:
    import minidp.distributed as dist

    dist.init_parallel_env()
    rank = dist.get_rank()
    x, y = batch(rank, sizes, 8)
    results = {}
    for level in LEVELS:
        model, optimizer = wrap(level, build(sizes), "adam")
        step(model, optimizer, x, y)  # the optimizer state exists from the first step on
        import minidp.nn.functional as F

        F.cross_entropy(model(x), y).backward()
        between = held_bytes(model, optimizer)
        optimizer.step()
        optimizer.clear_grad()
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        step(model, optimizer, x, y)
        between["peak"] = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        results[level] = between
        del model, optimizer
    with open(os.path.join(output, f"rank-{rank}.json"), "w") as f:
        json.dump(results, f)


def speed_worker(sizes: List[int], rows: int, optimizer_name: str, steps: int, rounds: int, output: str) -> None:
    import minidp.distributed as dist

    dist.init_parallel_env()
    rank = dist.get_rank()
    x, y = batch(rank, sizes, rows)
    runs = {level: wrap(level, build(sizes), optimizer_name) for level in LEVELS}
    for model, optimizer in runs.values():
        for _ in range(3):  # warm-up
            step(model, optimizer, x, y)
    medians: Dict[str, List[float]] = {level: [] for level in LEVELS}
    for _ in range(rounds):
        times: Dict[str, List[float]] = {level: [] for level in LEVELS}
        for _ in range(steps):  # the levels alternate step by step, so they share the machine's noise
            for level, (model, optimizer) in runs.items():
                dist.barrier()
                start = time.perf_counter()
                step(model, optimizer, x, y)
                times[level].append(time.perf_counter() - start)
        for level, values in times.items():
            medians[level].append(statistics.median(values))
    with open(os.path.join(output, f"rank-{rank}.json"), "w") as f:
        json.dump(medians, f)


def run(target: Any, ranks: int, args: tuple) -> List[dict]:
    """``target(*args, output)`` on ``ranks`` fresh processes; each rank's JSON result."""
    import minidp.distributed as dist

    with tempfile.TemporaryDirectory() as output:
        if ranks == 1:
            target(*args, output)
        else:
            dist.spawn(target, args=(*args, output), nprocs=ranks, backend="gloo")
        return [json.load(open(os.path.join(output, f"rank-{r}.json"))) for r in range(ranks)]


def mb(value: float) -> str:
    return f"{value / 1e6:.1f}"


def memory_table(counts: List[int], big: List[int]) -> str:
    """The memory table (Markdown) for the MLP of layer sizes ``big`` on each rank count."""
    params = sum(a * b + b for a, b in zip(big, big[1:]))
    lines = [
        f"MLP {'-'.join(map(str, big))}: {params / 1e6:.1f} M float32 parameters ({mb(params * 4)} MB), Adam, "
        "batch 8 per rank\n",
        "| ranks | level | params MB | grads MB | optimizer state MB | total MB | peak during a step MB |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for ranks in counts:
        reports = run(memory_worker, ranks, (big,))
        for level in LEVELS:
            worst = {key: max(r[level][key] for r in reports) for key in reports[0][level]}
            total = worst["params"] + worst["grads"] + worst["state"]
            lines.append(
                f"| {ranks} | {level} | {mb(worst['params'])} | {mb(worst['grads'])} | "
                f"{mb(worst['state'])} | {mb(total)} | {mb(worst['peak'])} |"
            )
    lines.append("\n(largest value over the ranks; peak includes the batch and activations)")
    return "\n".join(lines)


def speed_table(ranks: int, model: str, big: List[int], steps: int, rounds: int) -> str:
    """The step-time table (Markdown) of each level against DataParallel."""
    sizes, rows, name = ([784, 1024, 1024, 10], 64, "sgd") if model == "bench" else (big, 32, "adam")
    reports = run(speed_worker, ranks, (sizes, rows, name, steps, rounds))
    slowest = {level: [max(r[level][k] for r in reports) for k in range(rounds)] for level in LEVELS}
    dp = statistics.median(slowest["dp"])
    lines = [
        f"MLP {'-'.join(map(str, sizes))}, batch {rows} per rank, {name}, {ranks} gloo ranks; per round the "
        f"median of {steps} steps of each level, the levels alternating step by step (slowest rank); "
        f"median of {rounds} rounds\n",
        "| level | step ms (median of rounds) | vs DataParallel | each round ms |",
        "|---|---:|---:|---|",
    ]
    for level in LEVELS:
        seconds = statistics.median(slowest[level])
        each = " / ".join(f"{t * 1e3:.1f}" for t in slowest[level])
        lines.append(f"| {level} | {seconds * 1e3:.1f} | {seconds / dp:.2f}x | {each} |")
    return "\n".join(lines)


def section(big: List[int], steps: int, rounds: int) -> str:
    """The Markdown section for docs/benchmarks.md: the run's details, the memory table at 2
    ranks and the step times of both models at 2 ranks (``python tools/report.py --include``)."""
    load_before, started = load_average(), datetime.now(timezone.utc)
    memory = memory_table([2], big)
    speed = [speed_table(2, model, big, steps, rounds) for model in ("bench", "big")]
    return "\n".join(
        [
            f"## Sharded data parallelism (tools/bench_sharding.py), {started:%Y-%m-%d %H:%M} UTC",
            "",
            f"- commit: {commit()}",
            f"- machine: {machine()}; python {platform.python_version()}",
            f"- load average: {load_before} at the start, {load_average()} at the end",
            "- gloo on shared memory, one BLAS thread per rank; peak: tracemalloc during one whole step",
            "",
            "Memory per rank (2 ranks):",
            "",
            memory,
            "",
            "Step time (2 ranks):",
            "",
            speed[0],
            "",
            speed[1],
        ]
    )


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["memory", "speed", "section"])
    parser.add_argument("--ranks", default=None, help="comma-separated rank counts")
    parser.add_argument("--width", type=int, default=2500)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=["bench", "big"], default="bench")
    args = parser.parse_args(argv)
    big = [args.width] * (args.layers + 1)
    if args.mode == "memory":
        print(memory_table([int(n) for n in (args.ranks or "1,2,4").split(",")], big))
    elif args.mode == "speed":
        print(speed_table(int(args.ranks or "2"), args.model, big, args.steps, args.rounds))
    else:
        print(section(big, args.steps, args.rounds))


if __name__ == "__main__":
    main(sys.argv[1:])
