"""Workers for tests/test_sharding.py: sharded data parallelism on real processes.

Every worker trains a small model whose parameters have uneven sizes (one larger than a whole
bucket) with plain DataParallel and with each sharding level, from the same start on the same
per-rank batches, and reports what the test compares.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.optimizer as optim
from minidp.distributed.sharding import group_sharded_parallel, save_group_sharded_model
from sharding_setup import held_bytes, wrap

LEVELS = ("os", "os_g", "p_g_os")
BUCKET_ELEMENTS = 64  # buffer_max_size: the 7 x 13 weight (91 elements) is larger than a bucket


class Uneven(nn.Layer):
    """Parameters of 91, 13, 13x5 = 65, 5, 3 (no bias) and 1 elements."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(7, 13)
        self.fc2 = nn.Linear(13, 5)
        self.head = nn.Linear(5, 3, bias_attr=False)
        self.scale = self.create_parameter([1], default_initializer=nn.initializer.Constant(1.0))

    def forward(self, x: minidp.Tensor) -> minidp.Tensor:
        return self.head(minidp.tanh(self.fc2(minidp.tanh(self.fc1(x))))) * self.scale


def make_model() -> Uneven:
    minidp.seed(7)
    return Uneven()


def make_optimizer(name: str, parameters: Any) -> Any:
    if name == "momentum":
        return optim.Momentum(learning_rate=0.1, momentum=0.9, parameters=parameters)
    return optim.Adam(learning_rate=0.01, parameters=parameters)


def batch(rank: int, step: int) -> minidp.Tensor:
    rng = np.random.default_rng(100 * step + rank)
    return minidp.to_tensor(rng.standard_normal((4, 7)).astype("float32"))


