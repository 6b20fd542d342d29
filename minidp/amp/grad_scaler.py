"""GradScaler: dynamic loss scaling for float16 training, Paddle's AmpScaler/GradScaler.

The loss is multiplied by the scale before backward so small float16 gradients do not flush to
zero; ``unscale_`` divides the gradients back and notes whether any is inf or nan; ``step``
skips the optimizer's update on such a step; ``update`` halves the scale after
``decr_every_n_nan_or_inf`` bad steps and doubles it after ``incr_every_n_steps`` good ones.

Data parallelism: when the default process group has more than one rank, ``unscale_`` all-reduces
the found-inf flag (MAX) over it, so every rank skips the same steps and keeps the same scale
even where only one rank's gradients overflowed (DataParallel's gradient all-reduce already
spreads an inf; the flag also covers ``no_sync`` and models trained without DataParallel, as
Paddle's fleet scaler does). Every rank must therefore call ``step``/``minimize`` together.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy

from ..core import backend
from ..core.tensor import Tensor
from ..core.distributed import collective
from ..core.distributed.parallel import get_world_size
from . import state

__all__ = ["GradScaler", "AmpScaler", "OptimizerState"]


class OptimizerState:
    """Where an optimizer is in the current step: nothing done, gradients unscaled, stepped."""

    INIT = 0
    UNSCALED = 1
    STEPPED = 2


class AmpScaler:
    """Paddle's older scaler: the same as :class:`GradScaler` with smaller defaults."""

    def __init__(
        self,
        enable: bool = True,
        init_loss_scaling: float = 2.0**15,
        incr_ratio: float = 2.0,
        decr_ratio: float = 0.5,
        incr_every_n_steps: int = 1000,
        decr_every_n_nan_or_inf: int = 1,
        use_dynamic_loss_scaling: bool = True,
    ) -> None:
        self._enable = bool(enable)
        self._use_dynamic_loss_scaling = False
        self._init_loss_scaling = 1.0
        self._scale = None
        if not self._enable:
            return
        _check_ratio(incr_ratio, decr_ratio)
        for name, value in (
            ("incr_every_n_steps", incr_every_n_steps),
            ("decr_every_n_nan_or_inf", decr_every_n_nan_or_inf),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GradScaler: {name} must be a positive int, got {value!r}")
        self._init_loss_scaling = float(init_loss_scaling)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        self._incr_every_n_steps = incr_every_n_steps
        self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
        self._incr_count = 0
        self._decr_count = 0
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
        self._scale = _scale_tensor(self._init_loss_scaling)
        self._found_inf = False
        self._cache_found_inf = None
        self._optimizer_states: dict = {}

    # --- the step ---------------------------------------------------------------------------
    def scale(self, var: Tensor) -> Tensor:
        """``var`` times the loss scale (``var`` itself when disabled). As in Paddle, dynamic
        scaling is turned off with a warning when the last auto_cast entered was not float16."""
        if not isinstance(var, Tensor):
            raise TypeError(f"GradScaler.scale: var must be a Tensor, got {type(var).__name__}")
        amp_dtype = state.last_dtype["value"]
        if self._enable and amp_dtype != "float16" and self._use_dynamic_loss_scaling:
            self._enable = False
            self._use_dynamic_loss_scaling = False
            self._init_loss_scaling = 1.0
            warnings.warn(
                f"GradScaler: dynamic loss scaling is not recommended for {amp_dtype}, so it is turned off",
                stacklevel=2,
            )
        if not self._enable:
            return var
        return var * self._scale

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and note
        whether any of them holds inf or nan (agreed across ranks)."""
        if not self._enable:
            return
        phase = self._optimizer_states.get(id(optimizer), OptimizerState.INIT)
        if phase == OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update()")
        if phase == OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step()")
        inverse = numpy.float32(1.0) / numpy.float32(self._scale.item())
        found = False
        for param in optimizer._parameter_list:
            grad = param._grad
            if grad is None:
                continue
            xp = backend.get_array_module(grad)
            grad *= grad.dtype.type(inverse)
            found = found or not bool(xp.isfinite(grad).all())
        self._found_inf = _agreed(found)
        self._optimizer_states[id(optimizer)] = OptimizerState.UNSCALED

    def step(self, optimizer: Any) -> None:
        """Unscale (unless done) and run ``optimizer.step()``, skipping it on a step with inf/nan."""
        if not self._enable:
            optimizer.step()
            return
        if self._optimizer_states.get(id(optimizer)) == OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update()")
        if self._optimizer_states.get(id(optimizer), OptimizerState.INIT) == OptimizerState.INIT:
            self.unscale_(optimizer)
        self._cache_found_inf = self._found_inf
        if not self._found_inf:
            optimizer.step()
        self._optimizer_states[id(optimizer)] = OptimizerState.STEPPED
        if not self._use_dynamic_loss_scaling:
            self._optimizer_states = {}

    def update(self) -> None:
        """Adjust the scale after a step (dynamic scaling only)."""
        if self._enable and self._use_dynamic_loss_scaling:
            self._update()
            self._optimizer_states = {}

    def minimize(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``step`` then ``update`` through ``optimizer.minimize(*args, **kwargs)``; returns what
        that returns, or ``(None, None)`` on a skipped step."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        if self._optimizer_states.get(id(optimizer), OptimizerState.INIT) == OptimizerState.INIT:
            self.unscale_(optimizer)
        result = (None, None)
        self._cache_found_inf = self._found_inf
        if not self._found_inf:
            result = optimizer.minimize(*args, **kwargs)
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = {}
        return result

    def _update(self) -> None:
        if self._cache_found_inf:
            self._incr_count = 0
            self._decr_count += 1
            if self._decr_count == self._decr_every_n_nan_or_inf:
                current = self._scale.item()
                print(f"Found inf or nan, current scale is: {current}, decrease to: {current}*{self._decr_ratio}")
                self._scale = _scale_tensor(current * self._decr_ratio)
                self._decr_count = 0
        else:
            self._decr_count = 0
            self._incr_count += 1
            if self._incr_count == self._incr_every_n_steps:
                self._scale = _scale_tensor(self._scale.item() * self._incr_ratio)
                self._incr_count = 0

    # --- settings ---------------------------------------------------------------------------
    def is_enable(self) -> bool:
        """Whether loss scaling is on."""
        return self._enable

    def is_use_dynamic_loss_scaling(self) -> bool:
        """Whether the scale changes with the steps (False: a fixed scale)."""
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self) -> float:
        """The initial loss scale."""
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling: float) -> None:
        """Set the initial loss scale and restart the current scale from it."""
        self._init_loss_scaling = new_init_loss_scaling
        self._scale = _scale_tensor(new_init_loss_scaling)

    def get_incr_ratio(self) -> float:
        """The factor the scale grows by."""
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio: float) -> None:
        """Set the factor the scale grows by (more than 1)."""
        _check_ratio(new_incr_ratio, 0.5)
        self._incr_ratio = new_incr_ratio

    def get_decr_ratio(self) -> float:
        """The factor the scale shrinks by."""
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio: float) -> None:
        """Set the factor the scale shrinks by (less than 1)."""
        _check_ratio(2.0, new_decr_ratio)
        self._decr_ratio = new_decr_ratio

    def get_incr_every_n_steps(self) -> int:
        """How many good steps in a row grow the scale."""
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps: int) -> None:
        """Set how many good steps in a row grow the scale."""
        self._incr_every_n_steps = new_incr_every_n_steps

    def get_decr_every_n_nan_or_inf(self) -> int:
        """How many bad steps (counted since the last good one) shrink the scale."""
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf: int) -> None:
        """Set how many bad steps shrink the scale."""
        self._decr_every_n_nan_or_inf = new_decr_every_n_nan_or_inf

    def state_dict(self) -> dict:
        """The scaler's state (Paddle's keys; ``scale`` a float32 array of shape [1]); {} when disabled."""
        if not self._enable:
            return {}
        return {
            "scale": backend.to_host(self._scale._data).copy(),
            "incr_ratio": self._incr_ratio,
            "decr_ratio": self._decr_ratio,
            "incr_every_n_steps": self._incr_every_n_steps,
            "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf,
            "incr_count": self._incr_count,
            "decr_count": self._decr_count,
            "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` (ignored when disabled)."""
        if not self._enable:
            return
        if not isinstance(state_dict, dict):
            raise TypeError(f"load_state_dict: state_dict must be a dict, got {type(state_dict).__name__}")
        if not state_dict:
            raise RuntimeError(
                "The input state dict is empty, possibly because it was saved from a disabled GradScaler"
            )
        self._init_loss_scaling = float(numpy.asarray(state_dict["scale"]).reshape(-1)[0])
        self._scale = _scale_tensor(self._init_loss_scaling)
        self._incr_ratio = state_dict["incr_ratio"]
        self._decr_ratio = state_dict["decr_ratio"]
        self._incr_every_n_steps = state_dict["incr_every_n_steps"]
        self._decr_every_n_nan_or_inf = state_dict["decr_every_n_nan_or_inf"]
        self._incr_count = state_dict["incr_count"]
        self._decr_count = state_dict["decr_count"]
        self._use_dynamic_loss_scaling = state_dict["use_dynamic_loss_scaling"]


