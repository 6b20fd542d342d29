"""What each rank runs in tests/test_data_parallel.py, and the single-process references.

The equivalence scenarios are plain dicts (JSON-able, so the MPI run can take them on its
command line). Every scenario trains the small :class:`Net` for a few steps on a global batch
of :data:`GLOBAL_BATCH` rows that :func:`global_batch` draws from a seeded NumPy generator;
rank ``r`` of ``n`` trains on rows ``r*B/n .. (r+1)*B/n``. :func:`train_reference` trains the same
model in one process on the whole batch; data-parallel training must end where it ends.

Scenario keys (all optional but ``name``):
  ``optimizer``      "sgd", "momentum" or "adam"
  ``steps``          optimizer steps
  ``accumulate``     micro-batches per step; all but the last run under ``no_sync()``
  ``seed_per_rank``  seed each rank differently before building the model
  ``mixed``          the middle layer holds float64 parameters
  ``branch``         None, "all", "none" or "some": which ranks use the extra branch
  ``find_unused``    DataParallel's find_unused_parameters
  ``comm_mb``, ``last_comm_mb``  DataParallel's bucket sizes (MiB)
  ``comm_hook``      "fp16" or "bf16": register that compression hook

Run as a script under ``mpiexec -n 2`` (``python dp_tasks.py mpi-equivalence DIR SCENARIOS_JSON``),
each rank writes ``DIR/rank<N>.npz`` with its results.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time
import warnings
import weakref
from typing import Any, Dict, List

import numpy as np

import minidp
import minidp.distributed as dist
import minidp.nn as nn
import minidp.optimizer as optim
from minidp.core.distributed import comm_hooks

GLOBAL_BATCH = 12  # divisible by 2, 3 and 4
IN_FEATURES, HIDDEN, OUT_FEATURES = 5, 6, 2
BASE_SEED = 2024
COMM_HOOKS = {"fp16": comm_hooks.fp16_compress_hook, "bf16": comm_hooks.bf16_compress_hook}


# ----------------------------------------------------------------------------------------------
# The model, the data and the training loop shared by the ranks and the reference
# ----------------------------------------------------------------------------------------------


class Net(nn.Layer):
    """fc1 -> tanh -> fc2 (float64 when ``mixed``) -> tanh -> head (+ branch, when built)."""

    def __init__(self, mixed: bool = False, branch: bool = False) -> None:
        super().__init__()
        self.mixed = mixed
        self.fc1 = nn.Linear(IN_FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        if mixed:
            self.fc2.astype("float64")
        self.head = nn.Linear(HIDDEN, OUT_FEATURES)
        self.branch = nn.Linear(HIDDEN, OUT_FEATURES) if branch else None

    def forward(self, x, use_branch=False):
        h = minidp.tanh(self.fc1(x))
        if self.mixed:
            h = self.fc2(h.astype("float64")).astype("float32")
        else:
            h = self.fc2(h)
        h = minidp.tanh(h)
        out = self.head(h)
        if isinstance(use_branch, minidp.Tensor):  # a per-row 0/1 mask (the reference)
            out = out + self.branch(h) * use_branch
        elif use_branch:
            out = out + self.branch(h)
        return out


def global_batch(step: int, micro: int):
    rng = np.random.default_rng([BASE_SEED, step, micro])
    x = rng.standard_normal((GLOBAL_BATCH, IN_FEATURES)).astype(np.float32)
    y = rng.standard_normal((GLOBAL_BATCH, OUT_FEATURES)).astype(np.float32)
    return x, y


def shard_rows(rank: int, world: int) -> slice:
    per = GLOBAL_BATCH // world
    return slice(rank * per, (rank + 1) * per)


def uses_branch(mode: Any, rank: int, step: int, micro: int) -> bool:
    if mode in (None, "none"):
        return False
    if mode == "all":
        return True
    return (rank + step + micro) % 3 == 0  # "some": one, several or no ranks, by step


def make_optimizer(name: str, parameters):
    if name == "sgd":
        return optim.SGD(learning_rate=0.1, parameters=parameters)
    if name == "momentum":
        return optim.Momentum(learning_rate=0.05, momentum=0.9, parameters=parameters)
    if name == "adam":
        return optim.Adam(learning_rate=0.01, parameters=parameters)
    raise ValueError(name)


def state(layer) -> Dict[str, np.ndarray]:
    return {name: p.numpy().copy() for name, p in layer.named_parameters()}


def build_model(scenario: Dict[str, Any], rank: int):
    seed = BASE_SEED + (1000 * rank if scenario.get("seed_per_rank") else 0)
    minidp.seed(seed)
    return Net(scenario.get("mixed", False), scenario.get("branch") is not None)


def train_reference(scenario: Dict[str, Any], world: int, only_rank: Any = None):
    """One process training on the concatenated batch (or, with ``only_rank``, on that shard).

    Rows of ranks that do not use the branch multiply its output by 0: the branch then gets a
    zero gradient where no rank used it, as DataParallel gives unused parameters.
    """
    model = build_model(scenario, 0)
    optimizer = make_optimizer(scenario.get("optimizer", "sgd"), model.parameters())
    loss_fn = nn.MSELoss()
    mode = scenario.get("branch")
    ranks = range(world) if only_rank is None else [only_rank]
    for step in range(scenario.get("steps", 3)):
        for micro in range(scenario.get("accumulate", 1)):
            x, y = global_batch(step, micro)
            rows = np.concatenate([np.arange(GLOBAL_BATCH)[shard_rows(r, world)] for r in ranks])
            mask = np.zeros((GLOBAL_BATCH, 1), np.float32)
            for r in ranks:
                mask[shard_rows(r, world)] = float(uses_branch(mode, r, step, micro))
            branch = minidp.to_tensor(mask[rows]) if mode is not None else False
            out = model(minidp.to_tensor(x[rows]), use_branch=branch)
            loss_fn(out, minidp.to_tensor(y[rows])).backward()
        optimizer.step()
        optimizer.clear_grad()
    return state(model)


def train_data_parallel(scenario: Dict[str, Any]) -> Dict[str, Any]:
    """This rank's part of ``scenario``; needs init_parallel_env() done."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = build_model(scenario, rank)
    before = state(model)
    dp = minidp.DataParallel(
        model,
        comm_buffer_size=scenario.get("comm_mb", 25),
        last_comm_buffer_size=scenario.get("last_comm_mb", 1),
        find_unused_parameters=scenario.get("find_unused", False),
    )
    if "comm_hook" in scenario:
        dp.register_comm_hook(None, COMM_HOOKS[scenario["comm_hook"]])
    after_init = state(model)
    buckets = [[id(p) for p in bucket] for bucket in dp._reducer.buckets]
    names = {id(p): n for n, p in model.named_parameters()}
    optimizer = make_optimizer(scenario.get("optimizer", "sgd"), dp.parameters())
    loss_fn = nn.MSELoss()
    accumulate = scenario.get("accumulate", 1)
    rows = shard_rows(rank, world)
    local_grads_differ = []
    for step in range(scenario.get("steps", 3)):
        for micro in range(accumulate):
            x, y = global_batch(step, micro)
            flag = uses_branch(scenario.get("branch"), rank, step, micro)
            context = dp.no_sync() if micro < accumulate - 1 else contextlib.nullcontext()
            with context:
                out = dp(minidp.to_tensor(x[rows]), use_branch=flag)
                loss_fn(out, minidp.to_tensor(y[rows])).backward()
            if micro < accumulate - 1:
                # inside no_sync the gradient is this rank's own: gather to see they differ
                g = model.fc1.weight.grad.numpy().astype(np.float32)
                gathered = []
                dist.all_gather(gathered, minidp.to_tensor(g))
                local_grads_differ.append(not all(np.array_equal(t.numpy(), gathered[0].numpy()) for t in gathered))
        optimizer.step()
        optimizer.clear_grad()
    return {
        "before": before,
        "after_init": after_init,
        "final": state(model),
        "buckets": [[names[i] for i in bucket] for bucket in buckets],
        "local_grads_differ": local_grads_differ,
    }


