"""Gradient and parameter utilities: clip_grad_norm_, clip_grad_value_, parameters_to_vector,
vector_to_parameters, and the weight_norm and spectral_norm reparameterisations."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Union

from ..core import backend
from .. import ops
from ..core.tensor import Parameter, Tensor
from ..core.op_util import wrap
from ..ops.creation import host_generator
from .functional.norm import as_matrix, power_iteration, spectral_normalize
from ..core.layer import Layer
from .layers.common import Linear
from .layers.conv import _ConvTranspose


def _as_list(parameters: Union[Tensor, Iterable[Tensor]]) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Union[Tensor, Iterable[Tensor]],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
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
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of the gradients is {total}; pass error_if_nonfinite=False to clip anyway"
        )
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
        raise ValueError(
            f"vector_to_parameters: vec must be 1-D with {total} values (the parameters' total), got shape {vec.shape}"
        )
    start = 0
    for p in params:
        size = p._data.size
        p._data[...] = vec._data[start : start + size].reshape(p._data.shape)
        start += size


def _norm_except(v: Tensor, dim: Optional[int]) -> Tensor:
    """The L2 norm of ``v`` over every axis but ``dim`` (over all axes when ``dim`` is None)."""
    axes = [a for a in range(v.ndim) if a != dim]
    return ops.sqrt((v * v).sum(axis=axes))


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: recomputes ``name`` = g * v / ||v|| before each call."""

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name, self.dim = name, dim

    def compute(self, layer: Layer) -> Tensor:
        v, g = getattr(layer, self.name + "_v"), getattr(layer, self.name + "_g")
        shape = [-1 if a == self.dim else 1 for a in range(v.ndim)] if self.dim is not None else []
        scale = g / _norm_except(v, self.dim)
        return v * (ops.reshape(scale, shape) if shape else scale)

    def __call__(self, layer: Layer, inputs: tuple) -> None:
        setattr(layer, self.name, self.compute(layer))


def weight_norm(layer: Layer, name: str = "weight", dim: Optional[int] = 0) -> Layer:
    """Reparameterise ``layer.<name>`` as g * v / ||v||: the parameters ``<name>_g`` (the norms
    along ``dim``, or one norm with ``dim=None``) and ``<name>_v`` (the direction) replace it,
    and the weight is recomputed before every forward."""
    for hook in layer._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise ValueError(f"weight_norm: {name!r} of {type(layer).__name__} is already normalised")
    weight = layer._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"weight_norm: {type(layer).__name__} has no parameter {name!r}")
    if dim is not None and not -weight.ndim <= dim < weight.ndim:
        raise ValueError(f"weight_norm: dim {dim} is out of range for a weight with {weight.ndim} axes")
    dim = None if dim is None else dim % weight.ndim
    delattr(layer, name)
    xp = backend.get_array_module(weight._data)
    norm = _norm_except(wrap(weight._data), dim)._data
    layer.add_parameter(name + "_v", Parameter(weight._data.copy(), name=weight.name + "_v"))
    layer.add_parameter(name + "_g", Parameter(xp.asarray(norm, dtype=weight._data.dtype), name=weight.name + "_g"))
    hook = WeightNorm(name, dim)
    setattr(layer, name, hook.compute(layer))
    layer.register_forward_pre_hook(hook)
    return layer


def remove_weight_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo :func:`weight_norm`: ``<name>`` becomes one parameter again, holding g * v / ||v||."""
    for key, hook in list(layer._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            data = hook.compute(layer)._data
            original_name = getattr(layer, name + "_v").name[: -len("_v")]
            del layer._forward_pre_hooks[key]
            delattr(layer, name + "_g")
            delattr(layer, name + "_v")
            object.__delattr__(layer, name)
            layer.add_parameter(name, Parameter(data, name=original_name))
            return layer
    raise ValueError(f"remove_weight_norm: {name!r} of {type(layer).__name__} is not weight-normalised")


class SpectralNormHook:
    """The forward pre-hook of :func:`spectral_norm`: in training, refines ``<name>_u``/``<name>_v``
    by power iteration (in place), then sets ``<name>`` = ``<name>_orig`` / sigma."""

    def __init__(self, name: str, dim: int, iterations: int, eps: float) -> None:
        self.name, self.dim, self.iterations, self.eps = name, dim, iterations, eps

    def __call__(self, layer: Layer, inputs: tuple) -> None:
        orig = getattr(layer, self.name + "_orig")
        u, v = getattr(layer, self.name + "_u"), getattr(layer, self.name + "_v")
        if layer.training:
            matrix = as_matrix(wrap(orig._data), self.dim)._data
            new_u, new_v = power_iteration(matrix, u._data, v._data, self.iterations, self.eps)
            u._data[...], v._data[...] = new_u, new_v
        layer.register_buffer(self.name, spectral_normalize(orig, self.dim, u._data, v._data), persistable=False)


def spectral_norm(
    layer: Layer, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: Optional[int] = None
) -> Layer:
    """Divide ``layer.<name>`` by its spectral norm before every forward (GAN discriminators).

    The parameter becomes ``<name>_orig``; the power-iteration vectors are the buffers
    ``<name>_u`` and ``<name>_v``, refined in training mode only. ``dim`` (the axis treated as
    rows) defaults to 1 for Linear and transposed convolutions, else 0, as in Paddle.
    """
    weight = layer._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"spectral_norm: {type(layer).__name__} has no parameter {name!r}")
    if n_power_iterations < 1:
        raise ValueError(f"spectral_norm: n_power_iterations must be >= 1, got {n_power_iterations}")
    if dim is None:
        dim = 1 if isinstance(layer, (Linear, _ConvTranspose)) else 0
    xp = backend.get_array_module(weight._data)
    matrix = as_matrix(wrap(weight._data), dim)._data
    generator = host_generator()
    u = xp.asarray(generator.normal(size=matrix.shape[0]), dtype=matrix.dtype)
    v = xp.asarray(generator.normal(size=matrix.shape[1]), dtype=matrix.dtype)
    u, v = u / (xp.linalg.norm(u) + eps), v / (xp.linalg.norm(v) + eps)
    delattr(layer, name)
    layer.add_parameter(name + "_orig", weight)
    layer.register_buffer(name + "_u", wrap(u))
    layer.register_buffer(name + "_v", wrap(v))
    hook = SpectralNormHook(name, dim, n_power_iterations, eps)
    hook(layer, ())
    layer.register_forward_pre_hook(hook)
    return layer
