"""The optimizers' GPU path -- multi-tensor kernels -- run on the CPU.

The path is chosen for NumPy parameters by patching ``optimizer._updates_with_kernels``, and
``minidp.kernels.launch`` runs each launch with the host kernel runner (the .cu sources compiled
by g++), so every line of the path and the kernels' arithmetic run here. Parameters, states and
master weights must equal the per-parameter NumPy path's bit for bit, with one launch per
parameter group and dtype. tests/test_gpu.py runs the same path on CuPy arrays.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minidp
import minidp.kernels
import minidp.optimizer as optim
from kernel_host.runner import run as run_on_host
from minidp.optimizer import optimizer as optimizer_module

pytestmark = pytest.mark.timeout(180)

# name: (shape, dtype, group). "frozen" has stop_gradient set, "idle" never gets a gradient and
# "h2" reads zeros after clear_grad in the second step.
PARAMS = {"w1": ((5, 4), "float32", 0), "b1": ((4,), "float32", 0), "h1": ((6,), "bfloat16", 0),
          "f16": ((5,), "float16", 0), "frozen": ((2,), "float32", 0), "idle": ((3,), "float32", 0),
          "w64": ((3, 3), "float64", 1), "h2": ((2, 3), "bfloat16", 1)}
GROUP_OPTIONS = {"learning_rate": 0.5, "weight_decay": 0.0}

OPTIMIZERS = {
    "sgd": (lambda groups, mp: optim.SGD(0.1, groups, weight_decay=0.01, multi_precision=mp), {}),
    "momentum": (lambda groups, mp: optim.Momentum(0.1, 0.9, groups, weight_decay=0.01,
                                                   multi_precision=mp), {"momentum": 0.5}),
    "nesterov": (lambda groups, mp: optim.Momentum(0.1, 0.9, groups, use_nesterov=True,
                                                   multi_precision=mp), {}),
    "adam": (lambda groups, mp: optim.Adam(0.01, parameters=groups, weight_decay=0.01,
                                           multi_precision=mp), {"beta1": 0.5}),
    "adamw": (lambda groups, mp: optim.AdamW(
        0.01, parameters=groups, weight_decay=0.1, multi_precision=mp,
        apply_decay_param_fun=lambda name: name != "b1",
        grad_clip=minidp.nn.ClipGradByGlobalNorm(0.5)), {"epsilon": 1e-6}),
}
# Launches over the three steps: each step, group 0 updates float32, bfloat16 and float16
# parameters, group 1 float64 and bfloat16 ones. After clear_grad, "idle" reads zeros and is
# updated too: with the float32 launch, except in Adam, where its beta powers lag one step and
# so need their own launch; AdamW's excluded "b1" has its own decay, hence its own launch.
LAUNCHES = {"sgd": 15, "momentum": 15, "nesterov": 15, "adam": 5 + 6 + 6, "adamw": 6 + 7 + 7}


def make_params(xp=np) -> dict:
    """The parameters of PARAMS, as arrays of ``xp``."""
    rng = np.random.default_rng(5)
    params = {}
    for name, (shape, dtype, _) in PARAMS.items():
        params[name] = minidp.Parameter(xp.asarray(rng.standard_normal(shape).astype(dtype)), name=name)
    params["frozen"].stop_gradient = True
    return params


def train(name: str, multi_precision: bool, monkeypatch, kernel_path: bool, xp=np):
    """Three steps of optimizer ``name`` on parameters of ``xp``; the parameters, the optimizer
    and the launches made. ``kernel_path`` runs NumPy parameters through the kernels on the host
    runner; CuPy parameters always take the kernel path, on the GPU."""
    launches = []
    real_launch = minidp.kernels.launch if xp is not np else run_on_host
    if kernel_path:
        monkeypatch.setattr(optimizer_module, "_updates_with_kernels", lambda data: True)

    def launch(plan) -> None:
        launches.append(plan.name)
        real_launch(plan)

    monkeypatch.setattr(minidp.kernels, "launch", launch)
    params = make_params(xp)
    make, overrides = OPTIMIZERS[name]
    groups = [{"params": [p for key, p in params.items() if PARAMS[key][2] == index]}
              for index in (0, 1)]
    groups[1].update(GROUP_OPTIONS, **overrides)
    optimizer = make(groups, multi_precision)
    rng = np.random.default_rng(9)
    for step in range(3):
        for key, p in params.items():
            if key == "idle" or (key == "h2" and step == 1):
                continue
            wide = xp.asarray(rng.standard_normal(p._data.shape + (2,)).astype(p._data.dtype))
            p._grad = wide[..., 0]  # not contiguous, as a transposed gradient would be
        optimizer.step()
        optimizer.clear_grad()
    monkeypatch.undo()
    return params, optimizer, launches


@pytest.mark.parametrize("multi_precision", [False, True], ids=["plain", "master-weights"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_kernel_path_matches_the_numpy_path_bit_for_bit(name, multi_precision, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numpy_params, numpy_opt, no_launches = train(name, multi_precision, monkeypatch, False)
        kernel_params, kernel_opt, launches = train(name, multi_precision, monkeypatch, True)
    # both paths warn once about 16-bit parameters without master weights
    assert sum("multi_precision=True" in str(w.message) for w in caught) == (0 if multi_precision else 2)
    assert no_launches == []
    assert len(launches) == LAUNCHES[name], launches
    for key, wanted in numpy_params.items():
        got = kernel_params[key]
        assert got.dtype == wanted.dtype
        assert got._data.tobytes() == wanted._data.tobytes(), f"{key} differs"
    assert kernel_params["frozen"]._data.tobytes() == make_params()["frozen"]._data.tobytes()
    for got, wanted in zip(kernel_opt._slots, numpy_opt._slots):
        assert got.state.keys() == wanted.state.keys()
        for key, value in wanted.state.items():
            if isinstance(value, float):
                assert got.state[key] == value, key
            else:
                assert got.state[key].dtype == value.dtype
                assert got.state[key].tobytes() == value.tobytes(), f"{got.param.name}: {key}"
        assert (got.master is None) == (wanted.master is None)
        if wanted.master is not None:
            assert got.master.tobytes() == wanted.master.tobytes(), got.param.name
    masters = [slot.master is not None for slot in kernel_opt._slots]
    assert any(masters) == multi_precision

