"""The GPU path on real devices: CuPy tensors, the reducer's kernels, NCCL across GPUs.

Every test needs CUDA through CuPy and skips where CuPy sees no device (the condition of
tests/test_kernels_gpu.py); the multi-process ones need two GPUs. A user with GPUs runs these
first: ``python -m pytest -m gpu``. What CI checks without a GPU is in test_nccl.py
(the backend's logic on a stand-in) and test_comm_hooks.py (the reducer's kernel path
on the host kernel runner).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from dist_utils import run_workers
from minidp.core import backend, kernels
from minidp.core.distributed.backends import GroupSpec, ReduceOp
from minidp.distributed.backends import nccl
from minidp.nn.functional.attention import fused_attention
from minidp.nn.functional.recurrent import RecurrentWeights, gru_sequence, lstm_sequence
from minidp.core.distributed.reducer import Reducer, assign_buckets
from minidp.core.distributed.store import TCPStore
from test_comm_hooks import HOOKS, MirrorGroup, loss_of, make_params
from test_optimizer import LAUNCHES, OPTIMIZERS
from test_optimizer import train as train_optimizer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not backend.is_compiled_with_cuda(), reason="no CUDA device visible to CuPy (no GPU, driver or cupy)"
    ),
]
needs_two_gpus = pytest.mark.skipif(
    backend.cuda_device_count() < 2, reason=f"needs two GPUs, one per rank (CuPy sees {backend.cuda_device_count()})"
)
GPU = "gpu:0"


@pytest.fixture
def cupy():
    """CuPy, with gpu:0 as the current place for the test (the previous place restored)."""
    import cupy

    previous = minidp.get_device()
    minidp.set_device(GPU)
    yield cupy
    minidp.set_device(previous)


# --- tensors on the GPU ------------------------------------------------------------------------


def test_set_device_makes_new_tensors_cupy_arrays(cupy):
    made = [
        minidp.zeros([2, 3]),
        minidp.ones([2]),
        minidp.full([2], 3.0),
        minidp.arange(5),
        minidp.randn([4, 4], "float32"),
        minidp.to_tensor([1.0, 2.0]),
    ]
    for tensor in made:
        assert isinstance(tensor._data, cupy.ndarray), tensor
        assert tensor.place == GPU
    layer = minidp.nn.Linear(3, 2)
    assert all(isinstance(p._data, cupy.ndarray) for p in layer.parameters())
    out = layer(minidp.randn([5, 3]))
    out.sum().backward()
    assert all(isinstance(p.grad._data, cupy.ndarray) for p in layer.parameters())


def test_to_tensor_takes_cupy_arrays_without_a_host_round_trip(cupy, monkeypatch):
    def no_host_copy(array):
        raise AssertionError("to_tensor copied a CuPy array through the host")

    monkeypatch.setattr(backend, "to_host", no_host_copy)
    source = cupy.arange(6, dtype="float32").reshape(2, 3)
    tensor = minidp.to_tensor(source)
    assert isinstance(tensor._data, cupy.ndarray)
    assert tensor._data.data.ptr != source.data.ptr, "to_tensor copies its data"
    assert tensor.dtype == source.dtype
    cupy.testing.assert_array_equal(tensor._data, source)
    as_float64 = minidp.to_tensor(source, dtype="float64")
    assert isinstance(as_float64._data, cupy.ndarray) and as_float64.dtype == np.float64


def test_state_moves_between_gpu_and_cpu_models(cupy):
    gpu_net = minidp.nn.Linear(3, 2)
    minidp.set_device("cpu")
    cpu_net = minidp.nn.Linear(3, 2)
    minidp.set_device(GPU)
    cpu_net.set_state_dict(gpu_net.state_dict())
    for name, value in cpu_net.state_dict().items():
        assert isinstance(value._data, np.ndarray)
        np.testing.assert_array_equal(value._data, gpu_net.state_dict()[name].numpy())
    gpu_net.set_state_dict({name: value * 2 for name, value in cpu_net.state_dict().items()})
    for name, value in gpu_net.state_dict().items():
        assert isinstance(value._data, cupy.ndarray)
        np.testing.assert_array_equal(value.numpy(), cpu_net.state_dict()[name].numpy() * 2)


def _run_on(place: str, fn, arrays, constants):
    """``fn`` on float64 tensors of ``arrays`` at ``place``: output and gradients, on the host."""
    previous = minidp.get_device()
    minidp.set_device(place)
    try:
        inputs = [minidp.to_tensor(a, stop_gradient=False) for a in arrays]
        fixed = [minidp.to_tensor(c) for c in constants]
        out = fn(*inputs, *fixed)
        out.backward()
        return backend.to_host(out._data), [backend.to_host(t.grad._data) for t in inputs]
    finally:
        minidp.set_device(previous)


rng = np.random.default_rng(0)
OP_CASES = {
    "matmul-tanh": (
        lambda a, b: minidp.tanh(minidp.matmul(a, b)),
        [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))],
        [],
    ),
    "broadcast-arithmetic": (
        lambda a, b: (a + b) * a - a / (b * b + 1),
        [rng.standard_normal((3, 4)), rng.standard_normal(4)],
        [],
    ),
    "exp-log-sqrt": (lambda a: minidp.sqrt(minidp.log(minidp.exp(a) + 1)), [rng.standard_normal((2, 3))], []),
    "reductions": (
        lambda a: minidp.mean(a, axis=0) * minidp.max(a, axis=0) + minidp.sum(a),
        [rng.standard_normal((4, 3))],
        [],
    ),
    "index-concat-split": (
        lambda a: minidp.concat(minidp.split(a[1:, ::2], 2, axis=1)[::-1], axis=0),
        [rng.standard_normal((3, 4))],
        [],
    ),
    "cross-entropy": (
        lambda logits, labels: F.cross_entropy(logits, labels),
        [rng.standard_normal((5, 3))],
        [np.array([0, 2, 1, 1, 0], "int64")],
    ),
    "conv-relu-pool": (
        lambda x, w: F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2),
        [rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))],
        [],
    ),
    "embedding": (
        lambda table, ids: F.embedding(ids, table),
        [rng.standard_normal((6, 3))],
        [np.array([[0, 5, 0], [2, 2, 1]], "int64")],
    ),
    "lstm-sequence": (
        lambda x, h, c, w_ih, w_hh, b_ih, b_hh, alive: sum(
            (o * o).sum() for o in lstm_sequence(x, h, c, RecurrentWeights(w_ih, w_hh, b_ih, b_hh), alive._data)
        ),
        [rng.standard_normal(s) for s in ((3, 4, 2), (3, 5), (3, 5), (20, 2), (20, 5), (20,), (20,))],
        [np.arange(4)[:, None, None] < np.array([4, 2, 3])[None, :, None]],
    ),
    "gru-sequence": (
        lambda x, h, *weights: sum((o * o).sum() for o in gru_sequence(x, h, RecurrentWeights(*weights))),
        [rng.standard_normal(s) for s in ((3, 4, 2), (3, 5), (15, 2), (15, 5), (15,), (15,))],
        [],
    ),
    "fused-attention": (
        lambda q, k, v, mask: sum((o * o).sum() for o in fused_attention(q, k, v, mask, 0.0, 0.5)),
        [rng.standard_normal(s) for s in ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), (2, 1, 1, 5))],
        [],
    ),
    "layer-norm-gelu": (
        lambda x, w, b: F.gelu(F.layer_norm(x, [4], w, b)),
        [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)],
        [],
    ),
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_ops_forward_and_backward_on_cupy_match_numpy(cupy, case):
    fn, arrays, constants = OP_CASES[case]
    want_out, want_grads = _run_on("cpu", fn, arrays, constants)
    got_out, got_grads = _run_on(GPU, fn, arrays, constants)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-10, atol=1e-12, err_msg="forward")
    for index, (got, want) in enumerate(zip(got_grads, want_grads)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"grad {index}")


# --- the reducer's kernels, launched for real ------------------------------------------------


def test_reducer_packs_and_unpacks_gradients_with_the_kernels(cupy, monkeypatch):
    launched = []
    real_launch = kernels.launch

    def counting_launch(plan) -> None:
        launched.append(plan.name)
        real_launch(plan)

    monkeypatch.setattr(kernels, "launch", counting_launch)
    plain, reduced = make_params(cupy), make_params(cupy)
    loss_of(plain, 0).backward()
    ordered = list(reduced.values())
    group = MirrorGroup()
    reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), group, True, param_names=list(reduced))
    loss = loss_of(reduced, 0)
    reducer.prepare_for_backward([loss])
    loss.backward()
    assert any(name.startswith("minidp_pack") for name in launched)
    assert sum(name.startswith("minidp_unpack") for name in launched) == len(reducer.buckets)
    for name, param in reduced.items():
        assert isinstance(param._grad, cupy.ndarray)
        wanted = plain[name]._grad if plain[name]._grad is not None else cupy.zeros_like(param._data)
        # the mirror peer makes the average equal to the local gradient, exactly
        cupy.testing.assert_array_equal(param._grad, wanted, err_msg=name)
    for bucket, sent in zip(reducer._buckets, group.sent):
        for param, offset in zip(bucket.params, bucket.offsets):
            local = plain[param.name]._grad
            if local is not None:
                cupy.testing.assert_array_equal(sent[offset : offset + param._data.size], local.reshape(-1) * 0.5)


# --- optimizers: multi-tensor kernels, launched for real ------------------------------------------


@pytest.mark.parametrize("multi_precision", [False, True], ids=["plain", "master-weights"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_on_the_gpu_match_the_cpu_bit_for_bit(cupy, monkeypatch, name, multi_precision):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 16-bit parameters without master weights warn
        cpu_params, cpu_opt, _ = train_optimizer(name, multi_precision, monkeypatch, False)
        gpu_params, gpu_opt, launches = train_optimizer(name, multi_precision, monkeypatch, False, xp=cupy)
    assert len(launches) == LAUNCHES[name], launches
    for key, wanted in cpu_params.items():
        assert isinstance(gpu_params[key]._data, cupy.ndarray)
        assert gpu_params[key].numpy().tobytes() == wanted.numpy().tobytes(), key
    for got, wanted in zip(gpu_opt._slots, cpu_opt._slots):
        for key, value in wanted.state.items():
            if not isinstance(value, float):
                assert got.state[key].get().tobytes() == value.tobytes(), (got.param.name, key)
        if wanted.master is not None:
            assert got.master.get().tobytes() == wanted.master.tobytes(), got.param.name


def test_bfloat16_tensors_and_a_linear_layer_on_the_gpu(cupy):
    x = minidp.to_tensor(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4), dtype="bfloat16")
    assert isinstance(x._data, cupy.ndarray) and x.dtype == minidp.bfloat16
    layer = minidp.nn.Linear(4, 2)
    layer.to(dtype="bfloat16")
    out = layer(x * 0.5)
    assert out.dtype == minidp.bfloat16
    out.mean().backward()
    assert all(p.grad.dtype == minidp.bfloat16 for p in layer.parameters())
    wanted = (x.astype("float32").numpy() * 0.5) @ layer.weight.astype("float32").numpy()
    np.testing.assert_allclose(
        out.astype("float32").numpy(), wanted + layer.bias.astype("float32").numpy(), rtol=2**-7, atol=2**-7
    )


@pytest.mark.parametrize("hook", ["fp16", "bf16"])
def test_compression_on_the_device_equals_the_numpy_copies_bit_for_bit(cupy, hook):
    """The device kernels round to half precision as NumPy does (to nearest even), so the
    compressed average on the GPU equals the host path's exactly."""
    grads = {}
    for place, xp in (("cpu", np), (GPU, cupy)):
        minidp.set_device(place)
        params = make_params(xp)
        ordered = list(params.values())
        reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), MirrorGroup(), True, param_names=list(params))
        reducer.register_comm_hook(None, HOOKS[hook])
        loss = loss_of(params, 0)
        reducer.prepare_for_backward([loss])
        loss.backward()
        grads[xp] = {name: backend.to_host(p._grad) for name, p in params.items()}
    for name, want in grads[np].items():
        assert grads[cupy][name].tobytes() == want.tobytes(), name


