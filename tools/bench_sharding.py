"""Sharded data parallelism: the memory each rank holds, and step time against DataParallel.

    python tools/bench_sharding.py memory [--ranks 1,2,4] [--width 2500] [--layers 4]
    python tools/bench_sharding.py speed [--ranks 2] [--steps 20] [--model bench|big]

``memory`` trains an MLP of ``--layers`` square Linear layers of ``--width`` (4 x 2500 x 2500:
25 M float32 parameters, about 100 MB) with Adam, for DataParallel and each level of
``group_sharded_parallel``, on 1, 2 and 4 gloo ranks (fresh processes on 127.0.0.1), and reports
per rank, from the arrays' own sizes:

- params, grads, state: bytes of parameters, gradients and optimizer state the rank holds after
  a backward pass (before the step), i.e. what stays between steps;
- peak: the largest amount of memory NumPy held at once during one whole step (forward, backward,
  optimizer step), by tracemalloc, with the batch and activations; the process group's shared
  memory is not in it.

On 1 rank there is nothing to shard: each level is the plain model (DataParallel warns).

``speed`` times steps of DataParallel and each level on ``--ranks`` ranks (median of
``--steps`` after 3 warm-up steps, the levels alternating step by step, each rank with one BLAS
thread): ``--model bench`` is
tools/bench_dp.py's MLP 784-1024-1024-10 with batch 64 and SGD, ``big`` the memory model with
Adam. Prints Markdown tables; a row per configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from typing import Any, Dict, List

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import sharding_setup  # noqa: E402
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


def speed_worker(sizes: List[int], rows: int, optimizer_name: str, steps: int, output: str) -> None:
    import minidp.distributed as dist

    dist.init_parallel_env()
    rank = dist.get_rank()
    x, y = batch(rank, sizes, rows)
    runs = {level: wrap(level, build(sizes), optimizer_name) for level in LEVELS}
    for model, optimizer in runs.values():
        for _ in range(3):  # warm-up
            step(model, optimizer, x, y)
    times: Dict[str, List[float]] = {level: [] for level in LEVELS}
    for _ in range(steps):  # the levels alternate step by step, so they share the machine's noise
        for level, (model, optimizer) in runs.items():
            dist.barrier()
            start = time.perf_counter()
            step(model, optimizer, x, y)
            times[level].append(time.perf_counter() - start)
    with open(os.path.join(output, f"rank-{rank}.json"), "w") as f:
        json.dump({level: statistics.median(values) for level, values in times.items()}, f)


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


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["memory", "speed"])
    parser.add_argument("--ranks", default=None, help="comma-separated rank counts")
    parser.add_argument("--width", type=int, default=2500)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--model", choices=["bench", "big"], default="bench")
    args = parser.parse_args(argv)
    big = [args.width] * (args.layers + 1)
    if args.mode == "memory":
        counts = [int(n) for n in (args.ranks or "1,2,4").split(",")]
        params = sum(a * b + b for a, b in zip(big, big[1:]))
        print(f"MLP {'-'.join(map(str, big))}: {params / 1e6:.1f} M float32 parameters ({mb(params * 4)} MB), Adam\n")
        print("| ranks | level | params MB | grads MB | optimizer state MB | total MB | peak during a step MB |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for ranks in counts:
            reports = run(memory_worker, ranks, (big,))
            for level in LEVELS:
                worst = {key: max(r[level][key] for r in reports) for key in reports[0][level]}
                total = worst["params"] + worst["grads"] + worst["state"]
                print(
                    f"| {ranks} | {level} | {mb(worst['params'])} | {mb(worst['grads'])} | "
                    f"{mb(worst['state'])} | {mb(total)} | {mb(worst['peak'])} |"
                )
        print("\n(largest value over the ranks; peak includes the batch and activations)")
    else:
        ranks = int(args.ranks or "2")
        sizes, rows, name = ([784, 1024, 1024, 10], 64, "sgd") if args.model == "bench" else (big, 32, "adam")
        reports = run(speed_worker, ranks, (sizes, rows, name, args.steps))
        dp = max(r["dp"] for r in reports)
        print(f"MLP {'-'.join(map(str, sizes))}, batch {rows} per rank, {name}, {ranks} gloo ranks\n")
        print("| level | step ms (median, slowest rank) | vs DataParallel |")
        print("|---|---:|---:|")
        for level in LEVELS:
            seconds = max(r[level] for r in reports)
            print(f"| {level} | {seconds * 1e3:.1f} | {seconds / dp:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1:])
