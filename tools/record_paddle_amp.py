"""Record Paddle's paddle.amp answers for tests/test_amp_*.py (run by hand, with Paddle).

Usage: ``/path/to/paddle-venv/bin/python tools/record_paddle_amp.py`` writes
``tests/fixtures/paddle_amp.json``. Paddle's CPU build turns ``auto_cast``, ``GradScaler`` and
``decorate`` off with a warning (they act only on GPU, XPU and custom places), so the recorder
stores that CPU behaviour as it is, then lets Paddle's Python layer believe it runs on a GPU (a
stand-in tracer whose place answers ``is_gpu_place() -> True``) to record what the Python side
decides: the effective white and black op lists per level, dtype and custom list, the
GradScaler's loss-scale sequence over a run with injected infs, its ``state_dict``, and the
parameter dtypes that ``decorate`` leaves. Op kernels still run on the CPU.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
from command_line import answer_help

answer_help(__name__, __doc__)

import paddle

# the modules themselves: paddle.amp re-exports functions under the same names
paddle_auto_cast = importlib.import_module("paddle.amp.auto_cast")
paddle_grad_scaler = importlib.import_module("paddle.amp.grad_scaler")
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "paddle_amp.json"

# case id -> (custom_white_list, custom_black_list, level, dtype)
LIST_CASES = {
    "o1_fp16": (None, None, "O1", "float16"),
    "o2_fp16": (None, None, "O2", "float16"),
    "o1_bf16": (None, None, "O1", "bfloat16"),
    "o2_bf16": (None, None, "O2", "bfloat16"),
    "o0": (None, None, "O0", "float16"),
    "o1_custom": (["exp", "tanh"], ["matmul_v2", "relu"], "O1", "float16"),
    "o2_custom_black": (None, ["softmax", "elementwise_add"], "O2", "bfloat16"),
}
# which steps carry an inf in the gradient, over a run of STEPS steps
STEPS = 12
INF_STEPS = (2, 5, 6, 9)
# case id -> GradScaler keyword arguments
SCALER_CASES = {
    "default_incr3": {"init_loss_scaling": 1024.0, "incr_every_n_steps": 3},
    "decr2": {"init_loss_scaling": 512.0, "incr_every_n_steps": 2, "decr_every_n_nan_or_inf": 2, "decr_ratio": 0.25},
    "static": {"init_loss_scaling": 8.0, "use_dynamic_loss_scaling": False},
}


class _GpuPlace:
    """A place that claims to be a GPU, so Paddle's Python AMP layer does not turn itself off."""

    def is_gpu_place(self) -> bool:
        return True

    def is_xpu_place(self) -> bool:
        return False

    def is_custom_place(self) -> bool:
        return False


class _GpuTracer:
    """Paddle's tracer with a GPU place; every other attribute is the real tracer's."""

    _expected_place = _GpuPlace()

    def __init__(self, tracer) -> None:
        object.__setattr__(self, "_tracer", tracer)

    def __getattr__(self, key):
        return getattr(self._tracer, key)

    def __setattr__(self, key, value) -> None:
        setattr(self._tracer, key, value)


def record_cpu_behaviour(store: dict) -> None:
    """What Paddle's CPU build does: warn, and leave every op and the loss untouched."""
    x = paddle.randn([2, 3])
    w = paddle.randn([3, 3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with paddle.amp.auto_cast(level="O1", dtype="bfloat16"):
            out = paddle.matmul(x, w)
        scaler = paddle.amp.GradScaler()
    store["cpu"] = {
        "matmul_dtype": str(out.dtype).replace("paddle.", ""),
        "warnings": [str(c.message) for c in caught],
        "scaler_enabled": scaler.is_enable(),
        "scaler_state_dict": scaler.state_dict(),
    }


def record_lists(store: dict) -> None:
    store["lists"] = {}
    for case, (white, black, level, dtype) in LIST_CASES.items():
        w, b = paddle_auto_cast._update_list(white, black, level, dtype)
        store["lists"][case] = {
            "args": [white, black, level, dtype],
            "white": sorted(w),
            "black": sorted(b),
        }


def record_scaler(store: dict) -> None:
    """Drive each GradScaler over STEPS steps of a small Linear, with infs injected on INF_STEPS."""
    paddle_auto_cast.amp_global_state().amp_dtype = "float16"
    store["scaler"] = {"steps": STEPS, "inf_steps": list(INF_STEPS), "cases": {}}
    for case, kwargs in SCALER_CASES.items():
        paddle.seed(0)
        layer = paddle.nn.Linear(3, 2)
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
        scaler = paddle.amp.GradScaler(**kwargs)
        x = paddle.to_tensor(np.arange(6, dtype="float32").reshape(2, 3) / 6)
        scales, found, updated = [], [], []
        printed = io.StringIO()
        for step in range(STEPS):
            before = layer.weight.numpy().copy()
            loss = layer(x).mean()
            if step in INF_STEPS:
                loss = loss * float("inf")
            scaler.scale(loss).backward()
            scaler.step(opt)
            with contextlib.redirect_stdout(printed):
                scaler.update()
            opt.clear_grad()
            scales.append(float(scaler._scale.numpy().reshape(-1)[0]))
            found.append(bool(scaler._cache_found_inf))
            updated.append(not np.array_equal(before, layer.weight.numpy()))
        state = scaler.state_dict()
        state["scale"] = [float(v) for v in np.asarray(state["scale"]).reshape(-1)]
        store["scaler"]["cases"][case] = {
            "kwargs": kwargs,
            "scales": scales,
            "found_inf": found,
            "updated": updated,
            "state_dict": state,
            "printed": printed.getvalue().splitlines(),
            "weight": layer.weight.numpy().tolist(),
        }


def record_decorate(store: dict) -> None:
    """Parameter dtypes after decorate(level='O2') of a model with a norm layer, per dtype."""
    store["decorate"] = {}
    for dtype in ("float16", "bfloat16"):
        model = paddle.nn.Sequential(
            paddle.nn.Linear(4, 4), paddle.nn.LayerNorm(4), paddle.nn.BatchNorm1D(4), paddle.nn.Linear(4, 2)
        )
        opt = paddle.optimizer.Adam(parameters=model.parameters())
        model, opt = paddle.amp.decorate(model, opt, level="O2", dtype=dtype)
        store["decorate"][dtype] = {
            "params": {n: str(p.dtype).replace("paddle.", "") for n, p in model.named_parameters()},
            "buffers": {n: str(b.dtype).replace("paddle.", "") for n, b in model.named_buffers()},
            "multi_precision": bool(opt._multi_precision),
        }


def main() -> int:
    store: dict = {"paddle_version": paddle.__version__}
    record_cpu_behaviour(store)
    record_lists(store)
    real_tracer = paddle.base.framework._dygraph_tracer
    for module in (paddle_auto_cast, paddle_grad_scaler):
        module._dygraph_tracer = lambda: _GpuTracer(real_tracer())
    paddle_auto_cast._is_gpu_float16_supported = lambda: True
    paddle_auto_cast._is_gpu_bfloat16_supported = lambda: True
    # Paddle's own log line calls float() on the [1]-shaped scale, which this NumPy refuses
    paddle.Tensor.__float__ = lambda t: float(np.asarray(t.numpy()).reshape(-1)[0])
    record_scaler(store)
    record_decorate(store)
    OUT.write_text(json.dumps(store, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