# --- NCCL --------------------------------------------------------------------------------------


def test_nccl_group_of_one_gpu_runs_every_collective(cupy):
    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=60)
    group = nccl.create_process_group(GroupSpec(name="solo", global_ranks=(0,), global_rank=0, timeout=60, store=store))
    try:
        x = cupy.arange(6, dtype="float32")
        group.all_reduce(x, ReduceOp.AVG)
        cupy.testing.assert_array_equal(x, cupy.arange(6, dtype="float32"))
        negative = cupy.array([-7, 7, -1], "int32")
        group.all_reduce(negative, ReduceOp.AVG)  # ncclAvg over one rank: unchanged
        cupy.testing.assert_array_equal(negative, [-7, 7, -1])
        tensor = minidp.to_tensor(np.array([1.5, -2.0], "float32"))
        group.all_reduce(tensor, ReduceOp.MAX)
        assert isinstance(tensor._data, cupy.ndarray)
        np.testing.assert_array_equal(tensor.numpy(), [1.5, -2.0])
        gathered = cupy.zeros((1, 3), "int64")
        group.all_gather(gathered, cupy.array([4, 5, 6]))
        cupy.testing.assert_array_equal(gathered, [[4, 5, 6]])
        out = cupy.zeros(2, "float64")
        group.reduce_scatter(out, cupy.array([1.0, 2.0]))
        cupy.testing.assert_array_equal(out, [1.0, 2.0])
        host = np.full(3, 2.0)
        group.all_reduce(host, ReduceOp.MAX, sync_op=False)
        np.testing.assert_array_equal(host, [2.0, 2.0, 2.0])
        works = [group.all_reduce(cupy.ones(1 << 16), sync_op=False) for _ in range(4)]
        assert all(work.wait() for work in works)
        group.barrier()
        runtime = nccl.CupyRuntime("rank 0")
        event = runtime.new_event()
        event.record(runtime.current_stream())
        event.synchronize()
        assert runtime.event_done(event)
    finally:
        group.shutdown()
        store.close()


