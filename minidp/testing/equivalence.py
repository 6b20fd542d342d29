"""Data parallelism as a contract: N ranks must end where one process on the whole batch ends."""

from __future__ import annotations

import os
import tempfile
from typing import Callable, Optional, Sequence

import numpy

from .golden import ModelSpec, _check_batches, golden, train_and_record


def assert_data_parallel_equivalent(
    model: ModelSpec,
    loss: Callable,
    batches: Sequence[Sequence[object]],
    world_size: int,
    optimizer: Callable,
    steps: Optional[int] = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
) -> str:
    """Train on ``world_size`` ranks and in one process on the whole batches; compare.

    Every rank's averaged gradient and parameters after each step must match the single
    process's gradient and parameters within ``rtol``/``atol``. Arguments as for
    :func:`minidp.testing.golden`. Returns a report naming the largest difference; raises
    ``AssertionError`` with that report (and the first tensor outside the tolerance) when the
    runs disagree.
    """
    steps = len(batches) if steps is None else steps
    checked = _check_batches(batches, steps, world_size)
    alone = train_and_record(model, loss, checked, optimizer, seed)
    with tempfile.TemporaryDirectory() as directory:
        path = golden(
            model, loss, checked, world_size, steps, optimizer, out=os.path.join(directory, "golden.npz"), seed=seed
        )
        with numpy.load(path, allow_pickle=False) as parallel:
            worst = (0.0, "")
            failure = ""
            for key in sorted(parallel.files):
                parts = key.split("/", 3)
                if len(parts) < 4 or parts[2] not in ("avg_grad", "param"):
                    continue
                reference = alone[f"{parts[0]}/rank0/{parts[2]}/{parts[3]}"]
                got = parallel[key]
                diff = float(numpy.max(numpy.abs(got - reference))) if got.size else 0.0
                if diff >= worst[0]:
                    worst = (diff, key)
                if not failure and not numpy.allclose(got, reference, rtol=rtol, atol=atol):
                    failure = (
                        f"{key} differs from one process on the whole batch by up to "
                        f"{diff:.3g} (rtol={rtol:g}, atol={atol:g})"
                    )
    report = f"{world_size} ranks against one process, {steps} steps: largest difference {worst[0]:.3g} at {worst[1]}"
    if failure:
        raise AssertionError(f"{failure}\n{report}")
    return report