def train(model: Any, optimizer: Any, rank: int, steps: int, start: int = 0) -> None:
    for step in range(start, start + steps):
        loss = (model(batch(rank, step)) ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()


def values(model: Any) -> Dict[str, np.ndarray]:
    return {k: np.array(v.numpy()) for k, v in model.state_dict().items()}


def restored(params: dict, state: dict) -> tuple:
    """A plain model and Adam optimizer that took a checkpoint's parameters and state."""
    model = make_model()
    model.set_state_dict(params)
    opt = make_optimizer("adam", model.parameters())
    opt.set_state_dict(state)
    return model, opt


def sharded(level: str, name: str) -> tuple:
    """A fresh model and ``name`` optimizer at ``level`` ("dp" included), in small buckets."""
    model = make_model()
    dp_options = {"comm_buffer_size": BUCKET_ELEMENTS * 4 / 2**20, "last_comm_buffer_size": 1e-4}
    return wrap(
        level,
        model,
        make_optimizer(name, model.parameters()),
        dp_options,
        buffer_max_size=BUCKET_ELEMENTS,
        segment_size=1,
    )


def equivalence_worker(steps: int) -> Dict[str, Any]:
    """Parameters after ``steps`` steps: DataParallel's, and each level's, per optimizer; and
    the bytes this rank holds after one more backward."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    report: Dict[str, Any] = {}
    for name in ("momentum", "adam"):
        runs = [(level, *sharded(level, name)) for level in ("dp",) + LEVELS]
        for level, model, opt in runs:
            train(model, opt, rank, steps)
            report[f"{level}/{name}"] = values(model)
            loss = (model(batch(rank, steps)) ** 2).mean()
            if level == "p_g_os":
                report[f"p_g_os/{name}/units"] = units_held_around_backward(model, loss)
            else:
                loss.backward()
            report[f"{level}/{name}/bytes"] = held_bytes(model, opt)
    return report


def units_held_around_backward(model: Any, loss: Any) -> Dict[str, int]:
    """How many units hold their whole parameters (their host buffer) after forward, at most
    while backward runs (seen whenever a parameter's gradient is ready), and after it."""

    def held() -> int:
        return sum(b.storage.held for b in model.sharded_buckets if b.storage is not None)

    seen = []
    hooks = [p._register_grad_ready_hook(lambda _: seen.append(held())) for p in model.parameters()]
    counts = {"units": sum(b.storage is not None for b in model.sharded_buckets), "after_forward": held()}
    loss.backward()
    counts.update(most_in_backward=max(seen), after_backward=held())
    for hook in hooks:
        hook.remove()
    return counts


def no_sync_worker() -> Dict[str, Any]:
    """Two micro-batches per step, the first under no_sync: DataParallel and each level."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    report = {}
    for level in ("dp",) + LEVELS:
        if level == "dp":
            plain = make_model()
            model, opt = minidp.DataParallel(plain), make_optimizer("adam", plain.parameters())
        else:
            model, opt = sharded(level, "adam")
        for step in range(2):
            with model.no_sync():
                (model(batch(rank, 2 * step)) ** 2).mean().backward()
            (model(batch(rank, 2 * step + 1)) ** 2).mean().backward()
            opt.step()
            opt.clear_grad()
        report[level] = values(model)
    return report


def checkpoint_worker(directory: str) -> Dict[str, Any]:
    """Round trips: sharded -> plain files -> plain model, and plain files -> sharded run."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    report: Dict[str, Any] = {}
    for level in LEVELS:
        # the reference: DataParallel trained 2 + 2 steps without interruption
        plain = make_model()
        dp = minidp.DataParallel(plain)
        dp_opt = make_optimizer("adam", plain.parameters())
        train(dp, dp_opt, rank, 4)
        report[f"{level}/reference"] = values(plain)
        # sharded for 2 steps, saved, then resumed by a sharded run and by a plain run
        model, opt = sharded(level, "adam")
        train(model, opt, rank, 2)
        output = os.path.join(directory, level)
        save_group_sharded_model(model, output, optimizer=opt)
        dist.barrier()
        params = minidp.load(os.path.join(output, "model.pdmodel"))
        state = minidp.load(os.path.join(output, "model.pdopt"))
        resumed, resumed_opt = sharded(level, "adam")
        resumed.set_state_dict(params)
        resumed_opt.set_state_dict(state)
        train(resumed, resumed_opt, rank, 2, start=2)
        report[f"{level}/sharded_resumed"] = values(resumed)
        again, again_opt = restored(params, state)
        again_dp = minidp.DataParallel(again)
        train(again_dp, again_opt, rank, 2, start=2)
        report[f"{level}/plain_resumed"] = values(again)
        # a plain checkpoint loaded before wrapping, as Paddle's note asks
        before, before_opt = restored(params, state)
        wrapped, wrapped_opt, _ = group_sharded_parallel(
            before, before_opt, level, buffer_max_size=BUCKET_ELEMENTS, segment_size=1
        )
        train(wrapped, wrapped_opt, rank, 2, start=2)
        report[f"{level}/wrapped_after_load"] = values(wrapped)
        dist.barrier()
    return report


def killed_worker(level: str) -> List[float]:
    """Rank 1 dies in its second step's backward; the others must fail, not hang."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    model, opt = sharded(level, "adam")
    losses = []
    for step in range(3):
        loss = (model(batch(rank, step)) ** 2).mean()
        if step == 1 and rank == 1:
            os._exit(17)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return losses


def fleet_worker(stage: int) -> Dict[str, Any]:
    """fleet with strategy.sharding: the level it picked and the parameters after 3 steps,
    beside DataParallel's."""
    from minidp.distributed import fleet

    strategy = fleet.DistributedStrategy()
    strategy.sharding = True
    strategy.sharding_configs = {"stage": stage, "sharding_degree": 2}
    fleet.init(is_collective=True, strategy=strategy)
    rank = dist.get_rank()
    model = fleet.distributed_model(make_model())
    opt = fleet.distributed_optimizer(make_optimizer("adam", model.parameters()))
    train(model, opt, rank, 3)
    plain = make_model()
    train(minidp.DataParallel(plain), make_optimizer("adam", plain.parameters()), rank, 3)
    return {"level": model.level, "fleet": values(model), "dp": values(plain)}
