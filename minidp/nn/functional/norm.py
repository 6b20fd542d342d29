"""Layer and batch normalisation, each one op with a closed-form backward.

Both normalise ``x`` with a mean and an inverse standard deviation, then apply an optional
elementwise affine map; they differ only in which axes the statistics and the affine
parameters run over, so they share :func:`_normalize`.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import backend
from ...autograd.tensor import Tensor
from ...ops._util import result
from ._util import check_tensor


def _normalize(x: Tensor, mean: Any, rstd: Any, stat_axes: tuple, batch_stats: bool,
               weight: Optional[Tensor], bias: Optional[Tensor], affine_shape: tuple) -> Tensor:
    """(x - mean) * rstd * weight + bias, with the gradient of the statistics when they came
    from ``x`` itself (``batch_stats``) over ``stat_axes``."""
    xd = x._data
    xhat = (xd - mean) * rstd
    w = None if weight is None else weight._data.reshape(affine_shape)
    out = xhat if w is None else xhat * w
    if bias is not None:
        out = out + bias._data.reshape(affine_shape)
    param_axes = tuple(i for i, n in enumerate(affine_shape) if n == 1)
    parents = tuple(t for t in (x, weight, bias) if t is not None)

    def backward(g):
        grads = []
        if x.stop_gradient:
            grads.append(None)
        else:
            g_hat = g if w is None else g * w
            if batch_stats:
                g_hat = (g_hat - g_hat.mean(axis=stat_axes, keepdims=True)
                         - xhat * (g_hat * xhat).mean(axis=stat_axes, keepdims=True))
            grads.append(g_hat * rstd)
        if weight is not None:
            grads.append(None if weight.stop_gradient
                         else (g * xhat).sum(axis=param_axes).reshape(weight._data.shape))
        if bias is not None:
            grads.append(None if bias.stop_gradient else g.sum(axis=param_axes).reshape(bias._data.shape))
        return tuple(grads)

    return result(out, parents, backward)


def _moments(xp: Any, xd: Any, axes: tuple, epsilon: float) -> tuple:
    mean = xd.mean(axis=axes, keepdims=True)
    centered = xd - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    return mean, var, 1.0 / xp.sqrt(var + epsilon)


def layer_norm(x: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               epsilon: float = 1e-05, name: Optional[str] = None) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` axes of each sample.

    ``weight`` and ``bias`` hold prod(normalized_shape) values (Paddle keeps them flat).
    """
    check_tensor("layer_norm", "x", x)
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    xd = x._data
    if list(xd.shape[xd.ndim - len(shape):]) != shape or len(shape) > xd.ndim:
        raise ValueError(f"layer_norm: normalized_shape {shape} must match the trailing axes of the "
                         f"input shape {x.shape}")
    axes = tuple(range(xd.ndim - len(shape), xd.ndim))
    mean, _, rstd = _moments(backend.get_array_module(xd), xd, axes, epsilon)
    affine_shape = (1,) * (xd.ndim - len(shape)) + tuple(shape)
    return _normalize(x, mean, rstd, axes, True, weight, bias, affine_shape)


def batch_norm(x: Tensor, running_mean: Tensor, running_var: Tensor, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, training: bool = False, momentum: float = 0.9,
               epsilon: float = 1e-05, data_format: str = "NCHW", use_global_stats: Optional[bool] = None,
               name: Optional[str] = None) -> Tensor:
    """Normalise each channel with the batch's statistics (training) or the running ones.

    Whenever the batch's statistics are used, the running ones are updated in place as Paddle
    does: ``running = momentum * running + (1 - momentum) * batch`` (the batch variance is the
    biased one). ``use_global_stats`` decides as in Paddle: None follows ``training``, True
    always uses the running statistics (and never updates them), False always uses the batch's,
    in evaluation too.
    """
    check_tensor("batch_norm", "x", x)
    xd = x._data
    if xd.ndim < 2:
        raise ValueError(f"batch_norm: expects an input with a channel axis, got shape {x.shape}")
    if data_format in ("NC", "NCL", "NCHW", "NCDHW"):
        channel_axis = 1
    elif data_format in ("NLC", "NHWC", "NDHWC"):
        channel_axis = xd.ndim - 1
    else:
        raise ValueError(f"batch_norm: unknown data_format {data_format!r}; use 'NCHW'-style or 'NHWC'-style")
    channels = xd.shape[channel_axis]
    if running_mean.shape != [channels] or running_var.shape != [channels]:
        raise ValueError(f"batch_norm: running statistics must have shape [{channels}], got "
                         f"{running_mean.shape} and {running_var.shape}")
    axes = tuple(i for i in range(xd.ndim) if i != channel_axis)
    affine_shape = tuple(channels if i == channel_axis else 1 for i in range(xd.ndim))
    xp = backend.get_array_module(xd)
    batch_stats = training if use_global_stats is None else not use_global_stats
    if batch_stats:
        mean, var, rstd = _moments(xp, xd, axes, epsilon)
        for running, batch in ((running_mean._data, mean), (running_var._data, var)):
            running *= momentum
            running += (1.0 - momentum) * batch.reshape(channels).astype(running.dtype, copy=False)
    else:
        mean = running_mean._data.reshape(affine_shape)
        rstd = 1.0 / xp.sqrt(running_var._data.reshape(affine_shape) + epsilon)
    return _normalize(x, mean, rstd, axes, batch_stats, weight, bias, affine_shape)
