"""Gradient and parameter utilities: clip_grad_norm_, clip_grad_value_, parameters_to_vector,
vector_to_parameters."""
from __future__ import annotations

import math
from typing import Iterable, Union

from .. import backend
from ..autograd.tensor import Tensor
from ..ops._util import wrap


def _as_list(parameters: Union[Tensor, Iterable[Tensor]]) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: Union[Tensor, Iterable[Tensor]], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients in place so that their total ``norm_type`` norm is at most ``max_norm``.

    Returns the total norm before clipping (a 0-d tensor). ``norm_type`` may be inf.
    """
    if max_norm <= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be positive, got {max_norm!r}")
    grads = [p.grad._data for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return wrap(backend.default_array_module().asarray(0.0, dtype="float32"))
    xp = backend.get_array_module(grads[0])
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(float(xp.abs(g).max()) for g in grads)
    else:
        total = sum(float((xp.abs(g.astype("float64")) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of the gradients is {total}; pass "
                           "error_if_nonfinite=False to clip anyway")
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale
    return wrap(xp.asarray(total, dtype=grads[0].dtype))


def clip_grad_value_(parameters: Union[Tensor, Iterable[Tensor]], clip_value: float) -> None:
    """Clip every gradient element to [-clip_value, clip_value], in place."""
    if clip_value <= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be positive, got {clip_value!r}")
    for p in _as_list(parameters):
        if p.grad is not None:
            g = p.grad._data
            backend.get_array_module(g).clip(g, -clip_value, clip_value, out=g)


def parameters_to_vector(parameters: Iterable[Tensor], name: str = None) -> Tensor:
    """All parameters flattened and joined into one 1-D tensor (a copy)."""
    arrays = [p._data.reshape(-1) for p in parameters]
    if not arrays:
        raise ValueError("parameters_to_vector: no parameters given")
    return wrap(backend.get_array_module(arrays[0]).concatenate(arrays))


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor], name: str = None) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters``, in place."""
    params = list(parameters)
    total = sum(p._data.size for p in params)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: vec must be 1-D with {total} values (the parameters' total), "
                         f"got shape {vec.shape}")
    start = 0
    for p in params:
        size = p._data.size
        p._data[...] = vec._data[start:start + size].reshape(p._data.shape)
        start += size