def nccl_collectives_worker() -> dict:
    """One rank: init_parallel_env on nccl, every collective on CuPy tensors."""
    import cupy

    import minidp.distributed as dist

    group = dist.init_parallel_env()
    rank, size = dist.get_rank(), dist.get_world_size()
    report = {"backend": group.backend, "device": minidp.get_device()}
    x = minidp.to_tensor(np.full([2, 3], rank + 1, "float32"))
    report["cupy"] = isinstance(x._data, cupy.ndarray)
    dist.all_reduce(x)
    report["sum"] = x.numpy().tolist()
    y = minidp.to_tensor(np.array([rank, -rank], "int64"))
    dist.all_reduce(y, op=dist.ReduceOp.MIN)
    report["min"] = y.numpy().tolist()
    z = minidp.to_tensor(np.arange(4.0) * (rank + 1))
    dist.all_reduce(z, op=dist.ReduceOp.AVG)
    report["avg"] = z.numpy().tolist()
    b = minidp.to_tensor(np.full([3], rank, "float64"))
    dist.broadcast(b, src=size - 1)
    report["broadcast"] = b.numpy().tolist()
    gathered = []
    dist.all_gather(gathered, minidp.to_tensor(np.array([rank * 10.0, rank * 10.0 + 1])))
    report["all_gather"] = [t.numpy().tolist() for t in gathered]
    out = minidp.to_tensor(np.zeros([2], "float32"))
    dist.reduce_scatter(out, minidp.to_tensor(np.arange(2 * size, dtype="float32")))
    report["reduce_scatter"] = out.numpy().tolist()
    token = minidp.to_tensor(np.zeros([3], "int32"))
    if rank == 0:
        dist.send(minidp.to_tensor(np.array([7, 8, 9], "int32")), dst=1)
    elif rank == 1:
        dist.recv(token, src=0)
    report["recv"] = token.numpy().tolist()
    works = [dist.all_reduce(minidp.ones([1 << 16]), sync_op=False) for _ in range(8)]
    report["async"] = all(work.wait() for work in works)
    dist.barrier()
    return report


