"""Training steps of ordinary models in minidp against PyTorch and Paddle, at 1 and 2 threads.

Each model's step is forward + backward + Adam (lr 1e-3), float32, on a fixed random batch:
  cnn          three 3x3 convolutions (3-32-64-128, strides 1-2-2) with BatchNorm and ReLU,
               global average pool, linear; batch 32 of 3x32x32
  transformer  TransformerEncoder, 2 layers, d_model 128, 4 heads, FFN 512, dropout 0.1, mean pool,
               linear; batch 16 x 64 tokens
  lstm         LSTM language model: embedding 10000 x 128, LSTM 128, linear to 10000; batch 20 x 35
  gru          the same with a GRU
  conv3d       3-D CNN: Conv3D(1-16)-BN-ReLU-MaxPool, Conv3D(16-32)-BN-ReLU-MaxPool, global pool,
               linear; batch 8 of 1x16x32x32
  vit          ViT: 4x4 patches of 32x32 images, 4 pre-norm GELU layers, d_model 128, 4 heads,
               class token; batch 32
  resnet18     ResNet-18 (ImageNet stem) on 32x32 images, 10 classes; batch 32. minidp and Paddle
               use their vision.models.resnet18; the PyTorch one is built here with the same
               shapes (torchvision is not needed)

Every framework runs in its own worker process per thread count (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS and MKL_NUM_THREADS set, torch.set_num_threads called), with the same model
shapes, data and optimizer (initial weights are each framework's default). The driver asks the
workers in turn (minidp, torch, paddle, rotating who goes first) for a round of steps, so that
load on a shared machine hits them alike, and reports each one's median step time over the rounds.

PyTorch runs with --torch-python (default: $BENCH_TORCH_PYTHON, else /work/venvs/torch/bin/python,
else this Python), Paddle with --paddle-python (default: $BENCH_PADDLE_PYTHON, else
/work/venvs/paddle/bin/python); a framework that cannot be imported is skipped with a note.

With --baseline PATH, minidp from another checkout (say, a `git worktree` of the commit before a
change) runs as a fourth contender, interleaved like the others: before and after side by side.

Usage: python tools/bench_models.py [--quick] [--models cnn,lstm] [--threads 1,2] [--rounds N]
       [--baseline PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("cnn", "transformer", "lstm", "gru", "conv3d", "vit", "resnet18")
QUICK_MODELS = ("cnn", "lstm")
FRAMEWORKS = ("minidp", "baseline", "torch", "paddle")  # baseline: minidp from another checkout
ROUND_SECONDS = 0.3  # each round runs about this long per framework
VOCAB, EMBED, HIDDEN, LM_BATCH, LM_STEPS = 10000, 128, 128, 20, 35


# --- data ---------------------------------------------------------------------------------------
def model_data(name: str) -> tuple:
    """The fixed batch (inputs, integer labels) of model ``name``, the same in every framework."""
    import numpy as np

    rng = np.random.default_rng(0)
    if name in ("lstm", "gru"):
        return rng.integers(0, VOCAB, (LM_BATCH, LM_STEPS)), rng.integers(0, VOCAB, LM_BATCH * LM_STEPS)
    shapes = {
        "cnn": (32, 3, 32, 32),
        "transformer": (16, 64, 128),
        "conv3d": (8, 1, 16, 32, 32),
        "vit": (32, 3, 32, 32),
        "resnet18": (32, 3, 32, 32),
    }
    shape = shapes[name]
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, shape[0])


# --- the convolutional models, in every framework ---------------------------------------------------
def conv_model(nn: Any, name: str, suffix: str) -> Any:
    """The ``cnn`` or ``conv3d`` model built from the layer module ``nn``: minidp's or Paddle's
    (layer names end in ``D``, as ``Conv2D``) or PyTorch's (``suffix`` ``d``, as ``Conv2d``)."""
    dims = 2 if name == "cnn" else 3

    def layer(kind: str) -> Any:
        return getattr(nn, f"{kind}{dims}{suffix}")

    def conv_block(c_in: int, c_out: int, stride: int) -> list:
        return [layer("Conv")(c_in, c_out, 3, stride=stride, padding=1), layer("BatchNorm")(c_out), nn.ReLU()]

    if name == "cnn":
        body = [*conv_block(3, 32, 1), *conv_block(32, 64, 2), *conv_block(64, 128, 2)]
        features = 128
    else:
        body = [*conv_block(1, 16, 1), layer("MaxPool")(2), *conv_block(16, 32, 1), layer("MaxPool")(2)]
        features = 32
    return nn.Sequential(*body, layer("AdaptiveAvgPool")(1), nn.Flatten(), nn.Linear(features, 10))