def equivalence_worker(scenarios: List[Dict[str, Any]]) -> Dict[str, Any]:
    group = dist.init_parallel_env()
    results = {
        "backend": group.backend,
        "world_size": dist.get_world_size(),
        "scenarios": {s["name"]: train_data_parallel(s) for s in scenarios},
    }
    dist.barrier()
    dist.destroy_process_group()
    return results


# ----------------------------------------------------------------------------------------------
# The seed's examples
# ----------------------------------------------------------------------------------------------


class LinearNet(nn.Layer):
    """The network of the docs' DataParallel example."""

    def __init__(self):
        super().__init__()
        self._linear1 = nn.Linear(10, 10)
        self._linear2 = nn.Linear(10, 1)

    def forward(self, x):
        return self._linear2(self._linear1(x))


def basic_example_train():
    """The DataParallel example of the docs, returning what a test needs to check it."""
    import minidp as paddle
    import minidp.optimizer as opt

    dist.init_parallel_env()
    rank = dist.get_rank()
    paddle.seed(rank)  # different weights and data per rank: DataParallel must reconcile them
    layer = LinearNet()
    initial = state(layer)
    dp_layer = paddle.DataParallel(layer)
    synced = state(layer)
    loss_fn = nn.MSELoss()
    adam = opt.Adam(learning_rate=0.001, parameters=dp_layer.parameters())
    inputs = paddle.randn([10, 10], "float32")
    outputs = dp_layer(inputs)
    labels = paddle.randn([10, 1], "float32")
    loss = loss_fn(outputs, labels)
    loss.backward()
    grads = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    adam.step()
    adam.clear_grad()
    return {
        "rank": rank,
        "initial": initial,
        "synced": synced,
        "final": state(layer),
        "grads": grads,
        "inputs": inputs.numpy(),
        "labels": labels.numpy(),
    }


