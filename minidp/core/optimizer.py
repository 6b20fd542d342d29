"""The optimizer base class: parameter groups, learning rate, weight decay and regularizers, clipping, state.

Updates happen in place on each parameter's array (``p._data``), so arrays keep their identity:
data-parallel buckets and device buffers that point at them stay valid. Gradients are read from
``p._grad`` and never written; frozen parameters and those without a gradient are skipped.
Everything that can be decided once (per-parameter learning-rate factors, decay,
hyperparameters) is decided at construction, so a step is a plain loop over the parameters.

Where the parameters live is decided once per step, in :meth:`Optimizer.step`: on the CPU each
parameter is updated by the array library (``_update_each``); on the GPU an optimizer with
multi-tensor kernels updates them in a few launches (``_update_on_device``). Both paths round
every operation alike, so they give the same bits.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any, Iterable, Optional, Union

import numpy

from . import backend, timeline
from .tensor import Tensor
from .op_util import wrap
from . import regularizer as regularizers  # a module: minidp.regularizer imports precision
from . import precision
from .lr import LRScheduler


class _Slot:
    """One parameter with what its update needs: ``master`` is its float32 master weight or None,
    ``ready`` whether its state and master exist (see :meth:`Optimizer._prepare`),
    ``regularizer`` the L1Decay/L2Decay added to its gradient before the update, or None, and
    ``weight_decay`` the L2 coefficient (0 when the parameter has its own regularizer) or, for
    AdamW, the decoupled decay, which applies together with a parameter's regularizer as in
    Paddle."""

    __slots__ = ("param", "lr_ratio", "weight_decay", "regularizer", "hyper", "state", "master", "ready")

    def __init__(self, param: Tensor, lr_ratio: float, weight_decay: float, hyper: dict) -> None:
        self.param = param
        self.lr_ratio = lr_ratio
        self.weight_decay = weight_decay
        self.regularizer: Any = None
        self.hyper = hyper
        self.state: dict = {}
        self.master: Any = None
        self.ready = False


def _check_decay(cls: str, value: Any, decoupled: bool) -> tuple:
    """``weight_decay`` as ``(L2 coefficient, regularizer or None)``: a float or an L2Decay gives
    its coefficient, an L1Decay itself (applied to the gradient by :meth:`Optimizer._apply`).
    A decoupled decay (AdamW's) must be a float."""
    if value is None:
        return 0.0, None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value), None
    if isinstance(value, regularizers.WeightDecayRegularizer) and not decoupled:
        return (value._coeff, None) if isinstance(value, regularizers.L2Decay) else (0.0, value)
    if decoupled:
        raise TypeError(
            f"{cls}: weight_decay must be a non-negative float (the decoupled decay "
            f"coefficient), got {value!r}; give an L1Decay/L2Decay to a ParamAttr instead"
        )
    raise TypeError(
        f"{cls}: weight_decay must be a non-negative float (the L2 coefficient), an L1Decay, "
        f"an L2Decay or None, got {value!r}"
    )


def _updates_with_kernels(param_data: Any) -> bool:
    """True when parameters live on a GPU: optimizers with kernels then step in a few launches."""
    return backend.get_array_module(param_data) is not numpy


def check_unit_interval(cls: str, name: str, value: Any, closed_high: bool = False) -> float:
    """``value`` as a float after checking it lies in [0, 1) (or [0, 1] with ``closed_high``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (0 <= value < 1 or (closed_high and value == 1))
    ):
        raise ValueError(f"{cls}: {name} must lie in [0, {'1]' if closed_high else '1)'}, got {value!r}")
    return float(value)


def check_non_negative(cls: str, name: str, value: Any) -> float:
    """``value`` as a float after checking it is a non-negative number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{cls}: {name} must be a non-negative number, got {value!r}")
    return float(value)


def check_adam_hyper(cls: str, beta1: Any, beta2: Any, epsilon: Any) -> dict:
    """The per-group hyperparameters of the Adam-like optimizers, checked: ``beta1`` and ``beta2``
    in [0, 1), ``epsilon`` non-negative."""
    return {
        "beta1": check_unit_interval(cls, "beta1", beta1),
        "beta2": check_unit_interval(cls, "beta2", beta2),
        "epsilon": check_non_negative(cls, "epsilon", epsilon),
    }


