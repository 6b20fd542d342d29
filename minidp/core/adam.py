"""Adam and AdamW with Paddle's update formulas.

At step t (per parameter), with ``b1p = beta1**t`` and ``b2p = beta2**t``:

    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p -= lr * sqrt(1 - b2p) / (1 - b1p) * m / (sqrt(v) + epsilon * sqrt(1 - b2p))

which is the textbook bias-corrected Adam with epsilon added to the corrected sqrt(v).

Two paths compute the same operations in the same order, each rounded to the compute dtype
(see :mod:`minidp.core.precision`): the array library one parameter at a time (NumPy on
the CPU), and on the GPU the multi-tensor kernel ``minidp/core/kernels/fused_adam.cu``, one launch
per set of parameters sharing dtypes and every scalar of the step. Their results are identical
bit for bit, except where float32 values are subnormal (below about 1.2e-38): CuPy compiles the
kernel with -ftz=true, which flushes them to zero (see docs/gpu.md). ``beta_pow`` accumulates
in the compute dtype as Paddle's accumulators do, and the moments of float16 and bfloat16
parameters are float32, as in Paddle.

The moment updates and the ``beta**t`` accumulators are shared with the rest of the Adam family
(Adamax, NAdam, RAdam, Lamb) and with the running averages of Adadelta and RMSProp:
:func:`moving_average`, :func:`moving_average_of_squares`, :func:`advance_power` and
:func:`bias_corrected_rms`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Union

from . import backend, kernels, threads
from .kernels.launch_args import adam_scalars
from . import precision
from .lr import LRScheduler
from .optimizer import Optimizer, _Slot, check_adam_hyper


def moving_average(average: Any, value: Any, decay: float, real: type = float) -> None:
    """``average = decay * average + (1 - decay) * value``, in place (Adam's first moment).

    ``1 - decay`` is computed in ``real``: the compute dtype's scalar type for Adam, as its GPU
    kernel does; Python's float, the default, for the other optimizers.
    """
    average *= decay
    average += float(real(1) - real(decay)) * value


def moving_average_of_squares(average: Any, value: Any, decay: float, real: type = float) -> Any:
    """``average = decay * average + (1 - decay) * value * value``, in place (Adam's second moment).

    Returns the array that held ``(1 - decay) * value * value``, free for the caller to reuse;
    ``real`` is as in :func:`moving_average`.
    """
    term = float(real(1) - real(decay)) * value
    term *= value
    average *= decay
    average += term
    return term


def bias_corrected_rms(v: Any, beta2_pow: Any, epsilon: float) -> Any:
    """``sqrt(v / (1 - beta2**t)) + epsilon``: the textbook denominator of an Adam step, which
    NAdam and Lamb use as written (Adam folds the correction into its scalars instead)."""
    return backend.get_array_module(v).sqrt(v / (1 - beta2_pow)) + epsilon


def advance_power(state: dict, key: str, beta: float, real: type = float) -> None:
    """``state[key] *= beta`` rounded in ``real``: the ``beta**t`` of a bias correction, one step on."""
    state[key] = float(real(state[key]) * real(beta))


class Adam(Optimizer):
    """Adam. ``weight_decay`` is an L2 coefficient added to the gradient (as in Paddle's Adam).

    A group may override ``beta1``, ``beta2`` and ``epsilon``. ``multi_precision=True`` keeps a
    float32 master weight for each float16/bfloat16 parameter. minidp's gradients are dense, so
    ``lazy_mode`` (which only changes sparse updates in Paddle) has no effect.
    """

    _array_states = ("moment1", "moment2")
    _scalar_states = ("beta1_pow_acc", "beta2_pow_acc")
    _hyper_names = ("beta1", "beta2", "epsilon")

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        parameters: Optional[Iterable] = None,
        weight_decay: Optional[float] = None,
        grad_clip: Any = None,
        lazy_mode: bool = False,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            learning_rate,
            parameters,
            weight_decay,
            grad_clip,
            check_adam_hyper(type(self).__name__, beta1, beta2, epsilon),
            multi_precision,
        )

    def _init_state(self, slot: _Slot) -> dict:
        data = slot.param._data
        xp = backend.get_array_module(data)
        dtype = precision.compute_dtype(data.dtype)
        return {
            "moment1": xp.zeros(data.shape, dtype),
            "moment2": xp.zeros(data.shape, dtype),
            "beta1_pow_acc": float(dtype.type(slot.hyper["beta1"])),
            "beta2_pow_acc": float(dtype.type(slot.hyper["beta2"])),
        }

    @staticmethod
    def _advance_pows(slot: _Slot) -> None:
        """``beta_pow *= beta``, rounded to the compute dtype as Paddle's accumulators are."""
        state, t = slot.state, precision.compute_dtype(slot.param._data.dtype).type
        advance_power(state, "beta1_pow_acc", slot.hyper["beta1"], t)
        advance_power(state, "beta2_pow_acc", slot.hyper["beta2"], t)

    def _update(self, slot: _Slot, grad: Any, lr: float) -> None:
        data, state, hyper = slot.param._data, slot.state, slot.hyper
        p = precision.working_param(data, slot.master)
        t = p.dtype.type
        g = grad.astype(p.dtype, copy=False)
        lr_t, eps_hat = adam_scalars(lr, state["beta1_pow_acc"], state["beta2_pow_acc"], hyper["epsilon"])
        decay = self._decoupled_decay and t(1.0 - lr * slot.weight_decay) != 1
        xp = backend.get_array_module(p)
        # ranges of the first axis (a 0-d parameter viewed as one row), shared out over threads
        rows_p, rows_g, rows_m, rows_v = (a if a.ndim else a[None] for a in (p, g, state["moment1"], state["moment2"]))

        def update_rows(start: int, stop: int) -> None:
            p_, g_, m, v = rows_p[start:stop], rows_g[start:stop], rows_m[start:stop], rows_v[start:stop]
            if decay:
                p_ *= 1.0 - lr * slot.weight_decay
            moving_average(m, g_, hyper["beta1"], t)
            step = xp.sqrt(v, out=moving_average_of_squares(v, g_, hyper["beta2"], t))
            step += eps_hat
            xp.divide(m, step, out=step)
            step *= lr_t
            p_ -= step

        threads.for_each_chunk(p, len(rows_p), update_rows)
        precision.store_param(data, p)
        self._advance_pows(slot)

    def _update_on_device(self, pending: list, lr: float) -> None:
        """One fused launch per set of parameters sharing dtypes and every scalar of the step."""
        launches: dict = {}
        for slot, grad in pending:
            if not slot.ready:
                self._prepare(slot)
            data, state, hyper = slot.param._data, slot.state, slot.hyper
            slot_lr = lr * slot.lr_ratio
            key = (
                data.dtype,
                slot_lr,
                slot.weight_decay,
                hyper["beta1"],
                hyper["beta2"],
                hyper["epsilon"],
                state["beta1_pow_acc"],
                state["beta2_pow_acc"],
            )
            tables = launches.setdefault(key, ([], [], [], [], []))
            xp = backend.get_array_module(data)
            for table, array in zip(
                tables,
                (data, xp.ascontiguousarray(grad, dtype=data.dtype), slot.master, state["moment1"], state["moment2"]),
            ):
                table.append(array)
        for (_, slot_lr, weight_decay, beta1, beta2, epsilon, beta1_pow, beta2_pow), tables in launches.items():
            params, grads, masters, moment1s, moment2s = tables
            kernels.fused_adam(
                params,
                grads,
                moment1s,
                moment2s,
                masters=masters,
                lr=slot_lr,
                beta1=beta1,
                beta2=beta2,
                epsilon=epsilon,
                beta1_pow=beta1_pow,
                beta2_pow=beta2_pow,
                weight_decay=weight_decay,
                decoupled=self._decoupled_decay,
            )
        for slot, _ in pending:
            self._advance_pows(slot)


class AdamW(Adam):
    """Adam with decoupled weight decay: before the Adam step, ``p *= 1 - lr * weight_decay``.

    ``weight_decay`` (default 0.01) is the decay coefficient, not an L2 term.
    ``apply_decay_param_fun(name) -> bool`` limits the decay to the parameters it accepts
    (e.g. to skip biases and norms).
    """

    _decoupled_decay = True

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler] = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        parameters: Optional[Iterable] = None,
        weight_decay: float = 0.01,
        apply_decay_param_fun: Optional[Callable[[str], bool]] = None,
        grad_clip: Any = None,
        lazy_mode: bool = False,
        multi_precision: bool = False,
        name: Optional[str] = None,
    ) -> None:
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError(f"AdamW: apply_decay_param_fun must be callable, got {apply_decay_param_fun!r}")
        self._apply_decay_param_fun = apply_decay_param_fun
        super().__init__(
            learning_rate, beta1, beta2, epsilon, parameters, weight_decay, grad_clip, lazy_mode, multi_precision
        )

    def _make_slot(self, param: Any, lr_ratio: float, weight_decay: float, hyper: dict) -> _Slot:
        if self._apply_decay_param_fun is not None and not self._apply_decay_param_fun(param.name):
            weight_decay = 0.0
        return _Slot(param, lr_ratio, weight_decay, hyper)