def examples_worker(directory: str) -> Dict[str, Any]:
    """The no_sync, PyLayer + fused_allreduce_gradients and state_dict examples on one job."""
    import minidp as paddle
    import minidp.nn as nn
    from minidp.autograd import PyLayer
    from minidp.distributed.fleet.utils.hybrid_parallel_util import fused_allreduce_gradients

    dist.init_parallel_env()
    rank = dist.get_rank()
    report: Dict[str, Any] = {"rank": rank}

    # --- no_sync ---------------------------------------------------------------------------
    class SimpleNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self._linear = nn.Linear(10, 1)

        def forward(self, x):
            return self._linear(x)

    paddle.seed(7)
    model = SimpleNet()
    dp_model = paddle.DataParallel(model)
    paddle.seed(100 + rank)
    inputs_1 = paddle.randn([10, 10], "float32")
    inputs_2 = paddle.ones([10, 10], "float32")
    with dp_model.no_sync():
        dp_model(inputs_1).backward()
    report["no_sync_inside"] = model._linear.weight.grad.numpy().copy()
    dp_model(inputs_2).backward()
    report["no_sync_after"] = model._linear.weight.grad.numpy().copy()
    report["no_sync_inputs_1"] = inputs_1.numpy()
    report["no_sync_weight"] = model._linear.weight.numpy().copy()

    # --- PyLayer + no_sync + fused_allreduce_gradients --------------------------------------
    class cus_tanh(PyLayer):
        calls = 0

        @staticmethod
        def forward(ctx, x):
            y = paddle.tanh(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            cus_tanh.calls += 1
            (y,) = ctx.saved_tensor()
            grad = dy * (1 - paddle.square(y))
            return grad

    class PyLayerNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, inputs):
            inputs = cus_tanh.apply(inputs)
            return self.linear(inputs)

    paddle.seed(11 + rank)  # different initial weights: the broadcast must make them equal
    model = PyLayerNet()
    report["pylayer_initial"] = state(model)
    model = paddle.DataParallel(model)
    report["pylayer_synced"] = state(model._layers)
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.default_rng(50 + rank)
    xs, local_differ = [], []
    for step in range(10):
        x_data = rng.standard_normal((2, 2)).astype(np.float32)
        xs.append(x_data)
        x = paddle.to_tensor(x_data)
        x.stop_gradient = False
        with model.no_sync():
            y_pred = model(x)
            loss = y_pred.mean()
            loss.backward()
        g = paddle.to_tensor(model._layers.linear.weight.grad.numpy().copy())
        gathered = []
        dist.all_gather(gathered, g)
        local_differ.append(not np.array_equal(gathered[0].numpy(), gathered[1].numpy()))
        fused_allreduce_gradients(list(model.parameters()), None)
        opt.step()
        opt.clear_grad()
    report["pylayer_xs"] = np.stack(xs)
    report["pylayer_final"] = state(model._layers)
    report["pylayer_local_differ"] = local_differ
    report["pylayer_backward_calls"] = cus_tanh.calls

    # --- state_dict / set_state_dict --------------------------------------------------------
    paddle.seed(3)
    emb_layer = paddle.nn.Embedding(10, 10)
    emb = paddle.DataParallel(emb_layer)
    state_dict = emb.state_dict()
    report["sd_keys"] = list(state_dict.keys())
    report["sd_layer_keys"] = list(emb_layer.state_dict().keys())
    path = os.path.join(directory, f"paddle_dy_rank{rank}.pdparams")
    paddle.save(state_dict, path)
    saved = emb_layer.weight.numpy().copy()
    with paddle.no_grad():
        emb_layer.weight.set_value(np.zeros((10, 10), np.float32))
    para_state_dict = paddle.load(path)
    emb.set_state_dict(para_state_dict)
    report["sd_restored"] = bool(np.array_equal(emb_layer.weight.numpy(), saved))
    # the aliases, and a state dict saved without DataParallel
    with paddle.no_grad():
        emb_layer.weight.set_value(np.ones((10, 10), np.float32))
    emb.set_dict(para_state_dict)
    report["sd_set_dict"] = bool(np.array_equal(emb_layer.weight.numpy(), saved))
    with paddle.no_grad():
        emb_layer.weight.set_value(np.ones((10, 10), np.float32))
    emb.load_dict({"weight": paddle.to_tensor(saved)})
    report["sd_load_dict"] = bool(np.array_equal(emb_layer.weight.numpy(), saved))
    dist.barrier()
    dist.destroy_process_group()
    return report