def _host_scalar(value: Any) -> float:
    """A Python float from a number, a one-element array or a one-element tensor."""
    if isinstance(value, Tensor):
        value = value._data
    if hasattr(value, "reshape"):
        value = backend.to_host(value.reshape(-1))[0]
    return float(value)


class Optimizer:
    """Base class. Subclasses set ``_array_states``/``_scalar_states`` (the per-parameter state
    saved in ``state_dict``), ``_hyper_names`` (hyperparameters a parameter group may override)
    and define ``_update(slot, grad, lr)``; optimizers with GPU kernels also override
    ``_init_state(slot)`` and ``_update_on_device(pending, lr)``.

    ``parameters`` is a list of parameters or of groups: dicts with ``params`` and optionally
    ``learning_rate`` (a factor on the optimizer's rate, as in Paddle), ``weight_decay`` and
    the subclass's hyperparameters.
    """

    _array_states: tuple = ()
    _scalar_states: tuple = ()
    _hyper_names: tuple = ()
    _decoupled_decay = False

    def __init__(
        self,
        learning_rate: Union[float, LRScheduler],
        parameters: Optional[Iterable],
        weight_decay: Optional[float],
        grad_clip: Any,
        hyper: dict,
        multi_precision: bool = False,
    ) -> None:
        cls = type(self).__name__
        if not isinstance(multi_precision, bool):
            raise TypeError(f"{cls}: multi_precision must be True or False, got {multi_precision!r}")
        if parameters is None:
            raise ValueError(
                f"{cls}: pass parameters=model.parameters() (minidp has no static graph to collect them from)"
            )
        if not isinstance(learning_rate, LRScheduler):
            if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool) or learning_rate < 0:
                raise TypeError(
                    f"{cls}: learning_rate must be a non-negative float or an LRScheduler, got {learning_rate!r}"
                )
            learning_rate = float(learning_rate)
        if grad_clip is not None and not hasattr(grad_clip, "_clip_arrays"):
            raise TypeError(
                f"{cls}: grad_clip must be a clipping strategy such as "
                f"minidp.nn.ClipGradByGlobalNorm, got {grad_clip!r}"
            )
        self._learning_rate = learning_rate
        self._grad_clip = grad_clip
        self._multi_precision = multi_precision
        self._warned_sixteen_bit = False
        self._default_decay = _check_decay(cls, weight_decay, self._decoupled_decay)
        self._default_hyper = dict(hyper)
        self._param_groups: list = []
        self._slots: list = []
        self._parameter_list: list = []
        self._seen: dict = {}
        parameters = list(parameters)
        if parameters and isinstance(parameters[0], dict):
            for group in parameters:
                self._add_param_group(group)
        else:
            self._add_param_group({"params": parameters})

    def _add_param_group(self, group: dict) -> None:
        cls = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{cls}: a parameter group must be a dict with a 'params' list, got {group!r}")
        allowed = ("params", "learning_rate", "weight_decay") + self._hyper_names
        unknown = [key for key in group if key not in allowed]
        if unknown:
            raise ValueError(f"{cls}: unknown parameter-group keys {unknown}; allowed: {list(allowed)}")
        params = list(group["params"])
        decay, regularizer = (
            _check_decay(cls, group["weight_decay"], self._decoupled_decay)
            if "weight_decay" in group
            else self._default_decay
        )
        group_lr = float(group.get("learning_rate", 1.0))
        hyper = {name: group.get(name, self._default_hyper[name]) for name in self._hyper_names}
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"{cls}: parameters must be Tensors (e.g. model.parameters()), got {type(param).__name__}"
                )
            if id(param) in self._seen:
                raise ValueError(f"{cls}: parameter {param.name} appears twice; pass each parameter once")
            self._seen[id(param)] = True
            ratio = group_lr * getattr(param, "optimize_attr", {"learning_rate": 1.0})["learning_rate"]
            own = getattr(param, "regularizer", None)
            # a parameter's own regularizer replaces the optimizer's L2 term, not a decoupled decay
            slot = self._make_slot(param, ratio, 0.0 if own and not self._decoupled_decay else decay, hyper)
            slot.regularizer = own or regularizer
            self._slots.append(slot)
            self._parameter_list.append(param)
        self._param_groups.append(dict(group, params=params))

    def _make_slot(self, param: Tensor, lr_ratio: float, weight_decay: float, hyper: dict) -> _Slot:
        return _Slot(param, lr_ratio, weight_decay, hyper)

    # --- learning rate --------------------------------------------------------------------
    def get_lr(self) -> float:
        """The current learning rate (the scheduler's ``last_lr`` when there is one)."""
        lr = self._learning_rate
        return lr.last_lr if isinstance(lr, LRScheduler) else lr

    def set_lr(self, value: float) -> None:
        """Replace a float learning rate."""
        if isinstance(self._learning_rate, LRScheduler):
            raise TypeError(
                f"{type(self).__name__}.set_lr: the learning rate follows a scheduler; step "
                "the scheduler or use set_lr_scheduler instead"
            )
        if not isinstance(value, (int, float)) or value < 0:
            raise TypeError(f"set_lr: value must be a non-negative float, got {value!r}")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler: LRScheduler) -> None:
        """Follow ``scheduler`` from now on."""
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"set_lr_scheduler: expected an LRScheduler, got {type(scheduler).__name__}")
        self._learning_rate = scheduler

    # --- the update -----------------------------------------------------------------------
    def step(self) -> None:
        """Update every trainable parameter that has a gradient, in place.

        As in Paddle, a parameter is skipped when it is frozen (``stop_gradient=True``) or its
        gradient is None; a gradient cleared with ``clear_grad(set_to_zero=True)`` reads as zeros
        and is applied as zeros (momentum, Adam's moments and weight decay keep acting on it).
        """
        with timeline.span("optimizer step", "optimizer"):
            slots = self._slots
            self._apply(slots, self._parameter_list, [slot.param._grad for slot in slots])

    def backward(
        self,
        loss: Tensor,
        startup_program: Any = None,
        parameters: Optional[Iterable] = None,
        no_grad_set: Any = None,
        callbacks: Any = None,
    ) -> list:
        """Paddle's dynamic-graph ``backward``: the ``(parameter, gradient)`` pairs that
        ``loss.backward()`` left, for ``parameters`` (default: all of this optimizer's) that have a
        gradient. Like Paddle's, it does not run backward itself; ``startup_program``,
        ``no_grad_set`` and ``callbacks`` belong to static graphs and are ignored, as there."""
        cls = type(self).__name__
        if not isinstance(loss, Tensor):
            raise TypeError(f"{cls}.backward: loss must be a Tensor, got {type(loss).__name__}")
        params = self._parameter_list
        if parameters is not None:
            params = list(parameters)
            for param in params:
                if not isinstance(param, Tensor):
                    raise TypeError(f"{cls}: parameters must be Tensors, got {type(param).__name__}")
        return [(param, param.grad) for param in params if param._grad is not None]

    def apply_gradients(self, params_grads: Iterable) -> list:
        """Update the parameters of ``params_grads`` (``(parameter, gradient)`` pairs of this
        optimizer's parameters) with those gradients; returns Paddle's dynamic-mode ``[]``."""
        slot_of = {id(slot.param): slot for slot in self._slots}
        slots, grads = [], []
        for param, grad in params_grads:
            slot = slot_of.get(id(param))
            if slot is None:
                raise ValueError(
                    f"{type(self).__name__}.apply_gradients: {getattr(param, 'name', param)!r} is not "
                    "one of this optimizer's parameters"
                )
            slots.append(slot)
            grads.append(grad._data if isinstance(grad, Tensor) else grad)
        self._apply(slots, [slot.param for slot in slots], grads)
        return []

    def minimize(
        self, loss: Tensor, startup_program: Any = None, parameters: Optional[Iterable] = None, no_grad_set: Any = None
    ) -> tuple:
        """Paddle's dynamic-graph ``minimize``: :meth:`backward` then :meth:`apply_gradients`, so it
        applies the gradients ``loss.backward()`` left (it does not run backward) and returns
        ``(optimize_ops, params_grads)``: an empty list and the pairs it applied."""
        params_grads = self.backward(loss, startup_program, parameters, no_grad_set)
        return self.apply_gradients(params_grads), params_grads

    def _apply(self, slots: list, params: list, grads: list) -> None:
        """One update of ``slots`` (whose parameters are ``params``) with the arrays ``grads``."""
        lr = self.get_lr()
        if self._grad_clip is not None:
            grads = self._grad_clip._clip_arrays(params, grads)
        pending = []
        for slot, grad in zip(slots, grads):
            param = slot.param
            if param.stop_gradient:
                continue
            if grad is None:
                if not param._grad_reads_zero:
                    continue
                grad = backend.get_array_module(param._data).zeros_like(param._data)
            if slot.regularizer is not None:
                grad = slot.regularizer._add_to_grad(grad, param._data)
            pending.append((slot, grad))
        if pending:
            on_device = _updates_with_kernels(pending[0][0].param._data)
            (self._update_on_device if on_device else self._update_each)(pending, lr)

    def _update_each(self, pending: list, lr: float) -> None:
        """The array-library path: one ``_update`` per parameter, after the L2 term.

        The gradient is taken in the parameter's dtype, as the kernels read it (clipping may
        have widened a 16-bit one).
        """
        l2 = not self._decoupled_decay
        for slot, grad in pending:
            if not slot.ready:
                self._prepare(slot)
            data = slot.param._data
            if grad.dtype is not data.dtype:
                grad = grad.astype(data.dtype)
            if l2 and slot.weight_decay:
                grad = precision.with_l2(grad, slot.weight_decay, data)
            self._update(slot, grad, lr * slot.lr_ratio)

    def _update_on_device(self, pending: list, lr: float) -> None:
        """The GPU path; optimizers with multi-tensor kernels override it (see adam.py)."""
        self._update_each(pending, lr)

    def _init_state(self, slot: _Slot) -> dict:
        """The state of a parameter before its first update (zeros and initial scalars)."""
        return {}

    @staticmethod
    def _arrays_like_param(slot: _Slot, ones: tuple = (), zeros: tuple = ()) -> dict:
        """Fresh array states shaped and typed like ``slot``'s parameter, for ``_init_state``:
        the ``ones`` start at 1 (running products such as ``beta2_pow``), the ``zeros`` at 0
        (moments and accumulators)."""
        data = slot.param._data
        xp = backend.get_array_module(data)
        state = {key: xp.ones_like(data) for key in ones}
        state.update((key, xp.zeros_like(data)) for key in zeros)
        return state

    def _prepare(self, slot: _Slot) -> None:
        """Before a slot's first update: its master weight (multi_precision, 16-bit parameter) and
        any state not restored by :meth:`set_state_dict`."""
        slot.ready = True
        data = slot.param._data
        if slot.master is None and precision.is_sixteen_bit(data.dtype):
            if self._multi_precision:
                slot.master = data.astype(precision.FLOAT32)
            elif not self._warned_sixteen_bit:
                self._warned_sixteen_bit = True
                warnings.warn(
                    f"{type(self).__name__}: parameter {slot.param.name} is {data.dtype}; "
                    "without a float32 master weight small updates are rounded away. "
                    "Consider multi_precision=True",
                    stacklevel=4,
                )
        if not slot.state:
            slot.state = self._init_state(slot)

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Clear every parameter's gradient (lazily: see :meth:`Tensor.clear_grad`)."""
        for param in self._parameter_list:
            param.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none: bool = True) -> None:
        """PyTorch's spelling that Paddle also offers: ``clear_grad(set_to_zero=not set_to_none)``."""
        self.clear_grad(set_to_zero=not set_to_none)

    # --- state ----------------------------------------------------------------------------
    def state_dict(self) -> "collections.OrderedDict":
        """Per-parameter state as ``{param.name}_{state}_0`` tensors (Paddle's key names), the
        parameter names in order (``param_names``), and the scheduler's state (``LR_Scheduler``).

        Array states are the live arrays, not copies: save them before the next step.
        """
        state = collections.OrderedDict()
        masters = {}
        for slot in self._slots:
            name = slot.param.name
            if slot.master is not None:
                masters[name] = wrap(slot.master)
                name += precision.MASTER_SUFFIX
            for key, value in slot.state.items():
                if key in self._scalar_states:
                    state[f"{name}_{key}_0"] = wrap(backend.numpy.array([value], dtype="float64"))
                else:
                    state[f"{name}_{key}_0"] = wrap(value)
        if masters:
            state["master_weights"] = masters
        state["param_names"] = [slot.param.name for slot in self._slots]
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore :meth:`state_dict` so that the next step is the one the saved run would take.

        Parameters are matched by position through ``param_names`` (so a model rebuilt in the
        same process, whose parameters got new names, still matches); without that entry (as in
        Paddle's ``.pdopt`` files), see :meth:`_saved_names`. Everything is checked before
        anything changes.
        """
        cls = type(self).__name__
        names = state_dict.get("param_names")
        names = self._saved_names(state_dict) if names is None else list(names)
        if len(names) != len(self._slots):
            raise ValueError(
                f"{cls}.set_state_dict: the state is for {len(names)} parameters but this "
                f"optimizer has {len(self._slots)}"
            )
        used = {"param_names": True, "LR_Scheduler": True, "master_weights": True}
        saved_masters = state_dict.get("master_weights", {})
        new_states, new_masters = [], []
        for slot, saved in zip(self._slots, names):
            master = saved_masters.get(saved)
            if master is not None:
                master = self._state_array(
                    slot.param, master, f"master_weights[{saved!r}]", tuple(slot.param._data.shape), precision.FLOAT32
                )
                saved += precision.MASTER_SUFFIX
            new_masters.append(master)
            template = self._init_state(slot)
            restored = {}
            for key in self._array_states + self._scalar_states:
                entry = f"{saved}_{key}_0"
                if entry not in state_dict:
                    continue
                used[entry] = True
                restored[key] = (
                    _host_scalar(state_dict[entry])
                    if key in self._scalar_states
                    else self._state_array(
                        slot.param,
                        state_dict[entry],
                        entry,
                        self._state_shape(key, slot.param),
                        template[key].dtype if key in template else slot.param._data.dtype,
                    )
                )
            if restored and len(restored) != len(self._array_states) + len(self._scalar_states):
                raise ValueError(
                    f"{cls}.set_state_dict: the state of {saved} is incomplete: has "
                    f"{sorted(restored)}, needs {list(self._array_states + self._scalar_states)}"
                )
            new_states.append(restored)
        unexpected = [key for key in state_dict if key not in used]
        if unexpected:
            warnings.warn(f"{cls}.set_state_dict: ignored entries {unexpected}", stacklevel=2)
        has_scheduler = isinstance(self._learning_rate, LRScheduler)
        if "LR_Scheduler" in state_dict and not has_scheduler:
            warnings.warn(
                f"{cls}.set_state_dict: the state holds a learning-rate scheduler (LR_Scheduler) "
                "but this optimizer has a fixed learning rate; the scheduler state was ignored",
                stacklevel=2,
            )
        elif has_scheduler and "LR_Scheduler" not in state_dict:
            warnings.warn(
                f"{cls}.set_state_dict: this optimizer follows a scheduler but the state has no "
                "LR_Scheduler entry; the scheduler keeps its current epoch",
                stacklevel=2,
            )
        elif has_scheduler:
            self._learning_rate.set_state_dict(state_dict["LR_Scheduler"])
        for slot, restored, master in zip(self._slots, new_states, new_masters):
            slot.state = restored
            slot.master = master
            slot.ready = False

    set_dict = set_state_dict

    def _saved_names(self, state_dict: dict) -> list:
        """The parameter names of a state without ``param_names``: this optimizer's own names when
        the state uses them; otherwise the names it lists for the first accumulator, in order
        (Paddle writes parameters in order), so that a state saved by another process, whose
        parameters got other generated names, still matches by position."""
        own = [slot.param.name for slot in self._slots]
        keys = self._array_states + self._scalar_states
        if not keys or any(f"{name}_{key}_0" in state_dict for name in own for key in keys):
            return own
        suffix = f"_{keys[0]}_0"
        listed = [entry[: -len(suffix)] for entry in state_dict if isinstance(entry, str) and entry.endswith(suffix)]
        return listed or own

    def _state_shape(self, key: str, param: Tensor) -> tuple:
        """The shape of array state ``key`` of ``param``: the parameter's, unless a subclass says otherwise."""
        return tuple(param._data.shape)

    @staticmethod
    def _state_array(param: Tensor, value: Any, entry: str, shape: tuple, dtype: numpy.dtype) -> Any:
        """A private copy of a saved state array of ``shape``, on the parameter's device, in
        ``dtype``."""
        array = value._data if isinstance(value, Tensor) else value
        if tuple(array.shape) != shape:
            raise ValueError(
                f"set_state_dict: {entry} has shape {list(array.shape)} but parameter {param.name} needs {list(shape)}"
            )
        xp = backend.get_array_module(param._data)
        if xp is backend.numpy:
            array = backend.to_host(array)
        return xp.array(array, dtype=dtype, copy=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self._learning_rate!r}, parameters={len(self._slots)})"
