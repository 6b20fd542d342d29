"""Engine speed: minidp training steps against a hand-written NumPy step (and PyTorch if present).

Measures, with BLAS pinned to one thread, in one run so that the ratios are fair on a noisy
machine:
  (a) MLP 784-1024-1024-10, ReLU, cross-entropy, SGD, batch 64, float32 -- dominated by BLAS;
      target: minidp within 1.10x of hand-written NumPy.
  (b) MLP 10-10-1, ReLU, MSE, SGD, batch 10 -- dominated by per-op Python overhead;
      target: minidp no slower than PyTorch (ratio <= 1.0).
  (c) the digits CNN step against a NumPy im2col equivalent (tools/bench_cnn.py); target 1.3x.

Usage: python tools/bench_engine.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minidp  # noqa: E402
import minidp.nn.functional as F  # noqa: E402
from bench_timing import best_times  # noqa: E402


def init_weights(sizes, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [
        ((rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32), np.zeros(b, np.float32))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def numpy_step(weights, x, labels, lr: float, loss: str):
    """Forward, backward and SGD for a ReLU MLP written directly in NumPy: the floor."""
    acts = [x]
    pre = []
    for i, (w, b) in enumerate(weights):
        z = acts[-1] @ w + b
        pre.append(z)
        acts.append(np.maximum(z, 0) if i < len(weights) - 1 else z)
    out = acts[-1]
    n = x.shape[0]
    if loss == "ce":
        shifted = out - out.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        probs = e / e.sum(axis=1, keepdims=True)
        g = probs
        g[np.arange(n), labels] -= 1
        g /= n
    else:
        g = 2 * (out - labels) / out.size
    for i in range(len(weights) - 1, -1, -1):
        w, b = weights[i]
        gw = acts[i].T @ g
        gb = g.sum(axis=0)
        if i > 0:
            g = (g @ w.T) * (pre[i - 1] > 0)
        w -= lr * gw
        b -= lr * gb


def minidp_model(weights):
    layers = []
    for i, (w, b) in enumerate(weights):
        linear = minidp.nn.Linear(*w.shape)
        linear.weight.set_value(w)
        linear.bias.set_value(b)
        layers.append(linear)
        if i < len(weights) - 1:
            layers.append(minidp.nn.ReLU())
    return minidp.nn.Sequential(*layers)


def minidp_step_fn(weights, x, labels, lr: float, loss: str):
    model = minidp_model(weights)
    opt = minidp.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
    xt = minidp.to_tensor(x)
    yt = minidp.to_tensor(labels)
    loss_fn = F.cross_entropy if loss == "ce" else F.mse_loss

    def step():
        loss_value = loss_fn(model(xt), yt)
        loss_value.backward()
        opt.step()
        opt.clear_grad()

    return step


def torch_step_fn(weights, x, labels, lr: float, loss: str):
    import torch

    torch.set_num_threads(1)
    layers = []
    for i, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w.T.copy()))
            linear.bias.copy_(torch.from_numpy(b))
        layers.append(linear)
        if i < len(weights) - 1:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    xt = torch.from_numpy(x)
    yt = torch.from_numpy(labels)
    loss_fn = torch.nn.functional.cross_entropy if loss == "ce" else torch.nn.functional.mse_loss

    def step():
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    return step


def compare(title: str, sizes, batch: int, loss: str, repeat: int, inner: int) -> dict:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    if loss == "ce":
        labels = rng.integers(0, sizes[-1], batch).astype(np.int64)
    else:
        labels = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    weights = init_weights(sizes)
    numpy_weights = [(w.copy(), b.copy()) for w, b in weights]
    if any(a.dtype != np.float32 for pair in numpy_weights for a in pair):
        raise RuntimeError("the NumPy floor must run in float32 like minidp, or the ratio means nothing")
    steps = {
        "numpy": lambda: numpy_step(numpy_weights, x, labels, 0.01, loss),
        "minidp": minidp_step_fn(weights, x, labels, 0.01, loss),
    }
    try:
        steps["torch"] = torch_step_fn(weights, x, labels, 0.01, loss)
    except ImportError:
        pass
    times = best_times(steps, repeat, inner)
    print(f"\n{title}")
    for name, seconds in times.items():
        print(f"  {name:8s} {seconds * 1e6:10.1f} us/step")
    print(f"  minidp / numpy = {times['minidp'] / times['numpy']:.3f}")
    if "torch" in times:
        print(f"  minidp / torch = {times['minidp'] / times['torch']:.3f}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    big = compare(
        "(a) MLP 784-1024-1024-10, batch 64, cross-entropy + SGD (target minidp/numpy <= 1.10)",
        [784, 1024, 1024, 10],
        64,
        "ce",
        args.repeat,
        20,
    )
    tiny = compare(
        "(b) MLP 10-10-1, batch 10, MSE + SGD (target minidp/torch <= 1.0)", [10, 10, 1], 10, "mse", args.repeat, 2000
    )
    from bench_cnn import bench_cnn

    cnn_ratio = bench_cnn()
    print("\nsummary")
    print(f"  (a) minidp/numpy  {big['minidp'] / big['numpy']:.3f}  (target <= 1.10)")
    if "torch" in tiny:
        print(f"  (b) minidp/torch  {tiny['minidp'] / tiny['torch']:.3f}  (target <= 1.00)")
    print(f"  (b) minidp/numpy  {tiny['minidp'] / tiny['numpy']:.3f}")
    print(f"  (c) cnn minidp/numpy  {cnn_ratio:.3f}  (target <= 1.30)")


if __name__ == "__main__":
    main()