# ----------------------------------------------------------------------------------------------
# Errors: missing gradients and mismatched models
# ----------------------------------------------------------------------------------------------


class TwoLayer(nn.Layer):
    """a -> b, with variations that make it differ from the plain model on some rank."""

    def __init__(self, first_out: int = 3, second: str = "float32", extra: bool = False, swapped: bool = False) -> None:
        super().__init__()
        if swapped:  # same names, shapes and dtypes, registered in the other order
            self.b = nn.Linear(3, 3)
            self.a = nn.Linear(4, 3)
        else:
            self.a = nn.Linear(4, first_out)
            self.b = nn.Linear(first_out, 3)
        if second != "float32":
            self.b.astype(second)
        if extra:
            self.c = nn.Linear(3, 3)

    def forward(self, x):
        return self.b(self.a(x))


class OptionalLayerNet(nn.Layer):
    """first -> tanh -> (+ extra) -> last; ``extra`` takes part only when asked to."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.extra = nn.Linear(4, 4)
        self.last = nn.Linear(4, 1)

    def forward(self, x, use_extra=True):
        h = minidp.tanh(self.first(x))
        if use_extra:
            h = h + self.extra(h)
        return self.last(h)


def errors_worker() -> Dict[str, Any]:

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    report: Dict[str, Any] = {"rank": rank}
    x = minidp.to_tensor(np.random.default_rng(rank).standard_normal((3, 4)).astype(np.float32))

    # --- missing gradients without find_unused_parameters ---------------------------------
    minidp.seed(1)
    model = OptionalLayerNet()
    dp = minidp.DataParallel(model, find_unused_parameters=False)

    def attempt(use_extra):
        for p in model.parameters():
            p.clear_grad()
        started = time.monotonic()
        try:
            dp(x, use_extra=use_extra).sum().backward()
        except RuntimeError as error:
            return str(error), time.monotonic() - started
        return None, time.monotonic() - started

    report["first"] = attempt(True)  # the first step uses every parameter
    report["missing_everywhere"] = attempt(False)
    report["missing_on_last_rank"] = attempt(rank != world - 1)
    # the job is still in step after the errors: a complete pass averages as usual
    report["recovered"] = attempt(True)
    grad = model.first.weight.grad.numpy().copy()
    gathered = []
    dist.all_gather(gathered, minidp.to_tensor(grad))
    report["recovered_equal"] = all(np.array_equal(t.numpy(), grad) for t in gathered)
    # the same missing gradients are fine with find_unused_parameters=True
    minidp.seed(1)
    model = OptionalLayerNet()
    dp = minidp.DataParallel(model, find_unused_parameters=True)
    report["find_unused_ok"] = attempt(rank != world - 1)

    # --- mismatched models at construction ------------------------------------------------
    last = rank == world - 1
    cases = {
        "shape": dict(first_out=5 if last else 3),
        "dtype": dict(second="float64" if last else "float32"),
        "extra": dict(extra=last),
        "order": dict(swapped=last),
        "frozen": {},
        "same": {},
    }
    report["mismatch"] = {}
    for case, kwargs in cases.items():
        minidp.seed(rank)
        model = TwoLayer(**kwargs)
        if case == "frozen" and last:  # trained everywhere else, frozen here
            model.b.weight.stop_gradient = True
        try:
            minidp.DataParallel(model)
            outcome = None
        except RuntimeError as error:
            outcome = str(error)
        # every rank ran the same collectives: the group still works
        check = minidp.to_tensor(np.array([1.0]))
        dist.all_reduce(check)
        report["mismatch"][case] = (outcome, float(check.numpy()[0]))
    dist.barrier()
    dist.destroy_process_group()
    return report


def unused_parameters_worker() -> Dict[str, Any]:
    """find_unused_parameters=False: what the first step leaves unused stays unused.

    ``head_never_used``: ``extra`` is unused from the first step on; the model trains. Then
    ``extra`` is used after all (an error). ``stops_being_used``: ``extra`` is used at the first
    step and not at the second (an error), then the job goes on.
    """
    dist.init_parallel_env()
    rank = dist.get_rank()
    x = minidp.to_tensor(np.random.default_rng(rank).standard_normal((3, 4)).astype(np.float32))
    report: Dict[str, Any] = {"rank": rank}

    def attempt(dp, use_extra):
        started = time.monotonic()
        try:
            dp(x, use_extra=use_extra).sum().backward()
        except RuntimeError as error:
            return str(error), time.monotonic() - started
        return None, time.monotonic() - started

    def averaged(model):
        grad = model.first.weight.grad.numpy().copy()
        gathered = []
        dist.all_gather(gathered, minidp.to_tensor(grad))
        return all(np.array_equal(t.numpy(), grad) for t in gathered)

    minidp.seed(1)
    model = OptionalLayerNet()
    dp = minidp.DataParallel(model, find_unused_parameters=False)
    optimizer = optim.SGD(learning_rate=0.1, parameters=dp.parameters())
    steps = []
    for _ in range(2):
        outcome = attempt(dp, False)
        steps.append((outcome[0], averaged(model), model.extra.weight._grad is None))
        optimizer.step()
        optimizer.clear_grad()
    report["head_never_used"] = steps
    report["head_used_later"] = attempt(dp, True)

    minidp.seed(1)
    model = OptionalLayerNet()
    dp = minidp.DataParallel(model, find_unused_parameters=False)
    report["stops_first"] = attempt(dp, True)
    model.clear_gradients()
    report["stops_being_used"] = attempt(dp, False)
    model.clear_gradients()
    report["stops_recovered"] = attempt(dp, True)
    report["stops_recovered_equal"] = averaged(model)
    dist.barrier()
    dist.destroy_process_group()
    return report


def uninitialised_worker() -> Any:
    """A rank of a job of several ranks whose script forgot init_parallel_env()."""
    try:
        minidp.DataParallel(LinearNet())
    except RuntimeError as error:
        return str(error)
    return None


def no_trainable_on_one_rank_worker() -> Any:
    """The last rank's model has every parameter frozen; the others train theirs."""

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    model = TwoLayer()
    if rank == world - 1:
        for p in model.parameters():
            p.stop_gradient = True
    started = time.monotonic()
    try:
        minidp.DataParallel(model)
        outcome = None
    except (RuntimeError, ValueError) as error:
        outcome = f"{type(error).__name__}: {error}"
    return outcome, time.monotonic() - started


