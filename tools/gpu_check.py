"""One command for the first GPU: run what CI cannot, in at most 8 minutes, and print one table.

    python tools/gpu_check.py            on a machine with an NVIDIA GPU and CuPy installed
    python tools/gpu_check.py --dry-run  print the steps and their time limits, run nothing

It installs nothing and runs from the source tree (the repository root goes first on the path of
every process it starts). The steps, each a process of its own with its own time limit (a step
that overruns is killed and reported as such; the limits add up to under 8 minutes):

  gpu-tests    the tests marked ``gpu`` (python -m pytest -m gpu tests)
  digits       examples/train_digits.py on the GPU, 3 epochs (needs scikit-learn and tqdm)
  dp-1-rank    an nccl group of one rank, and DataParallel on it, against plain training
  dp-2-ranks   DataParallel on two ranks sharing the GPU against one process, if NCCL allows it
  optimizers   fused Adam and SGD on the GPU against the NumPy step, bit for bit
  bucket-pack  the bucket-packing kernel's throughput against a device-to-device copy
  torch-mlp    a large MLP's training step against PyTorch on the same GPU (where installed)

Where CuPy sees no GPU it says "no GPU visible" and exits with code 2 (``--dry-run`` still prints
the steps). The exit code is 1 when a step failed or ran out of time, 0 otherwise (skipped steps
and NCCL's refusal to put two ranks on one GPU are reported, not failures).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
TOTAL_SECONDS = 480  # the promise: the whole check within 8 minutes
RESULT_PREFIX = "GPU_CHECK_RESULT "
NO_GPU = 2


@dataclass(frozen=True)
class Step:
    """One check: its name, what it does, its time limit in seconds, and the command line that
    runs it (made when the step starts)."""

    name: str
    description: str
    timeout: float
    command: Callable[[], List[str]]


@dataclass
class Outcome:
    """How a step ended: ok, FAILED, TIMEOUT, skipped or refused; its figure and its seconds."""

    step: str
    status: str
    figure: str
    seconds: float


def _own_step(name: str) -> Callable[[], List[str]]:
    return lambda: [sys.executable, str(Path(__file__).resolve()), "--step", name]


STEPS: Tuple[Step, ...] = (
    Step("gpu-tests", "the tests marked gpu (pytest -m gpu)", 150, _own_step("gpu-tests")),
    Step("digits", "examples/train_digits.py on the GPU, 3 epochs", 70, _own_step("digits")),
    Step("dp-1-rank", "nccl group of one rank, DataParallel on it vs plain", 40, _own_step("dp-1-rank")),
    Step("dp-2-ranks", "DataParallel over nccl, two ranks sharing the GPU", 50, _own_step("dp-2-ranks")),
    Step("optimizers", "fused Adam and SGD against the NumPy step", 40, _own_step("optimizers")),
    Step("bucket-pack", "bucket-packing kernel vs device-to-device copy", 30, _own_step("bucket-pack")),
    Step("torch-mlp", "large-MLP training step against PyTorch", 60, _own_step("torch-mlp")),
)


def environment() -> Dict[str, str]:
    """This environment with the repository first on PYTHONPATH (the source tree is tested)."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def visible_gpus() -> int:
    """How many CUDA devices CuPy sees (0 without CuPy, a driver or a device)."""
    sys.path.insert(0, str(REPO))
    from minidp.core.backend import cuda_device_count

    return cuda_device_count()


# --------------------------------------------------------------------------------------------
# Running the steps (parent side)
# --------------------------------------------------------------------------------------------


def _last_result(output: str) -> Optional[dict]:
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    return None