class GradScaler(AmpScaler):
    """Paddle's GradScaler: loss scaling with ``scale``, ``unscale_``, ``step``, ``update`` and
    ``minimize`` (``step`` + ``update``). Defaults: scale 65536, doubled after 2000 good steps,
    halved after each step with inf or nan."""

    def __init__(
        self,
        enable: bool = True,
        init_loss_scaling: float = 2.0**16,
        incr_ratio: float = 2.0,
        decr_ratio: float = 0.5,
        incr_every_n_steps: int = 2000,
        decr_every_n_nan_or_inf: int = 1,
        use_dynamic_loss_scaling: bool = True,
    ) -> None:
        super().__init__(
            enable,
            init_loss_scaling,
            incr_ratio,
            decr_ratio,
            incr_every_n_steps,
            decr_every_n_nan_or_inf,
            use_dynamic_loss_scaling,
        )


def _check_ratio(incr_ratio: float, decr_ratio: float) -> None:
    if not incr_ratio > 1.0:
        raise ValueError(f"GradScaler: incr_ratio must be > 1.0, got {incr_ratio!r}")
    if not 0.0 < decr_ratio < 1.0:
        raise ValueError(f"GradScaler: decr_ratio must be between 0 and 1, got {decr_ratio!r}")


def _scale_tensor(value: float) -> Tensor:
    """The scale as Paddle keeps it: a float32 tensor of shape [1] on the current device."""
    return Tensor._wrap(backend.default_array_module().asarray(numpy.array([value], dtype="float32")))


def _agreed(found: bool) -> bool:
    """``found`` OR-ed over the ranks of the default group (itself in a single process)."""
    if not collective.is_initialized() or get_world_size() < 2:
        return found
    flag = Tensor._wrap(backend.default_array_module().asarray(numpy.array([1.0 if found else 0.0], dtype="float32")))
    collective.all_reduce(flag, op=collective.ReduceOp.MAX)
    return bool(flag.item() > 0)
