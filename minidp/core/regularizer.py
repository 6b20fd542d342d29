"""Paddle's weight-decay regularizers: ``L1Decay`` and ``L2Decay``.

A regularizer adds the gradient of a penalty on the parameter to the parameter's gradient before
the optimizer's update (after gradient clipping, as in Paddle). It is given either to an
optimizer as ``weight_decay`` (every parameter), or to one parameter through
``ParamAttr(regularizer=...)``; the parameter's own regularizer then replaces the optimizer's.
"""

from __future__ import annotations

import numbers
from typing import Any

from . import backend
from . import precision

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]


class WeightDecayRegularizer:
    """Base class: ``coeff`` scales the penalty. A penalty is a subclass that defines
    ``_add_to_grad(grad, param_data)``: ``grad`` plus the penalty's gradient at ``param_data``, in
    the compute dtype."""

    def __init__(self, coeff: float = 0.0) -> None:
        if not hasattr(self, "_add_to_grad"):
            raise TypeError(
                f"{type(self).__name__} defines no penalty: use L1Decay or L2Decay, or a subclass that defines "
                "_add_to_grad(grad, param_data)"
            )
        if isinstance(coeff, bool) or not isinstance(coeff, numbers.Real):
            raise TypeError(f"{type(self).__name__}: coeff must be a non-negative number, got {coeff!r}")
        if coeff < 0:
            raise ValueError(f"{type(self).__name__}: coeff must be a non-negative number, got {coeff!r}")
        self._coeff = float(coeff)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(coeff={self._coeff})"


class L2Decay(WeightDecayRegularizer):
    """Penalty ``0.5 * coeff * sum(p ** 2)``: adds ``coeff * p`` to the gradient."""

    def _add_to_grad(self, grad: Any, param_data: Any) -> Any:
        return precision.with_l2(grad, self._coeff, param_data)


class L1Decay(WeightDecayRegularizer):
    """Penalty ``coeff * sum(|p|)``: adds ``coeff * sign(p)`` to the gradient (sparse weights)."""

    def _add_to_grad(self, grad: Any, param_data: Any) -> Any:
        dtype = precision.compute_dtype(param_data.dtype)
        sign = backend.get_array_module(param_data).sign(param_data.astype(dtype, copy=False))
        return grad.astype(dtype, copy=False) + dtype.type(self._coeff) * sign
