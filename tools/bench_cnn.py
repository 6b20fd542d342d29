"""The digits CNN's training step in minidp against the same step written by hand in NumPy.

Model (as in examples/train_digits.py): Conv2D(1, 16, 3, padding=1) - ReLU - MaxPool2D(2) -
Conv2D(16, 32, 3, padding=1) - ReLU - MaxPool2D(2) - Flatten - Linear(128, 10), cross-entropy,
SGD, batch 64, float32. The NumPy version uses the same im2col convolution (one strided copy
per kernel offset, one batched matmul), so the ratio measures what minidp's layers, tape and
optimizer add on top of the array work. Target: minidp / numpy <= 1.3.

Run alone (``python tools/bench_cnn.py``) or through tools/bench_engine.py.
"""

from __future__ import annotations

import argparse

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minidp  # noqa: E402
import minidp.nn as nn  # noqa: E402
import minidp.nn.functional as F  # noqa: E402
import minidp.optimizer  # noqa: E402
from bench_timing import best_times  # noqa: E402

BATCH = 64
LR = 0.05


def digits_batch() -> tuple:
    """A batch of real digits images [64, 1, 8, 8] and labels (random data when sklearn is missing)."""
    try:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images = (digits.images[:BATCH] / 16.0).astype(np.float32)[:, None]
        labels = digits.target[:BATCH].astype(np.int64)
    except ImportError:
        rng = np.random.default_rng(0)
        images = rng.random((BATCH, 1, 8, 8), dtype=np.float32)
        labels = rng.integers(0, 10, BATCH)
    return images, labels


# --- hand-written NumPy -----------------------------------------------------------------------
def np_conv_forward(x, w, b):
    """3x3 convolution, stride 1, padding 1, by im2col; returns the output and the columns."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    padded = np.zeros((n, c, h + 2, wd + 2), x.dtype)
    padded[:, :, 1:-1, 1:-1] = x
    cols = np.empty((n, c, 3, 3, h, wd), x.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, :, i, j] = padded[:, :, i : i + h, j : j + wd]
    cols = cols.reshape(n, 1, c * 9, h * wd)
    out = np.matmul(w.reshape(1, o, c * 9), cols).reshape(n, o, h, wd)
    out += b.reshape(1, o, 1, 1)
    return out, cols


def np_conv_backward(g, x_shape, w, cols):
    n, c, h, wd = x_shape
    o = w.shape[0]
    g_mat = g.reshape(n, 1, o, h * wd)
    gw = np.matmul(g_mat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(w.shape)
    gb = g.sum(axis=(0, 2, 3))
    g_cols = np.matmul(w.reshape(1, o, c * 9).transpose(0, 2, 1), g_mat).reshape(n, c, 3, 3, h, wd)
    g_padded = np.zeros((n, c, h + 2, wd + 2), g.dtype)
    for i in range(3):
        for j in range(3):
            g_padded[:, :, i : i + h, j : j + wd] += g_cols[:, :, i, j]
    return g_padded[:, :, 1:-1, 1:-1], gw, gb


def np_pool_forward(x):
    """2x2 max pooling, stride 2: the window maxima and the winning offset of each window."""
    n, c, h, w = x.shape
    stacked = np.empty((4, n, c, h // 2, w // 2), x.dtype)
    for k in range(4):
        stacked[k] = x[:, :, k // 2 :: 2, k % 2 :: 2]
    winner = stacked.argmax(axis=0)
    return np.take_along_axis(stacked, winner[None], axis=0)[0], winner


def np_pool_backward(g, x_shape, winner):
    gx = np.zeros(x_shape, g.dtype)
    for k in range(4):
        gx[:, :, k // 2 :: 2, k % 2 :: 2] += g * (winner == k)
    return gx


def numpy_step(params, x, labels):
    """Forward, backward and SGD of the CNN in plain NumPy; returns the loss."""
    w1, b1, w2, b2, w3, b3 = params
    z1, cols1 = np_conv_forward(x, w1, b1)
    a1 = np.maximum(z1, 0)
    p1, win1 = np_pool_forward(a1)
    z2, cols2 = np_conv_forward(p1, w2, b2)
    a2 = np.maximum(z2, 0)
    p2, win2 = np_pool_forward(a2)
    flat = p2.reshape(BATCH, -1)
    logits = flat @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    exps = np.exp(shifted)
    probs = exps / exps.sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(BATCH), labels]).mean()
    g = probs
    g[np.arange(BATCH), labels] -= 1
    g /= BATCH
    gw3 = flat.T @ g
    gb3 = g.sum(axis=0)
    g = (g @ w3.T).reshape(p2.shape)
    g = np_pool_backward(g, a2.shape, win2) * (z2 > 0)
    g, gw2, gb2 = np_conv_backward(g, p1.shape, w2, cols2)
    g = np_pool_backward(g, a1.shape, win1) * (z1 > 0)
    _, gw1, gb1 = np_conv_backward(g, x.shape, w1, cols1)
    for p, gp in zip(params, (gw1, gb1, gw2, gb2, gw3, gb3)):
        p -= LR * gp
    return float(loss)


# --- minidp ------------------------------------------------------------------------------------
def minidp_model() -> nn.Layer:
    return nn.Sequential(
        nn.Conv2D(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2D(2),
        nn.Conv2D(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2D(2),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def minidp_step_fn(model: nn.Layer, x: np.ndarray, labels: np.ndarray):
    opt = minidp.optimizer.SGD(learning_rate=LR, parameters=model.parameters())
    xt, yt = minidp.to_tensor(x), minidp.to_tensor(labels)

    def step() -> float:
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss.item()

    return step


def bench_cnn(repeat: int = 5, inner: int = 30) -> float:
    """Time both steps, check they agree on the first step's loss, print and return minidp/numpy."""
    minidp.seed(0)
    x, labels = digits_batch()
    model = minidp_model()
    params = [p.numpy().copy() for p in model.parameters()]
    step = minidp_step_fn(model, x, labels)
    first_np, first_md = numpy_step(params, x, labels), step()
    if not np.isclose(first_np, first_md, rtol=1e-4):
        raise RuntimeError(f"bench_cnn: the two implementations disagree (loss {first_np} vs {first_md})")
    times = best_times({"numpy": lambda: numpy_step(params, x, labels), "minidp": step}, repeat, inner)
    numpy_time, minidp_time = times["numpy"], times["minidp"]
    ratio = minidp_time / numpy_time
    print("\n(c) digits CNN step, batch 64, cross-entropy + SGD (target minidp/numpy <= 1.30)")
    print(f"  numpy    {numpy_time * 1e6:10.1f} us/step")
    print(f"  minidp   {minidp_time * 1e6:10.1f} us/step")
    print(f"  minidp / numpy = {ratio:.3f}")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--inner", type=int, default=30, help="steps timed per round")
    arguments = parser.parse_args()
    bench_cnn(arguments.repeat, arguments.inner)