@needs_two_gpus
def test_nccl_collectives_across_two_gpus():
    reports = run_workers(nccl_collectives_worker, 2, env={"PADDLE_DISTRI_BACKEND": "nccl"}, timeout=240)
    for rank, report in enumerate(reports):
        assert report["backend"] == "nccl" and report["device"] == f"gpu:{rank}"
        assert report["cupy"]
        assert report["sum"] == [[3.0] * 3] * 2
        assert report["min"] == [0, -1]
        assert report["avg"] == [0.0, 1.5, 3.0, 4.5]
        assert report["broadcast"] == [1.0] * 3
        assert report["all_gather"] == [[0.0, 1.0], [10.0, 11.0]]
        assert report["reduce_scatter"] == [[0.0, 2.0], [4.0, 6.0]][rank]
        assert report["recv"] == ([7, 8, 9] if rank == 1 else [0, 0, 0])
        assert report["async"]


# --- DataParallel on nccl ------------------------------------------------------------------------

STEPS, BATCH = 3, 8


def _batches():
    data = np.random.default_rng(5)
    return [
        (data.standard_normal((BATCH, 4)).astype("float32"), data.standard_normal((BATCH, 2)).astype("float32"))
        for _ in range(STEPS)
    ]


def train(rank: int, size: int, data_parallel: bool) -> dict:
    """Train a small MLP for STEPS SGD steps on rank's share of each batch; its final state."""
    minidp.seed(0)
    net = minidp.nn.Sequential(minidp.nn.Linear(4, 8), minidp.nn.Tanh(), minidp.nn.Linear(8, 2))
    model = minidp.DataParallel(net) if data_parallel else net
    optimizer = minidp.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    rows = slice(rank * BATCH // size, (rank + 1) * BATCH // size)
    for x, y in _batches():
        loss = F.mse_loss(model(minidp.to_tensor(x[rows])), minidp.to_tensor(y[rows]))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return {name: value.numpy() for name, value in net.state_dict().items()}


def data_parallel_worker() -> dict:
    """One rank of DataParallel training on nccl; also whether the reducer used the kernels."""
    import cupy

    import minidp.distributed as dist

    launched = []
    real_launch = kernels.launch

    def counting_launch(plan) -> None:
        launched.append(plan.name)
        real_launch(plan)

    kernels.launch = counting_launch
    dist.init_parallel_env()
    state = train(dist.get_rank(), dist.get_world_size(), data_parallel=True)
    probe = minidp.zeros([1])
    dist.barrier()
    return {"state": state, "kernels": sorted(set(launched)), "on_gpu": isinstance(probe._data, cupy.ndarray)}


@needs_two_gpus
def test_data_parallel_on_nccl_matches_single_process_training():
    reports = run_workers(data_parallel_worker, 2, env={"PADDLE_DISTRI_BACKEND": "nccl"}, timeout=240)
    reference = train(0, 1, data_parallel=False)
    for rank, report in enumerate(reports):
        assert report["on_gpu"]
        assert any(name.startswith("minidp_pack") for name in report["kernels"])
        assert any(name.startswith("minidp_unpack") for name in report["kernels"])
        for name, wanted in reference.items():
            np.testing.assert_allclose(
                report["state"][name], wanted, rtol=1e-4, atol=1e-5, err_msg=f"rank {rank}: {name}"
            )