# --- minidp and Paddle (one API) -----------------------------------------------------------------
def paddle_like_model(P: Any, name: str) -> Any:
    """Model ``name`` built with ``P``: minidp or paddle, which share Paddle's API."""
    nn = P.nn
    if name in ("cnn", "conv3d"):
        return conv_model(nn, name, "D")
    if name == "resnet18":
        return P.vision.models.resnet18(num_classes=10)

    class Model(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            if name == "transformer":
                layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1)
                self.encoder = nn.TransformerEncoder(layer, 2)
            elif name in ("lstm", "gru"):
                self.embedding = nn.Embedding(VOCAB, EMBED)
                self.rnn = (nn.LSTM if name == "lstm" else nn.GRU)(EMBED, HIDDEN)
            else:
                self.patch = nn.Linear(48, 128)
                self.cls = self.create_parameter([1, 1, 128])
                self.pos = self.create_parameter([1, 65, 128])
                layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, activation="gelu", normalize_before=True)
                self.encoder = nn.TransformerEncoder(layer, 4, nn.LayerNorm(128))
            self.head = nn.Linear(HIDDEN if name in ("lstm", "gru") else 128, VOCAB if name in ("lstm", "gru") else 10)

        def forward(self, x: Any) -> Any:
            if name == "transformer":
                return self.head(self.encoder(x).mean(axis=1))
            if name in ("lstm", "gru"):
                out, _ = self.rnn(self.embedding(x))
                return self.head(out.reshape([-1, HIDDEN]))
            b = x.shape[0]
            patches = x.reshape([b, 3, 8, 4, 8, 4]).transpose([0, 2, 4, 1, 3, 5]).reshape([b, 64, 48])
            tokens = P.concat([self.cls.expand([b, 1, 128]), self.patch(patches)], axis=1) + self.pos
            return self.head(self.encoder(tokens)[:, 0])

    return Model()


def paddle_like_step(P: Any, name: str) -> Callable[[], float]:
    """One training step of model ``name`` in minidp or paddle (``P``); returns the loss."""
    P.seed(0)
    model = paddle_like_model(P, name)
    model.train()
    optimizer = P.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    x, y = (P.to_tensor(a) for a in model_data(name))

    def step() -> float:
        loss = P.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        return float(loss)

    return step


