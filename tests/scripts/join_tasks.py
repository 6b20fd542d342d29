"""What each rank runs in the join tests of tests/test_data_parallel.py and the stall-warning test
of tests/test_backends_base.py: training on uneven inputs with and without join.

Rank ``r`` trains on ``counts[r]`` batches; batch ``s`` of rank ``r`` is drawn from a generator
seeded with ``(s, r)``, so the single-process reference can rebuild the union of the batches of
every step.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Dict, List

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.optimizer as optim

ROWS, IN_FEATURES, OUT_FEATURES = 4, 3, 2
UNEVEN = (3, 1)  # batches per rank where a test needs two ranks with uneven inputs
LEARNING_RATE = 0.1


def batch(step: int, rank: int):
    """The rows rank ``rank`` trains on at its step ``step`` (inputs, targets)."""
    rng = np.random.default_rng([step, rank])
    return (
        rng.standard_normal((ROWS, IN_FEATURES)).astype("float32"),
        rng.standard_normal((ROWS, OUT_FEATURES)).astype("float32"),
    )


def build_model() -> nn.Layer:
    minidp.seed(7)
    return nn.Sequential(nn.Linear(IN_FEATURES, 4), nn.Tanh(), nn.Linear(4, OUT_FEATURES))


def state(layer: nn.Layer) -> Dict[str, np.ndarray]:
    return {k: np.array(v.numpy()) for k, v in layer.state_dict().items()}


def _train_step(model, optimizer, x, y) -> None:
    loss = ((model(minidp.to_tensor(x)) - minidp.to_tensor(y)) ** 2).mean()
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()


def train_reference(
    counts: List[int], divide_by_initial_world_size: bool, accumulate: int = 1
) -> Dict[str, np.ndarray]:
    """One process, each step on the union of the batches of the ranks still training (its
    ``accumulate`` micro-batches one after the other); with ``divide_by_initial_world_size``
    the step's gradient is scaled by contributors / world."""
    model = build_model()
    optimizer = optim.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    world = len(counts)
    for step in range(max(counts)):
        ranks = [r for r in range(world) if step < counts[r]]
        for micro in range(accumulate):
            x = np.concatenate([batch(step * accumulate + micro, r)[0] for r in ranks])
            y = np.concatenate([batch(step * accumulate + micro, r)[1] for r in ranks])
            loss = ((model(minidp.to_tensor(x)) - minidp.to_tensor(y)) ** 2).mean()
            if divide_by_initial_world_size:
                loss = loss * (len(ranks) / world)
            loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return state(model)


def join_worker(counts: List[int], divide_by_initial_world_size: bool) -> Dict[str, Any]:
    """Train this rank's ``counts[rank]`` batches inside ``join()``; return the parameters."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    layer = build_model()
    model = minidp.DataParallel(layer, comm_buffer_size=1e-5, last_comm_buffer_size=1e-5)
    optimizer = optim.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    with model.join(divide_by_initial_world_size=divide_by_initial_world_size):
        for step in range(counts[rank]):
            _train_step(model, optimizer, *batch(step, rank))
    return state(layer)


def join_no_sync_worker(counts: List[int], accumulate: int) -> Dict[str, Any]:
    """As :func:`join_worker` (dividing by the ranks that train), each step accumulating
    ``accumulate`` micro-batches, all but the last under ``no_sync()``."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    layer = build_model()
    model = minidp.DataParallel(layer)
    optimizer = optim.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    with model.join(divide_by_initial_world_size=False):
        for step in range(counts[rank]):
            for micro in range(accumulate):
                x, y = batch(step * accumulate + micro, rank)
                quiet = model.no_sync() if micro < accumulate - 1 else contextlib.nullcontext()
                with quiet:
                    loss = ((model(minidp.to_tensor(x)) - minidp.to_tensor(y)) ** 2).mean()
                    loss.backward()
            optimizer.step()
            optimizer.clear_grad()
    return state(layer)


def throw_worker() -> str:
    """join(throw_on_early_termination=True): every rank raises at the first uneven step."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    model = minidp.DataParallel(build_model())
    optimizer = optim.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    try:
        with model.join(throw_on_early_termination=True):
            for step in range(UNEVEN[rank]):
                _train_step(model, optimizer, *batch(step, rank))
    except RuntimeError as error:
        return str(error)
    return "no error"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def stalled_worker() -> Dict[str, Any]:
    """Without join: rank 0 trains one batch more than the others, which stop calling
    collectives and sleep; rank 0 reports the waiting, warns, then times out."""
    handler = _Collect()
    logging.getLogger("minidp.distributed").addHandler(handler)
    dist.init_parallel_env()
    rank = dist.get_rank()
    model = minidp.DataParallel(build_model())
    optimizer = optim.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    _train_step(model, optimizer, *batch(0, rank))
    if rank != 0:
        time.sleep(6)
        return {"warnings": handler.messages, "error": "", "seconds": 0.0}
    started = time.monotonic()
    try:
        _train_step(model, optimizer, *batch(1, rank))
    except RuntimeError as error:
        return {"warnings": handler.messages, "error": str(error), "seconds": time.monotonic() - started}
    return {"warnings": handler.messages, "error": "no error", "seconds": 0.0}