def repeated_backward_worker() -> Dict[str, Any]:
    """Gradients of a loss backwarded twice (``retain_graph=True``, cleared between): both passes
    must be averaged over the ranks. Also whether a dropped forward output is freed at once."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    minidp.seed(3)
    layer = Net()
    dp = minidp.DataParallel(layer)
    rng = np.random.default_rng(rank)
    x = minidp.to_tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = minidp.to_tensor(rng.standard_normal((4, 2)).astype(np.float32))
    loss = nn.MSELoss()(dp(x), y)
    passes = []
    for retain in (True, False):
        loss.backward(retain_graph=retain)
        passes.append({n: p.grad.numpy().copy() for n, p in layer.named_parameters()})
        for p in layer.parameters():
            p.clear_grad()
    gc.disable()  # the re-arming hook must not tie an output into a cycle: refcounting frees it
    try:
        output = weakref.ref(dp(x))
        freed = output() is None
    finally:
        gc.enable()
    return passes, freed


# ----------------------------------------------------------------------------------------------
# group=, world size 1 and the deprecated methods
# ----------------------------------------------------------------------------------------------


def _one_step_grads(layer, dp, x, y) -> Dict[str, np.ndarray]:
    nn.MSELoss()(dp(x), y).backward()
    grads = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    for p in layer.parameters():
        p.clear_grad()
    return grads


def groups_worker() -> Dict[str, Any]:

    dist.init_parallel_env()
    rank = dist.get_rank()
    sub = dist.new_group([1, 2])
    rng = np.random.default_rng(rank)
    x = minidp.to_tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = minidp.to_tensor(rng.standard_normal((4, 2)).astype(np.float32))
    report: Dict[str, Any] = {"rank": rank, "x": x.numpy(), "y": y.numpy()}
    for kind in ("group", "process_group", "default"):
        if kind == "process_group" and sub.process_group is None:
            continue  # outside the group it is None, which would mean the default group
        group = {"group": sub, "process_group": sub.process_group, "default": dist.get_group()}[kind]
        minidp.seed(10 * rank)
        layer = Net()
        initial = state(layer)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dp = minidp.DataParallel(layer, group=group)
        report[kind] = {
            "initial": initial,
            "synced": state(layer),
            "grads": _one_step_grads(layer, dp, x, y),
            "warnings": [str(w.message) for w in caught],
            "has_reducer": dp._reducer is not None,
        }

    # buffers and non-trainable parameters (batch norm's statistics) are broadcast from rank 0
    minidp.seed(rank)
    linear, norm = nn.Linear(3, 3), nn.BatchNorm1D(3)
    linear.register_buffer("steps", minidp.zeros([3]))
    kept = [("steps", linear.steps), ("_mean", norm._mean), ("_variance", norm._variance)]
    for _, tensor in kept:
        tensor.set_value(np.full(tensor.shape, rank + 2.0, np.float32))
    minidp.DataParallel(nn.Sequential(linear, norm))
    report["buffers"] = {name: tensor.numpy().copy() for name, tensor in kept}

    # deprecated no-ops: called on one rank only, they must not communicate
    minidp.seed(5)
    layer = Net()
    dp = minidp.DataParallel(layer)
    loss = nn.MSELoss()(dp(x), y)
    loss.backward()
    before = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    deprecations = []
    if rank == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            same = dp.scale_loss(loss) is loss
            dp.apply_collective_grads()
        deprecations = [(w.category.__name__, str(w.message)) for w in caught]
        report["scale_loss_identity"] = same
    after = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    report["deprecated_grads_unchanged"] = all(np.array_equal(before[n], after[n]) for n in before)
    report["deprecations"] = deprecations
    dist.barrier()
    dist.destroy_process_group()
    return report


def world_size_one_worker() -> Dict[str, Any]:
    """init_parallel_env on a one-process job, then DataParallel: both warn, nothing syncs."""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        group = dist.init_parallel_env()
        minidp.seed(4)
        layer = Net()
        dp = minidp.DataParallel(layer)
    x, y = global_batch(0, 0)
    grads = _one_step_grads(layer, dp, minidp.to_tensor(x), minidp.to_tensor(y))
    minidp.seed(4)
    plain = Net()
    plain_grads = _one_step_grads(plain, plain, minidp.to_tensor(x), minidp.to_tensor(y))
    return {
        "group": group,
        "warnings": [str(w.message) for w in caught],
        "reducer": dp._reducer is not None,
        "same_grads": all(np.array_equal(grads[n], plain_grads[n]) for n in grads),
    }


# ----------------------------------------------------------------------------------------------
# Under mpiexec
# ----------------------------------------------------------------------------------------------


def _flatten_report(report: Dict[str, Any]) -> Dict[str, np.ndarray]:
    flat = {"backend": np.array(report["backend"]), "world_size": np.array(report["world_size"])}
    for name, result in report["scenarios"].items():
        for part in ("before", "after_init", "final"):
            for param, value in result[part].items():
                flat[f"{name}/{part}/{param}"] = value
    return flat


def mpi_main(argv: List[str]) -> None:
    mode, directory, scenarios = argv[0], argv[1], json.loads(argv[2])
    if mode != "mpi-equivalence":
        raise SystemExit(f"unknown mode {mode}")
    report = equivalence_worker(scenarios)
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    np.savez(os.path.join(directory, f"rank{rank}.npz"), **_flatten_report(report))


if __name__ == "__main__":
    mpi_main(sys.argv[1:])