# --- PyTorch -------------------------------------------------------------------------------------
def torch_resnet18(torch: Any) -> Any:
    """ResNet-18 as Paddle's and torchvision's (basic blocks 2-2-2-2, 7x7 stem, 10 classes)."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.relu = nn.ReLU()
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x: Any) -> Any:
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    blocks: List[Any] = []
    c_in = 64
    for index, planes in enumerate((64, 128, 256, 512)):
        blocks += [BasicBlock(c_in, planes, 1 if index == 0 else 2), BasicBlock(planes, planes, 1)]
        c_in = planes
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        *blocks,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(512, 10),
    )


def torch_model(torch: Any, name: str) -> Any:
    """Model ``name`` in PyTorch, with the shapes of :func:`paddle_like_model`."""
    nn = torch.nn
    if name in ("cnn", "conv3d"):
        return conv_model(nn, name, "d")
    if name == "resnet18":
        return torch_resnet18(torch)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if name == "transformer":
                layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, batch_first=True)
                self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            elif name in ("lstm", "gru"):
                self.embedding = nn.Embedding(VOCAB, EMBED)
                self.rnn = (nn.LSTM if name == "lstm" else nn.GRU)(EMBED, HIDDEN, batch_first=True)
            else:
                self.patch = nn.Linear(48, 128)
                self.cls = nn.Parameter(torch.zeros(1, 1, 128))
                self.pos = nn.Parameter(torch.randn(1, 65, 128) * 0.02)
                layer = nn.TransformerEncoderLayer(
                    128, 4, 512, dropout=0.1, activation="gelu", norm_first=True, batch_first=True
                )
                self.encoder = nn.TransformerEncoder(layer, 4, nn.LayerNorm(128), enable_nested_tensor=False)
            self.head = nn.Linear(HIDDEN if name in ("lstm", "gru") else 128, VOCAB if name in ("lstm", "gru") else 10)

        def forward(self, x: Any) -> Any:
            if name == "transformer":
                return self.head(self.encoder(x).mean(dim=1))
            if name in ("lstm", "gru"):
                out, _ = self.rnn(self.embedding(x))
                return self.head(out.reshape(-1, HIDDEN))
            b = x.shape[0]
            patches = x.reshape(b, 3, 8, 4, 8, 4).permute(0, 2, 4, 1, 3, 5).reshape(b, 64, 48)
            tokens = torch.cat([self.cls.expand(b, 1, 128), self.patch(patches)], dim=1) + self.pos
            return self.head(self.encoder(tokens)[:, 0])

    return Model()


def torch_step(name: str) -> Callable[[], float]:
    """One PyTorch training step of model ``name``; returns the loss."""
    import torch

    torch.manual_seed(0)
    model = torch_model(torch, name)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (torch.as_tensor(a) for a in model_data(name))

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return float(loss)

    return step


# --- worker: one framework at one thread count, driven over stdin/stdout -------------------------
def framework_step(framework: str, name: str) -> Callable[[], float]:
    """The training step of model ``name`` in ``framework``."""
    if framework == "torch":
        return torch_step(name)
    if framework == "paddle":
        import paddle

        paddle.set_device("cpu")
        return paddle_like_step(paddle, name)
    sys.path.insert(0, os.environ.get("BENCH_MINIDP_ROOT", ROOT))
    import minidp

    return paddle_like_step(minidp, name)


def worker(framework: str, threads: int) -> None:
    """Answer the driver's requests, one JSON line each: {"model": m} builds and warms model m up
    and answers the time of one step; {"model": m, "steps": k} answers the time of k steps."""
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
    steps: Dict[str, Callable[[], float]] = {}
    print(json.dumps({"ready": framework}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        name = request["model"]
        try:
            if name not in steps:
                steps[name] = framework_step(framework, name)
                for _ in range(2):
                    steps[name]()
            start = time.perf_counter()
            for _ in range(request.get("steps", 1)):
                loss = steps[name]()
            answer = {"seconds": time.perf_counter() - start, "loss": loss}
        except Exception as error:  # the driver reports it and drops this model for this framework
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


class Worker:
    """A worker process for one framework at one thread count."""

    def __init__(self, framework: str, python: str, threads: int, root: str) -> None:
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env["BENCH_MINIDP_ROOT"] = root
        env["PYTHONWARNINGS"] = "ignore"
        self.framework = framework
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", framework, "--threads", str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.error: Optional[str] = None
        ready = self.process.stdout.readline()
        if not ready.startswith('{"ready"'):
            self.process.wait(timeout=30)
            self.error = (self.process.stderr.read().strip().splitlines() or ["no output"])[-1]

    def ask(self, request: dict) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            return {"error": "the worker died: " + self.process.stderr.read().strip()[-300:]}
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


# --- driver ---------------------------------------------------------------------------------------
def measure(
    pythons: Dict[str, str], roots: Dict[str, str], threads: int, models: List[str], rounds: int, notes: List[str]
) -> dict:
    """Median step seconds {model: {framework: s}} at ``threads`` threads, rounds interleaved;
    ``roots`` says where each framework's worker imports minidp from."""
    workers = {fw: Worker(fw, python, threads, roots.get(fw, ROOT)) for fw, python in pythons.items()}
    for fw, w in list(workers.items()):
        if w.error:
            notes.append(f"{fw} skipped ({threads} thread(s)): {w.error}")
            del workers[fw]
    medians: dict = {}
    try:
        for name in models:
            inner = {}
            for fw, w in workers.items():
                answer = w.ask({"model": name})
                if "error" in answer:
                    notes.append(f"{name}: {fw} failed: {answer['error']}")
                    continue
                inner[fw] = max(1, round(ROUND_SECONDS / max(answer["seconds"], 1e-6)))
            samples: Dict[str, list] = {fw: [] for fw in inner}
            order = list(inner)
            for r in range(rounds):
                for fw in order[r % len(order) :] + order[: r % len(order)]:
                    answer = workers[fw].ask({"model": name, "steps": inner[fw]})
                    samples[fw].append(answer["seconds"] / inner[fw])
            medians[name] = {fw: statistics.median(s) for fw, s in samples.items()}
            print(
                f"  {threads} thread(s) {name:12s} "
                + "  ".join(f"{fw} {t * 1e3:.1f} ms" for fw, t in medians[name].items()),
                file=sys.stderr,
                flush=True,
            )
    finally:
        for w in workers.values():
            w.close()
    return medians


def ratio(a: Optional[float], b: Optional[float]) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def milliseconds(t: Optional[float]) -> str:
    return f"{t * 1e3:.1f}" if t else "-"


