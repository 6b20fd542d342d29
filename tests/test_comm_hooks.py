"""Comm hooks (``minidp/core/distributed/comm_hooks.py``): how the reducer's buckets are packed,
communicated and unpacked, on the CPU path and on the GPU path -- pack and unpack by the CUDA
kernels -- run on the CPU.

The kernel copy is chosen for NumPy buckets by patching ``comm_hooks.copy_for``, and
``minidp.core.kernels.launch`` runs each launch with the host kernel runner (the .cu sources compiled
by g++), so every line of the path and the kernels' arithmetic run here. Its results must equal
the CPU path's bit for bit, for the plain average and for fp16 and bf16 compression, which must
stay within half precision of the float32 average. tests/test_gpu.py runs the same path on
CuPy arrays.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import minidp
import minidp.core.kernels
from kernel_host.runner import run as run_on_host
from minidp.core.distributed import comm_hooks
from minidp.core.distributed.backends import Work
from minidp.core.distributed.reducer import Reducer, assign_buckets

pytestmark = pytest.mark.timeout(180)

HOOKS = {
    "plain": comm_hooks.allreduce_hook,
    "fp16": comm_hooks.fp16_compress_hook,
    "bf16": comm_hooks.bf16_compress_hook,
}
WIRE = {"plain": np.dtype("float32"), "fp16": np.dtype("float16"), "bf16": np.dtype(ml_dtypes.bfloat16)}


class MirrorGroup:
    """Rank 0 of two ranks whose peer holds the same gradients: the SUM doubles the buffer.

    ``sent`` keeps a copy of every buffer as it was handed to the all-reduce.
    """

    size = 2
    rank = 0

    def __init__(self) -> None:
        self.sent = []

    def allocate(self, shape, dtype):
        return np.zeros(shape, dtype)

    def all_reduce(self, buffer, sync_op: bool = True) -> Work:
        self.sent.append(buffer.copy())
        buffer += buffer
        return Work.completed("mirror all_reduce")


def make_params(xp=np):
    """Parameters of two dtypes (arrays of ``xp``); w2 is used transposed, so its gradient is
    not contiguous; "unused" takes no part in the loss."""
    rng = np.random.default_rng(7)
    shapes = {
        "w1": ((5, 4), "float32"),
        "b1": ((4,), "float32"),
        "w2": ((3, 4), "float32"),
        "w64": ((4,), "float64"),
        "unused": ((2,), "float32"),
    }
    return {
        name: minidp.nn.Parameter(xp.asarray(rng.standard_normal(shape).astype(dtype)), name=name)
        for name, (shape, dtype) in shapes.items()
    }


def loss_of(params, step: int, unused_at_first: bool = False):
    """A loss using every parameter but "unused" (``x`` is created at the current device);
    with ``unused_at_first``, step 0 uses "unused" too."""
    x = minidp.to_tensor(np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5) * (step + 1))
    hidden = minidp.tanh(x @ params["w1"] + params["b1"])
    term32 = (hidden @ params["w2"].T).sum()
    term64 = (params["w64"] * params["w64"]).sum().astype("float32")
    if unused_at_first and step == 0:
        term32 = term32 + params["unused"].sum()
    return term32 + term64


def train_two_steps(kernel_path: bool, monkeypatch, find_unused: bool = True, hook="plain"):
    """Grads after two backward passes (the second accumulates), buffers sent, launches made."""
    launches = []
    if kernel_path:
        monkeypatch.setattr(comm_hooks, "copy_for", lambda place: comm_hooks.KernelCopy)

        def launch(plan) -> None:
            launches.append(plan.name)
            run_on_host(plan)

        monkeypatch.setattr(minidp.core.kernels, "launch", launch)
    params = make_params()
    ordered = list(params.values())
    group = MirrorGroup()
    reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), group, find_unused, param_names=list(params))
    reducer.register_comm_hook(None, HOOKS[hook])
    grads = []
    for step in range(2):
        loss = loss_of(params, step, unused_at_first=not find_unused)
        reducer.prepare_for_backward([loss])
        loss.backward()
        grads.append({name: p._grad.copy() for name, p in params.items()})
    monkeypatch.undo()
    return grads, group.sent, launches, reducer


@pytest.mark.parametrize("hook", list(HOOKS))
def test_kernel_path_matches_the_cpu_path_bit_for_bit(monkeypatch, hook):
    plain = make_params()
    loss_of(plain, 0).backward()
    assert not plain["w2"]._grad.flags.c_contiguous, "the test needs a non-contiguous gradient"
    cpu_grads, cpu_sent, no_launches, _ = train_two_steps(False, monkeypatch, hook=hook)
    grads, sent, launches, reducer = train_two_steps(True, monkeypatch, hook=hook)
    assert no_launches == []
    assert len(reducer.buckets) >= 3, "the test needs several buckets"
    assert len(sent) == len(cpu_sent)
    for got, wanted, bucket in zip(sent, cpu_sent, reducer.buckets * 2):
        want_dtype = np.dtype("float64") if bucket[0].dtype == np.float64 else WIRE[hook]
        assert got.dtype == wanted.dtype == want_dtype
        assert got.tobytes() == wanted.tobytes(), "packed buffers differ from the CPU path"
    for step, (got_step, wanted_step) in enumerate(zip(grads, cpu_grads)):
        for name, wanted in wanted_step.items():
            got = got_step[name]
            assert got.shape == wanted.shape and got.dtype == wanted.dtype, name
            assert got.tobytes() == wanted.tobytes(), f"step {step}: {name} differs"
    np.testing.assert_array_equal(grads[0]["unused"], np.zeros(2, "float32"))
    # One pack per bucket holding a gradient and one unpack per bucket, each pass. "unused"
    # has no gradient in the first pass (its slot is zero-filled); in the second it has the
    # zeros the first pass gave it.
    buckets = reducer.buckets
    with_grads = sum(any(p.name != "unused" for p in bucket) for bucket in buckets)
    assert with_grads < len(buckets)
    packs = [name for name in launches if name.startswith("minidp_pack")]
    unpacks = [name for name in launches if name.startswith("minidp_unpack")]
    assert len(packs) == with_grads + len(buckets) and len(unpacks) == 2 * len(buckets)
    assert "minidp_pack<double, double>" in packs


@pytest.mark.parametrize("hook", ["fp16", "bf16"])
def test_compression_stays_within_half_precision_of_the_float32_average(monkeypatch, hook):
    """Two roundings to the wire dtype (the scaled gradient, then the sum) bound the error by
    one half-precision epsilon, relative, plus a subnormal step; float64 is not compressed."""
    exact, _, _, _ = train_two_steps(False, monkeypatch)
    compressed, _, _, _ = train_two_steps(True, monkeypatch, hook=hook)
    info = ml_dtypes.finfo(WIRE[hook])
    for step, (got_step, want_step) in enumerate(zip(compressed, exact)):
        for name, want in want_step.items():
            got = got_step[name]
            assert got.dtype == want.dtype, name
            if want.dtype == np.float64:
                assert got.tobytes() == want.tobytes(), name
                continue
            np.testing.assert_allclose(
                got, want, rtol=float(info.eps), atol=2 * float(info.smallest_subnormal), err_msg=f"step {step}: {name}"
            )
    differs = [name for name in exact[0] if exact[0][name].tobytes() != compressed[0][name].tobytes()]
    assert differs, "compression left every gradient exact: nothing was compressed"


@pytest.mark.parametrize("dtype", [np.dtype("float16"), np.dtype(ml_dtypes.bfloat16)])
def test_half_gradients_are_scaled_in_float32_on_both_paths(monkeypatch, dtype):
    """The kernel scales in float32 and rounds once; rounding 1/3 to the gradients' own half
    type first would move about a third of the values by one ulp."""
    monkeypatch.setattr(minidp.core.kernels, "launch", run_on_host)
    grads = [np.random.default_rng(3).standard_normal(500).astype(dtype)]
    host = comm_hooks.HostCopy(grads, [0], np.zeros(500, dtype))
    kernel = comm_hooks.KernelCopy(grads, [0], np.zeros(500, dtype))
    host.pack(grads, 1 / 3)
    kernel.pack(grads, 1 / 3)
    wanted = (grads[0].astype(np.float32) * np.float32(1 / 3)).astype(dtype)
    assert kernel.flat.tobytes() == wanted.tobytes()
    assert host.flat.tobytes() == wanted.tobytes()


def test_kernel_path_gives_each_parameter_its_own_gradient_array(monkeypatch):
    _, sent, _, reducer = train_two_steps(True, monkeypatch)
    for bucket in reducer._buckets:
        copy = bucket.copy()
        assert isinstance(copy, comm_hooks.KernelCopy)
        for p in bucket.params:
            assert p._grad.shape == p._data.shape and p._grad.flags.c_contiguous
            assert not np.shares_memory(p._grad, copy.flat)


def test_host_copy_hands_out_views_of_the_flat_buffer_unless_compressed(monkeypatch):
    _, _, _, reducer = train_two_steps(False, monkeypatch)
    _, _, _, compressed = train_two_steps(False, monkeypatch, hook="fp16")
    for plain_bucket, fp16_bucket in zip(reducer._buckets, compressed._buckets):
        plain_copy = plain_bucket.copy()
        assert isinstance(plain_copy, comm_hooks.HostCopy)
        for p in plain_bucket.params:
            assert np.shares_memory(p._grad, plain_copy.flat)
        if fp16_bucket.dtype == np.float32:
            fp16_copy = fp16_bucket.copy(np.float16)
            for p in fp16_bucket.params:
                assert p._grad.dtype == np.float32
                assert not np.shares_memory(p._grad, fp16_copy.flat)


def test_the_copy_is_chosen_by_where_the_bucket_lives():
    assert comm_hooks.copy_for("cpu") is comm_hooks.HostCopy
    assert comm_hooks.copy_for("gpu:0") is comm_hooks.KernelCopy


def test_counting_hook_sees_every_bucket_in_launch_order_and_leaves_gradients_local():
    params = make_params()
    ordered = list(params.values())
    group = MirrorGroup()
    reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), group, True)
    counter = comm_hooks.CallCounter()
    reducer.register_comm_hook(counter, comm_hooks.counting_hook)
    plain = make_params()
    loss_of(plain, 0).backward()
    loss = loss_of(params, 0)
    reducer.prepare_for_backward([loss])
    loss.backward()
    sizes = [sum(p.size for p in bucket) for bucket in reducer.buckets]
    sizes[-1] += 1  # the last bucket carries the reducer's check entry
    assert counter.calls == list(enumerate(sizes))
    assert group.sent == []
    for name, p in params.items():
        want = plain[name]._grad if plain[name]._grad is not None else np.zeros(p.shape, "float32")
        np.testing.assert_array_equal(p._grad, want, err_msg=name)


def test_a_hook_that_packs_differently_from_the_last_step_gets_every_entry_rewritten():
    """Step 1 averages (gradients are then copied into the buffer as they arrive, scaled by
    1/2); step 2 counts, with scale 1: the early copies must not leak into its buffer."""
    params = make_params()
    ordered = list(params.values())
    reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), MirrorGroup(), True)
    for step, (state, hook) in enumerate(
        [
            (None, comm_hooks.allreduce_hook),
            (None, comm_hooks.allreduce_hook),
            (comm_hooks.CallCounter(), comm_hooks.counting_hook),
        ]
    ):
        reducer.register_comm_hook(state, hook)
        for p in ordered:
            p.clear_grad()
        plain = make_params()
        loss_of(plain, step).backward()
        loss = loss_of(params, step)
        reducer.prepare_for_backward([loss])
        loss.backward()
        for name, p in params.items():
            if plain[name]._grad is not None:
                np.testing.assert_array_equal(p._grad, plain[name]._grad, err_msg=f"{step} {name}")


def test_a_missing_gradient_fails_the_same_way_on_both_paths(monkeypatch):
    messages = []
    for kernel_path in (False, True):
        with pytest.raises(RuntimeError) as caught:
            train_two_steps(kernel_path, monkeypatch, find_unused=False)
        monkeypatch.undo()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "unused" in messages[0] and "first step used them" in messages[0]
