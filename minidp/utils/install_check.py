"""``paddle.utils.run_check``: a quick proof that minidp works on this machine.

It trains a small model a few steps on the current device, forward, backward and optimizer step,
and checks that the loss is finite and falls, then says so. Paddle's check also runs its static
graph (minidp has none) and, with several GPUs, a data-parallel run; ``python -m
minidp.distributed.launch --nproc_per_node 2 script.py`` is minidp's check of that.
"""

from __future__ import annotations

import numpy

__all__ = ["run_check"]


def run_check() -> None:
    """Train a small model for a few steps; print that minidp works, or raise RuntimeError."""
    from .. import nn, optimizer
    from ..core import backend
    from ..ops.creation import to_tensor

    print("Running verify minidp program ... ")
    rng = numpy.random.default_rng(0)
    inputs = to_tensor(rng.standard_normal((16, 4)).astype("float32"))
    targets = to_tensor(rng.standard_normal((16, 1)).astype("float32"))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    losses = []
    for _ in range(5):
        loss = ((model(inputs) - targets) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    if not all(numpy.isfinite(losses)) or not losses[-1] < losses[0]:
        raise RuntimeError(f"run_check: a small model did not train on {backend.get_device()} (losses {losses})")
    device = "GPU" if backend.get_device().startswith("gpu") else "CPU"
    print(f"minidp works well on 1 {device}.")
    print("minidp is installed successfully! Paddle dygraph scripts can run on it now.")