def tables(results: Dict[int, dict], models: List[str]) -> str:
    """The step-time table (with minidp's time over each other contender's) and the speed-ups
    from the lowest to the highest thread count."""
    present = [fw for fw in FRAMEWORKS if any(fw in m for medians in results.values() for m in medians.values())]
    others = [fw for fw in present if fw != "minidp"]
    header = ["model", "threads"] + [f"{fw} ms" for fw in present] + [f"minidp / {fw}" for fw in others]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in models:
        for threads, medians in results.items():
            t = medians.get(name, {})
            cells = [name, str(threads)] + [milliseconds(t.get(fw)) for fw in present]
            lines.append("| " + " | ".join(cells + [ratio(t.get("minidp"), t.get(fw)) for fw in others]) + " |")
    counts = sorted(results)
    if len(counts) > 1:
        low, high = counts[0], counts[-1]
        lines += ["", f"Speed-up from {low} to {high} threads (time at {low} / time at {high}):", ""]
        lines += ["| model | " + " | ".join(present) + " |", "|" + "---|" * (len(present) + 1)]
        for name in models:
            before, after = results[low].get(name, {}), results[high].get(name, {})
            cells = [ratio(before.get(fw), after.get(fw)) for fw in present]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine() -> str:
    """The CPU model and core count."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def commit(root: str = ROOT) -> str:
    """The short commit of the checkout at ``root``."""
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def default_python(flag: Optional[str], variable: str, venv: str, fallback: Optional[str]) -> Optional[str]:
    """The interpreter for a framework: the flag, the environment variable, the venv, the fallback."""
    for candidate in (flag, os.environ.get(variable), venv):
        if candidate and os.path.exists(candidate):
            return candidate
    return fallback


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"3 rounds of {', '.join(QUICK_MODELS)} only")
    parser.add_argument("--models", help=f"comma-separated, from {', '.join(MODELS)} (default: all)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per model (default 7, 3 with --quick)")
    parser.add_argument("--markdown", action="store_true", help="print a section for docs/benchmarks.md")
    parser.add_argument("--torch-python", help="Python with torch (default $BENCH_TORCH_PYTHON or the torch venv)")
    parser.add_argument("--paddle-python", help="Python with paddle (default $BENCH_PADDLE_PYTHON or the paddle venv)")
    parser.add_argument(
        "--frameworks", default="minidp,torch,paddle", help="which to run (default minidp,torch,paddle)"
    )
    parser.add_argument(
        "--baseline", metavar="PATH", help="also time minidp from the checkout at PATH (as 'baseline'), interleaved"
    )
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    threads = [int(t) for t in arguments.threads.split(",")]
    if arguments.worker:
        worker(arguments.worker, threads[0])
        return
    models = arguments.models.split(",") if arguments.models else list(QUICK_MODELS if arguments.quick else MODELS)
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    rounds = arguments.rounds or (3 if arguments.quick else 7)
    pythons = {
        "minidp": sys.executable,
        "torch": default_python(
            arguments.torch_python, "BENCH_TORCH_PYTHON", "/work/venvs/torch/bin/python", sys.executable
        ),
        "paddle": default_python(arguments.paddle_python, "BENCH_PADDLE_PYTHON", "/work/venvs/paddle/bin/python", None),
    }
    chosen = arguments.frameworks.split(",")
    roots = {"minidp": ROOT}
    if arguments.baseline:
        pythons["baseline"], roots["baseline"] = sys.executable, os.path.abspath(arguments.baseline)
        chosen.insert(1, "baseline")
    notes: List[str] = [f"{fw} skipped: no interpreter found" for fw in chosen if pythons.get(fw) is None]
    pythons = {fw: pythons[fw] for fw in chosen if pythons.get(fw) is not None}
    load_before = load_average()
    started = datetime.now(timezone.utc)
    results = {t: measure(pythons, roots, t, models, rounds, notes) for t in threads}
    table = tables(results, models)
    if arguments.markdown:
        print(f"## Model training steps (tools/bench_models.py), {started:%Y-%m-%d %H:%M} UTC\n")
        print(f"- commit: {commit()}")
        if arguments.baseline:
            print(f"- baseline: minidp from {roots['baseline']} (commit {commit(roots['baseline'])})")
        print(f"- machine: {machine()}; python {platform.python_version()}")
        print(f"- load average: {load_before} at the start, {load_average()} at the end")
        print(
            f"- median of {rounds} interleaved rounds (about {ROUND_SECONDS} s each) per framework; "
            "forward + backward + Adam, float32\n"
        )
    print(table)
    for note in notes:
        print(f"\nnote: {note}" if arguments.markdown else f"note: {note}")


if __name__ == "__main__":
    main()