def _pytest_figure(output: str) -> str:
    """pytest's closing counts (``12 passed, 3 skipped in 40.1s``), or its last line."""
    lines = [line.strip("= ") for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.search(r"\d+ (passed|failed|error|skipped|deselected)", line):
            return line
    return lines[-1] if lines else "no output"


def run_step(step: Step, timeout: float, log: Path) -> Outcome:
    """Run ``step`` in a new process group, killed with its children after ``timeout`` seconds;
    its output goes to ``log``. The step's status and figure are those of the result line it
    printed last; without one it failed."""
    started = time.monotonic()
    with open(log, "w") as output:
        process = subprocess.Popen(
            step.command(),
            cwd=REPO,
            env=environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return Outcome(step.name, "TIMEOUT", f"killed after {timeout:.0f} s; output in {log}", timeout)
    seconds = time.monotonic() - started
    text = log.read_text(errors="replace")
    result = _last_result(text)
    if result is not None:
        return Outcome(step.name, result["status"], result["figure"], seconds)
    tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
    return Outcome(step.name, "FAILED", f"exit code {code}: {tail}", seconds)


def summary_table(outcomes: Sequence[Outcome]) -> str:
    """The Markdown table of every step: step, status, figure, seconds."""
    lines = ["| step | status | figure | seconds |", "|---|---|---|---|"]
    for outcome in outcomes:
        figure = outcome.figure.replace("|", "/").replace("\n", " ")
        lines.append(f"| {outcome.step} | {outcome.status} | {figure} | {outcome.seconds:.1f} |")
    return "\n".join(lines)


def run_all(steps: Sequence[Step], budget: float, logs: Path) -> List[Outcome]:
    """Run ``steps`` in order, each within its own limit and what is left of ``budget``."""
    deadline = time.monotonic() + budget
    outcomes = []
    for step in steps:
        left = deadline - time.monotonic()
        if left < 5:
            outcomes.append(Outcome(step.name, "skipped", "no time left in the 8-minute budget", 0.0))
            continue
        print(f"[gpu_check] {step.name}: {step.description} (limit {min(step.timeout, left):.0f} s)", flush=True)
        outcome = run_step(step, min(step.timeout, left), logs / f"{step.name}.log")
        print(f"[gpu_check] {step.name}: {outcome.status} ({outcome.seconds:.1f} s) {outcome.figure}", flush=True)
        outcomes.append(outcome)
    return outcomes


# --------------------------------------------------------------------------------------------
# The steps (each runs in a process of its own and prints one result line)
# --------------------------------------------------------------------------------------------


def report(status: str, figure: str) -> None:
    print(RESULT_PREFIX + json.dumps({"status": status, "figure": figure}), flush=True)


def step_gpu_tests() -> None:
    """pytest -m gpu over the tests (in this process group, so the time limit stops it too)."""
    import importlib.util

    if importlib.util.find_spec("pytest") is None:
        report("skipped", "pytest is not installed")
        return
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", str(REPO / "tests")]
    done = subprocess.run(command, cwd=REPO, env=environment(), capture_output=True, text=True)
    print(done.stdout + done.stderr)
    report("ok" if done.returncode == 0 else "FAILED", _pytest_figure(done.stdout + done.stderr))


def step_digits() -> None:
    import importlib.util
    import runpy

    missing = [name for name in ("sklearn", "tqdm") if importlib.util.find_spec(name) is None]
    if missing:
        report("skipped", f"the example needs {' and '.join(missing)}, which are not installed")
        return
    import io
    from contextlib import redirect_stdout

    import minidp

    minidp.set_device("gpu:0")
    printed = io.StringIO()
    with tempfile.TemporaryDirectory() as folder:
        argv = ["train_digits.py", "--epochs", "3", "--quiet", "--checkpoint", os.path.join(folder, "digits.ckpt")]
        sys.argv = argv
        with redirect_stdout(printed):
            runpy.run_path(str(REPO / "examples" / "train_digits.py"), run_name="__main__")
    print(printed.getvalue())
    final = [line for line in printed.getvalue().splitlines() if line.startswith("final test accuracy")]
    accuracy = float(final[-1].split()[3]) if final else 0.0
    report("ok" if accuracy > 0.8 else "FAILED", final[-1].split(";")[0] if final else "no final accuracy printed")


_DP_STEPS, _DP_BATCH = 5, 64


def _dp_batches():
    import numpy as np

    data = np.random.default_rng(5)
    return [
        (
            data.standard_normal((_DP_BATCH, 32)).astype("float32"),
            data.standard_normal((_DP_BATCH, 4)).astype("float32"),
        )
        for _ in range(_DP_STEPS)
    ]


def _dp_train(rank: int, size: int, data_parallel: bool, group: object = None) -> dict:
    """An MLP trained for a few SGD steps on rank's share of each batch (wrapped in DataParallel,
    on ``group`` when given); its final state."""
    import minidp
    import minidp.nn.functional as F

    minidp.seed(0)
    net = minidp.nn.Sequential(minidp.nn.Linear(32, 64), minidp.nn.Tanh(), minidp.nn.Linear(64, 4))
    model = minidp.DataParallel(net, group=group) if data_parallel else net
    optimizer = minidp.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    rows = slice(rank * _DP_BATCH // size, (rank + 1) * _DP_BATCH // size)
    for x, y in _dp_batches():
        loss = F.mse_loss(model(minidp.to_tensor(x[rows])), minidp.to_tensor(y[rows]))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return {name: value.numpy() for name, value in net.state_dict().items()}


def rank_dp(folder: str) -> None:
    """One rank of the DataParallel check: nccl, then its final state into ``folder``."""
    import numpy as np

    import minidp.distributed as dist

    group = dist.init_parallel_env()
    if group.backend != "nccl":
        raise RuntimeError(f"the job runs on {group.backend}, not nccl")
    state = _dp_train(dist.get_rank(), dist.get_world_size(), data_parallel=True)
    np.savez(os.path.join(folder, f"rank{dist.get_rank()}.npz"), **state)
    dist.barrier()


def step_dp_one_rank() -> None:
    """An nccl group of one rank on GPU 0 (init_parallel_env makes none for a single process, so
    the group is made directly): a collective on it, then DataParallel on it, which at world size
    1 trains alone and must equal plain training."""
    import cupy
    import numpy as np

    import minidp
    from minidp.core.distributed.backends import GroupSpec, ReduceOp
    from minidp.core.distributed.store import TCPStore
    from minidp.distributed.backends import nccl

    minidp.set_device("gpu:0")
    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=30)
    group = nccl.create_process_group(
        GroupSpec(name="gpu-check", global_ranks=(0,), global_rank=0, timeout=20, store=store)
    )
    try:
        values = cupy.arange(1 << 20, dtype=cupy.float32)
        group.all_reduce(values, ReduceOp.SUM)
        summed = bool((values == cupy.arange(1 << 20, dtype=cupy.float32)).all())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DataParallel says that world size 1 trains alone
            wrapped = _dp_train(0, 1, data_parallel=True, group=group)
        group.barrier()
    finally:
        group.shutdown()
    plain = _dp_train(0, 1, data_parallel=False)
    same = all(wrapped[name].tobytes() == value.tobytes() for name, value in plain.items())
    worst = max(float(np.max(np.abs(wrapped[name] - value))) for name, value in plain.items())
    report(
        "ok" if summed and same else "FAILED",
        f"nccl group of 1 on gpu:0: all_reduce {'exact' if summed else 'WRONG'}; DataParallel on it, "
        f"{_DP_STEPS} steps: max |difference| from plain training {worst:.1e}",
    )


# What NCCL says when it will not put two ranks on one device ("Duplicate GPU detected" in its
# warnings, NCCL_ERROR_INVALID_USAGE from the call).
_NCCL_REFUSAL = r"duplicate gpu|invalid.usage"


def step_dp(nprocs: int) -> None:
    """``nprocs`` ranks on GPU 0 (started as the launcher starts them), then the same training in
    this process without DataParallel: the parameters must agree."""
    import numpy as np

    from minidp.core.distributed.job import plan_local_job

    plan = plan_local_job(nprocs, "nccl", devices=[0] * nprocs)
    with tempfile.TemporaryDirectory() as folder:
        ranks = []
        try:
            for env in plan.envs:
                ranks.append(
                    subprocess.Popen(
                        [sys.executable, str(Path(__file__).resolve()), "--rank-dp", folder],
                        env={**environment(), **env, "PADDLE_PG_TIMEOUT": "20000", "NCCL_DEBUG": "WARN"},
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                )
            outputs = [rank.communicate(timeout=35)[0] for rank in ranks]
        except subprocess.TimeoutExpired:
            report("FAILED", f"the {nprocs} rank(s) did not finish within 35 s (the group timeout is 20 s)")
            return
        finally:
            for rank in ranks:
                if rank.poll() is None:
                    rank.kill()
                    rank.wait()
            plan.release()
        codes = [rank.returncode for rank in ranks]
        if any(codes):
            text = "\n".join(outputs)
            print(text)
            said = [line.strip() for line in text.splitlines() if re.search(_NCCL_REFUSAL, line, re.IGNORECASE)]
            if said:
                report("refused", f"NCCL: {said[0][:300]}")
            else:
                last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
                report("FAILED", f"exit codes {codes}: {last[0][:300]}")
            return
        states = [dict(np.load(os.path.join(folder, f"rank{r}.npz"))) for r in range(nprocs)]
    import minidp

    minidp.set_device("gpu:0")
    reference = _dp_train(0, 1, data_parallel=False)
    worst = max(float(np.max(np.abs(state[name] - wanted))) for state in states for name, wanted in reference.items())
    agree = all(
        np.allclose(state[name], wanted, rtol=1e-4, atol=1e-5) for state in states for name, wanted in reference.items()
    )
    report(
        "ok" if agree else "FAILED",
        f"{nprocs} rank(s), {_DP_STEPS} steps: max |difference| from one process {worst:.2e}",
    )


def _optimizer_run(place: str, name: str) -> Tuple[dict, int]:
    """Three steps of ``name`` on ``place`` with fixed gradients: parameters, and kernel launches."""
    import numpy as np

    import minidp
    from minidp.core import kernels

    launches = []
    real_launch = kernels.launch
    kernels.launch = lambda plan: (launches.append(plan.name), real_launch(plan))[1]
    try:
        minidp.set_device(place)
        minidp.seed(0)
        net = minidp.nn.Sequential(minidp.nn.Linear(256, 512), minidp.nn.ReLU(), minidp.nn.Linear(512, 10))
        if name == "adam":
            optimizer = minidp.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters(), weight_decay=0.01)
        else:
            optimizer = minidp.optimizer.SGD(learning_rate=0.1, parameters=net.parameters(), weight_decay=0.01)
        xp = np if place == "cpu" else __import__("cupy")
        rng = np.random.default_rng(3)
        for _ in range(3):
            for param in net.parameters():
                param._grad = xp.asarray(rng.standard_normal(param.shape).astype(param._data.dtype))
            optimizer.step()
        return {key: value.numpy() for key, value in net.state_dict().items()}, len(launches)
    finally:
        kernels.launch = real_launch
        minidp.set_device("cpu")


def step_optimizers() -> None:
    figures, ok = [], True
    for name in ("adam", "sgd"):
        cpu, _ = _optimizer_run("cpu", name)
        gpu, launches = _optimizer_run("gpu:0", name)
        same = all(gpu[key].tobytes() == value.tobytes() for key, value in cpu.items())
        ok = ok and same and launches > 0
        figures.append(f"{name}: {'bit-identical' if same else 'DIFFERENT'} over 3 steps, {launches} kernel launches")
    report("ok" if ok else "FAILED", "; ".join(figures))


def step_bucket_pack() -> None:
    import cupy
    import numpy as np

    from minidp.core import kernels

    sizes = [int(n) for n in np.random.default_rng(0).integers(1 << 16, 1 << 21, 64)]
    sources = [cupy.random.standard_normal(n, dtype=cupy.float32) for n in sizes]
    offsets = [int(n) for n in np.cumsum([0] + sizes[:-1])]
    flat = cupy.empty(sum(sizes), cupy.float32)
    copy = cupy.empty_like(flat)
    nbytes = flat.nbytes

    def timed(action: Callable[[], None], repeats: int = 20) -> float:
        action()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(repeats):
            action()
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3 / repeats

    pack = timed(lambda: kernels.pack(sources, flat, offsets, 0.5))
    memcpy = timed(lambda: copy.data.copy_from_device_async(flat.data, nbytes))
    if not bool((flat[: sizes[0]] == sources[0] * 0.5).all()):
        report("FAILED", "the packed buffer does not hold the scaled sources")
        return
    pack_rate, copy_rate = 2 * nbytes / pack / 1e9, 2 * nbytes / memcpy / 1e9
    report(
        "ok",
        f"{nbytes / 2**20:.0f} MiB in {len(sizes)} tensors: pack {pack_rate:.0f} GB/s, device copy "
        f"{copy_rate:.0f} GB/s ({pack_rate / copy_rate:.0%}); bytes read + written per second",
    )


def step_torch_mlp() -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        report("skipped", "PyTorch is not installed")
        return
    import torch

    if not torch.cuda.is_available():
        report("skipped", f"PyTorch {torch.__version__} sees no CUDA device (a CPU-only build?)")
        return
    import cupy
    import numpy as np

    import minidp
    import minidp.nn.functional as F

    widths, batch, repeats = [4096, 4096, 4096, 10], 512, 20
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((batch, widths[0])).astype("float32")
    y_host = rng.integers(0, widths[-1], batch).astype("int64")

    minidp.set_device("gpu:0")
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [minidp.nn.Linear(a, b), minidp.nn.ReLU()]
    net = minidp.nn.Sequential(*layers[:-1])
    optimizer = minidp.optimizer.SGD(learning_rate=0.01, parameters=net.parameters())
    x, y = minidp.to_tensor(x_host), minidp.to_tensor(y_host)

    def minidp_step() -> None:
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        optimizer.clear_grad()

    torch_layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        torch_layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    torch_net = torch.nn.Sequential(*torch_layers[:-1]).cuda()
    torch_optimizer = torch.optim.SGD(torch_net.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()

    def torch_step() -> None:
        torch.nn.functional.cross_entropy(torch_net(tx), ty).backward()
        torch_optimizer.step()
        torch_optimizer.zero_grad()

    def timed(step: Callable[[], None], synchronize: Callable[[], None]) -> float:
        for _ in range(3):
            step()
        synchronize()
        started = time.perf_counter()
        for _ in range(repeats):
            step()
        synchronize()
        return (time.perf_counter() - started) / repeats

    ours = timed(minidp_step, cupy.cuda.Device().synchronize)
    theirs = timed(torch_step, torch.cuda.synchronize)
    report(
        "ok",
        f"MLP {'-'.join(map(str, widths))}, batch {batch}, SGD: minidp {ours * 1e3:.2f} ms, "
        f"PyTorch {torch.__version__} {theirs * 1e3:.2f} ms per step ({ours / theirs:.2f}x)",
    )


STEP_BODIES: Dict[str, Callable[[], None]] = {
    "gpu-tests": step_gpu_tests,
    "digits": step_digits,
    "dp-1-rank": step_dp_one_rank,
    "dp-2-ranks": lambda: step_dp(2),
    "optimizers": step_optimizers,
    "bucket-pack": step_bucket_pack,
    "torch-mlp": step_torch_mlp,
}


# --------------------------------------------------------------------------------------------


def dry_run(gpus: int) -> None:
    print("GPU visible: " + (f"{gpus} device(s)" if gpus else "no GPU visible (nothing would run)"))
    print(f"steps, in order, each in a process of its own (total limit {TOTAL_SECONDS} s):")
    for step in STEPS:
        print(f"  {step.name:12s} limit {step.timeout:4.0f} s  {step.description}")
        print(f"  {'':12s} runs: {' '.join(step.command())}")
    print(f"limits add up to {sum(step.timeout for step in STEPS):.0f} s")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the steps and their limits; run nothing")
    parser.add_argument("--step", choices=sorted(STEP_BODIES), help=argparse.SUPPRESS)
    parser.add_argument("--rank-dp", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rank_dp:
        rank_dp(args.rank_dp)
        return 0
    if args.step:
        STEP_BODIES[args.step]()
        return 0
    gpus = visible_gpus()
    if args.dry_run:
        dry_run(gpus)
        return 0
    if gpus == 0:
        print(
            "gpu_check: no GPU visible: CuPy is missing, or sees no CUDA device (driver, "
            "CUDA_VISIBLE_DEVICES); nothing was run (--dry-run lists the steps)",
            file=sys.stderr,
        )
        return NO_GPU
    started = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="minidp-gpu-check-"))
    outcomes = run_all(STEPS, TOTAL_SECONDS - 10, logs)
    print()
    print(summary_table(outcomes))
    print(f"\n{gpus} GPU(s) visible; total {time.monotonic() - started:.0f} s; each step's output is in {logs}")
    return 1 if any(outcome.status in ("FAILED", "TIMEOUT") for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
