"""The reducer's GPU path -- pack and unpack by the CUDA kernels -- run on the CPU.

The path is chosen for NumPy buckets by patching ``reducer._packs_with_kernels``, and
``minidp.kernels.launch`` runs each launch with the host kernel runner (the .cu sources compiled
by g++), so every line of the path and the kernels' arithmetic run here. Its results must equal
the CPU path's bit for bit. tests/test_gpu.py runs the same path on CuPy arrays.
"""
from __future__ import annotations

import numpy as np
import pytest

import minidp
import minidp.kernels
from kernel_host.runner import run as run_on_host
from minidp.distributed import reducer as reducer_module
from minidp.distributed.backends import Work
from minidp.distributed.reducer import Reducer, assign_buckets

pytestmark = pytest.mark.timeout(180)


class MirrorGroup:
    """Rank 0 of two ranks whose peer holds the same gradients: the SUM doubles the buffer.

    ``sent`` keeps a copy of every buffer as it was handed to the all-reduce.
    """

    size = 2
    rank = 0

    def __init__(self) -> None:
        self.sent = []

    def all_reduce(self, buffer, sync_op: bool = True) -> Work:
        self.sent.append(buffer.copy())
        buffer *= 2
        return Work.completed("mirror all_reduce")


def make_params(xp=np):
    """Parameters of two dtypes (arrays of ``xp``); w2 is used transposed, so its gradient is
    not contiguous; "unused" takes no part in the loss."""
    rng = np.random.default_rng(7)
    shapes = {"w1": ((5, 4), "float32"), "b1": ((4,), "float32"), "w2": ((3, 4), "float32"),
              "w64": ((4,), "float64"), "unused": ((2,), "float32")}
    return {name: minidp.nn.Parameter(xp.asarray(rng.standard_normal(shape).astype(dtype)),
                                      name=name)
            for name, (shape, dtype) in shapes.items()}


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


def train_two_steps(kernel_path: bool, monkeypatch, find_unused: bool = True):
    """Grads after two backward passes (the second accumulates), buffers sent, launches made."""
    launches = []
    if kernel_path:
        monkeypatch.setattr(reducer_module, "_packs_with_kernels", lambda buffer: True)

        def launch(plan) -> None:
            launches.append(plan.name)
            run_on_host(plan)

        monkeypatch.setattr(minidp.kernels, "launch", launch)
    params = make_params()
    ordered = list(params.values())
    group = MirrorGroup()
    reducer = Reducer(ordered, assign_buckets(ordered, 40, 60), group, find_unused,
                      param_names=list(params))
    grads = []
    for step in range(2):
        loss = loss_of(params, step, unused_at_first=not find_unused)
        reducer.prepare_for_backward([loss])
        loss.backward()
        grads.append({name: p._grad.copy() for name, p in params.items()})
    monkeypatch.undo()
    return grads, group.sent, launches, reducer, params


def test_kernel_path_matches_the_cpu_path_bit_for_bit(monkeypatch):
    plain = make_params()
    loss_of(plain, 0).backward()
    assert not plain["w2"]._grad.flags.c_contiguous, "the test needs a non-contiguous gradient"
    cpu_grads, cpu_sent, no_launches, _, _ = train_two_steps(False, monkeypatch)
    grads, sent, launches, reducer, params = train_two_steps(True, monkeypatch)
    assert no_launches == []
    assert len(reducer.buckets) >= 3, "the test needs several buckets"
    assert len(sent) == len(cpu_sent)
    for got, wanted in zip(sent, cpu_sent):
        assert got.dtype == wanted.dtype
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


def test_kernel_path_gives_each_parameter_its_own_gradient_array(monkeypatch):
    _, _, _, reducer, params = train_two_steps(True, monkeypatch)
    for bucket in reducer._buckets:
        for p, grad in zip(bucket.params, bucket.grads):
            assert p._grad is grad
            assert grad.shape == p._data.shape and grad.flags.c_contiguous
            assert not np.shares_memory(grad, bucket.buffer)


def test_only_device_buckets_carry_kernel_state(monkeypatch):
    params = list(make_params().values())
    cpu = Reducer(params, assign_buckets(params, 40, 60), MirrorGroup())
    assert all(b.staged is None and b.grads is None and b.unpack_plan is None
               for b in cpu._buckets)
    cpu.remove_hooks()
    monkeypatch.setattr(reducer_module, "_packs_with_kernels", lambda buffer: True)
    device = Reducer(params, assign_buckets(params, 40, 60), MirrorGroup())
    assert all(b.staged == [] and len(b.grads) == len(b.params)
               and b.unpack_plan.name.startswith("minidp_unpack") for b in device._buckets)
    device.remove_hooks()


def test_a_missing_gradient_fails_the_same_way_on_both_paths(monkeypatch):
    messages = []
    for kernel_path in (False, True):
        with pytest.raises(RuntimeError) as caught:
            train_two_steps(kernel_path, monkeypatch, find_unused=False)
        monkeypatch.undo()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "unused" in messages[0] and "first step used them" in messages[0]
