"""Normalisation: layer, batch, group and instance norms, each one op with a closed-form backward,
plus normalize, local_response_norm, cross-process batch norm and the spectral-norm helpers.

Layer, batch, group and instance normalisation all normalise ``x`` with a mean and an inverse
standard deviation, then apply an optional elementwise affine map; they differ only in which
axes the statistics and the affine parameters run over, so they share :func:`_normalize`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import matmul_arrays, result, results, wrap
from ._util import channel_sums, check_tensor
from .fusion import fusable_dtypes
from .distance import p_norm
from .padding import pad_axes

__all__ = [
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "normalize",
    "rms_norm",
]


def _normalize(
    x: Tensor,
    mean: Any,
    rstd: Any,
    stat_axes: tuple,
    batch_stats: bool,
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    affine_shape: tuple,
) -> Tensor:
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
                g_hat = (
                    g_hat
                    - g_hat.mean(axis=stat_axes, keepdims=True)
                    - xhat * (g_hat * xhat).mean(axis=stat_axes, keepdims=True)
                )
            grads.append(g_hat * rstd)
        if weight is not None:
            grads.append(None if weight.stop_gradient else (g * xhat).sum(axis=param_axes).reshape(weight._data.shape))
        if bias is not None:
            grads.append(None if bias.stop_gradient else g.sum(axis=param_axes).reshape(bias._data.shape))
        return tuple(grads)

    return result(out, parents, backward)


def _moments(xp: Any, xd: Any, axes: tuple, epsilon: float) -> tuple:
    mean = xd.mean(axis=axes, keepdims=True)
    centered = xd - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    return mean, var, 1.0 / xp.sqrt(var + epsilon)


def _channel_axis(op: str, data_format: str, ndim: int) -> int:
    """1 for channel-first layouts (NC, NCL, NCHW, NCDHW), the last axis for channel-last ones."""
    if data_format in ("NC", "NCL", "NCHW", "NCDHW"):
        return 1
    if data_format in ("NLC", "NHWC", "NDHWC"):
        return ndim - 1
    raise ValueError(f"{op}: unknown data_format {data_format!r}; use 'NCHW'-style or 'NHWC'-style")


def layer_norm(
    x: Tensor,
    normalized_shape: Any,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    epsilon: float = 1e-05,
    name: Optional[str] = None,
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` axes of each sample.

    ``weight`` and ``bias`` hold prod(normalized_shape) values (Paddle keeps them flat).
    """
    check_tensor("layer_norm", "x", x)
    try:
        in_range = 0.0 <= epsilon <= 1e-3
    except TypeError:
        raise TypeError(f"layer_norm: epsilon must be a float, got {epsilon!r} ({type(epsilon).__name__})") from None
    if not in_range:
        raise ValueError(f"layer_norm: epsilon must be in [0, 0.001] (Paddle's bound), got {epsilon}")
    xd = x._data
    axes, affine_shape = _trailing_axes("layer_norm", x, normalized_shape)
    affine = [t._data for t in (weight, bias) if t is not None]
    if fusable_dtypes(xd, *affine):
        return _layer_norm_rows(x, weight, bias, epsilon, math.prod(affine_shape))
    mean, _, rstd = _moments(backend.get_array_module(xd), xd, axes, epsilon)
    return _normalize(x, mean, rstd, axes, True, weight, bias, affine_shape)


def _layer_norm_rows(
    x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], epsilon: float, features: int
) -> Tensor:
    """Layer normalisation of float32/float64 ``x`` seen as rows of ``features`` values: one op
    whose row sums are matrix-vector products and row dot products einsums (several times
    faster than NumPy's axis reductions on short rows), with the normalised rows updated in
    place and kept for the backward."""
    xd = x._data
    xp = backend.get_array_module(xd)
    rows = xd.reshape(-1, features)
    ones = xp.ones(features, dtype=xd.dtype)
    inv = 1.0 / features
    xhat = rows - (matmul_arrays(rows, ones) * inv)[:, None]
    var = xp.einsum("ij,ij->i", xhat, xhat) * inv
    rstd = (1.0 / xp.sqrt(var + epsilon))[:, None]
    xhat *= rstd
    w = None if weight is None else weight._data.reshape(features)
    b = None if bias is None else bias._data.reshape(features)
    if w is None:
        out = xhat if b is None else xhat + b
    else:
        out = xhat * w
        if b is not None:
            out += b
    parents = tuple(t for t in (x, weight, bias) if t is not None)

    def backward(g):
        g_rows = g.reshape(-1, features)
        grads = []
        if x.stop_gradient:
            grads.append(None)
        else:
            gh = g_rows * w if w is not None else g_rows.copy()
            mean_g = matmul_arrays(gh, ones) * inv
            mean_gx = xp.einsum("ij,ij->i", gh, xhat) * inv
            gh -= mean_g[:, None]
            gh -= xhat * mean_gx[:, None]
            gh *= rstd
            grads.append(gh.reshape(xd.shape))
        if weight is not None:
            gw = None if weight.stop_gradient else xp.einsum("ij,ij->j", g_rows, xhat).reshape(weight._data.shape)
            grads.append(gw)
        if bias is not None:
            grads.append(None if bias.stop_gradient else g_rows.sum(axis=0).reshape(bias._data.shape))
        return tuple(grads)

    return result(out.reshape(xd.shape), parents, backward)


def _trailing_axes(op: str, x: Tensor, normalized_shape: Any) -> tuple:
    """The axes ``normalized_shape`` names (the trailing ones of x) and the shape a weight of
    that many values broadcasts as."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    ndim = x._data.ndim
    if len(shape) > ndim or list(x._data.shape[ndim - len(shape) :]) != shape:
        raise ValueError(f"{op}: normalized_shape {shape} must match the trailing axes of the input shape {x.shape}")
    return tuple(range(ndim - len(shape), ndim)), (1,) * (ndim - len(shape)) + tuple(shape)


def rms_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Optional[Tensor] = None,
    eps: float = 1e-05,
    name: Optional[str] = None,
) -> tuple:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` axes:
    ``x / sqrt(mean(x**2) + eps) * weight``.

    Returns ``(out, invvar)`` as Paddle does: ``invvar`` holds 1 / sqrt(mean(x**2) + eps) for
    each of the rows the leading axes form (shape [rows], float32 unless x is float64) and
    carries no gradient.
    """
    check_tensor("rms_norm", "input", input)
    xd = input._data
    if not backend.is_floating(xd.dtype):
        raise TypeError(f"rms_norm: input must be a floating tensor, got {xd.dtype}; cast it with .astype('float32')")
    axes, affine_shape = _trailing_axes("rms_norm", input, normalized_shape)
    if weight is not None:
        check_tensor("rms_norm", "weight", weight)
        if weight._data.size != math.prod(affine_shape):
            raise ValueError(
                f"rms_norm: weight has shape {weight.shape}; it needs "
                f"{list(affine_shape[len(affine_shape) - len(axes) :])} values"
            )
    xp = backend.get_array_module(xd)
    rstd = 1.0 / xp.sqrt((xd * xd).mean(axis=axes, keepdims=True) + eps)
    xhat = xd * rstd
    w = None if weight is None else weight._data.reshape(affine_shape)
    out = xhat if w is None else xhat * w
    invvar = rstd.reshape(-1).astype(xd.dtype if xd.dtype == xp.float64 else xp.float32)
    parents = (input,) if weight is None else (input, weight)
    param_axes = tuple(i for i, n in enumerate(affine_shape) if n == 1)

    def backward(grads):
        g = grads[0]
        gx = g if w is None else g * w
        gx = None if input.stop_gradient else rstd * (gx - xhat * (gx * xhat).mean(axis=axes, keepdims=True))
        if weight is None:
            return (gx,)
        gw = None if weight.stop_gradient else (g * xhat).sum(axis=param_axes).reshape(weight._data.shape)
        return gx, gw

    return results((out, invvar), parents, backward, differentiable=(True, False))


def _per_channel(op: str, x: Tensor, data_format: str) -> tuple:
    """``(channels, axes, shape)`` for batch normalisation of ``x``: the number of channels, the
    other axes (those the statistics cover) and the shape that broadcasts a per-channel vector
    against ``x``."""
    check_tensor(op, "x", x)
    if x.ndim < 2:
        raise ValueError(f"{op}: expects an input with a channel axis, got shape {x.shape}")
    channel_axis = _channel_axis(op, data_format, x.ndim)
    channels = x.shape[channel_axis]
    axes = tuple(i for i in range(x.ndim) if i != channel_axis)
    return channels, axes, tuple(channels if i == channel_axis else 1 for i in range(x.ndim))


def _update_running(running_mean: Tensor, running_var: Tensor, mean: Any, var: Any, momentum: float) -> None:
    """In place, as Paddle does: ``running = momentum * running + (1 - momentum) * batch`` for
    the mean and the (biased) variance of the batch, each holding one value per channel."""
    for running, batch in ((running_mean._data, mean), (running_var._data, var)):
        running *= momentum
        running += (1.0 - momentum) * batch.reshape(running.shape).astype(running.dtype, copy=False)


def _channel_view(x: Any, channel_axis: int) -> Any:
    """``x`` as [A, C, B]: the axes before the channel axis, the channels, the axes after it (a view
    of an NCHW or NHWC array, and of a channels-first array stored batch-second)."""
    shape = x.shape
    return x.reshape(math.prod(shape[:channel_axis]), shape[channel_axis], math.prod(shape[channel_axis + 1 :]))


def _channel_dots(xp: Any, a: Any, b: Any) -> Any:
    """The per-channel sums of ``a * b`` for ``a`` and ``b`` [A, C, B], without their product."""
    return xp.einsum("acb,acb->c", a, b)


def _batch_normalize(
    x: Tensor,
    centered: Any,
    rstd: Any,
    channel_axis: int,
    batch_stats: bool,
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    sum_across: Optional[Callable[[Any], Any]] = None,
    count: Optional[float] = None,
) -> Tensor:
    """Batch normalisation as one op: ``(x - mean) * rstd * weight + bias`` per channel, given
    ``centered``, x - mean as [A, C, B] (see :func:`_channel_view`), and ``rstd`` [C]; the
    statistics are the batch's (``batch_stats``, then their gradient counts) or the running ones.

    Forward keeps only ``centered``; the affine map is one per-channel scale and shift. Backward
    needs two per-channel sums, of g and of g * (x - mean), and gives the input gradient as
    ``g * a + (x - mean) * b + c`` with per-channel a, b, c (the closed form of the composition).
    When the statistics cover several processes' batches (``count`` values in all),
    ``sum_across`` sums those two over the processes, once per backward on every process.
    """
    xd = x._data
    xp = backend.get_array_module(xd)
    shape = (1, -1, 1)
    scale = rstd if weight is None else rstd * weight._data
    out = centered * scale.reshape(shape)
    if bias is not None:
        out += bias._data.reshape(shape)
    parents = tuple(t for t in (x, weight, bias) if t is not None)
    count = centered.shape[0] * centered.shape[2] if count is None else count

    def backward(g):
        g3 = _channel_view(g, channel_axis)
        sum_g = channel_sums(xp, g3)
        sum_gc = None if weight is None and not batch_stats else _channel_dots(xp, g3, centered)
        total_g, total_gc = sum_g, sum_gc
        if sum_across is not None:
            totals = sum_across(xp.concatenate([sum_g, sum_gc]).astype("float64")).astype(g.dtype)
            total_g, total_gc = totals[: sum_g.size], totals[sum_g.size :]
        grads = []
        if x.stop_gradient:
            grads.append(None)
        else:
            gx = g3 * scale.reshape(shape)
            if batch_stats:
                gx += centered * (-scale * rstd * rstd * total_gc / count).reshape(shape)
                gx += (-scale * total_g / count).reshape(shape)
            grads.append(gx.reshape(xd.shape))
        if weight is not None:
            grads.append(None if weight.stop_gradient else (sum_gc * rstd).reshape(weight._data.shape))
        if bias is not None:
            grads.append(None if bias.stop_gradient else sum_g.reshape(bias._data.shape))
        return tuple(grads)

    return result(out.reshape(xd.shape), parents, backward)


def batch_norm(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    training: bool = False,
    momentum: float = 0.9,
    epsilon: float = 1e-05,
    data_format: str = "NCHW",
    use_global_stats: Optional[bool] = None,
    name: Optional[str] = None,
) -> Tensor:
    """Normalise each channel with the batch's statistics (training) or the running ones.

    Whenever the batch's statistics are used, the running ones are updated in place as Paddle
    does: ``running = momentum * running + (1 - momentum) * batch`` (the batch variance is the
    biased one). ``use_global_stats`` decides as in Paddle: None follows ``training``, True
    always uses the running statistics (and never updates them), False always uses the batch's,
    in evaluation too.
    """
    channels, _, _ = _per_channel("batch_norm", x, data_format)
    operands = {"x": x, "running_mean": running_mean, "running_var": running_var, "weight": weight, "bias": bias}
    for arg, value in operands.items():
        if value is None and arg in ("weight", "bias"):
            continue
        check_tensor("batch_norm", arg, value)
        if not backend.is_floating(value._data.dtype):
            raise TypeError(
                f"batch_norm: {arg} must be a floating tensor, got {value._data.dtype}; cast it with .astype('float32')"
            )
    xd = x._data
    stats = (running_mean._data.dtype, running_var._data.dtype)
    if xd.dtype in ("float32", "float64") and stats != (xd.dtype, xd.dtype):
        raise TypeError(  # Paddle 3.3.1 refuses the mix too (or, in training without weight, skips the update)
            f"batch_norm: running_mean and running_var must have x's dtype {xd.dtype}, got {stats[0]} and "
            f"{stats[1]}; cast x with .astype('{stats[0]}') or the statistics' layer with layer.to(dtype='{xd.dtype}')"
        )
    if running_mean.shape != [channels] or running_var.shape != [channels]:
        raise ValueError(
            f"batch_norm: running statistics must have shape [{channels}], got "
            f"{running_mean.shape} and {running_var.shape}"
        )
    xp = backend.get_array_module(xd)
    channel_axis = _channel_axis("batch_norm", data_format, xd.ndim)
    batch_stats = training if use_global_stats is None else not use_global_stats
    x3 = _channel_view(xd, channel_axis)
    if batch_stats:
        count = x3.shape[0] * x3.shape[2]
        mean = channel_sums(xp, x3) / count
        centered = x3 - mean.reshape(1, -1, 1)
        var = _channel_dots(xp, centered, centered) / count
        _update_running(running_mean, running_var, mean, var, momentum)
    else:
        centered = x3 - running_mean._data.astype(xd.dtype, copy=False).reshape(1, -1, 1)
        var = running_var._data
    rstd = (1.0 / xp.sqrt(var + epsilon)).astype(xd.dtype, copy=False)
    return _batch_normalize(x, centered, rstd, channel_axis, batch_stats, weight, bias)


def _channels_first(x: Tensor, channel_axis: int) -> Tensor:
    """``x`` with its channel axis moved to position 1 (a no-op for channel-first inputs)."""
    if channel_axis == 1:
        return x
    return ops.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))


def _channels_back(x: Tensor, channel_axis: int) -> Tensor:
    if channel_axis == 1:
        return x
    return ops.transpose(x, [0] + list(range(2, x.ndim)) + [1])


def group_norm(
    x: Tensor,
    num_groups: int,
    epsilon: float = 1e-05,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """Normalise each sample over groups of ``C / num_groups`` channels (and all spatial positions),
    then apply the per-channel ``weight`` and ``bias``."""
    check_tensor("group_norm", "x", x)
    if x.ndim < 2:
        raise ValueError(f"group_norm: expects an input [N, C, ...], got shape {x.shape}")
    channel_axis = _channel_axis("group_norm", data_format, x.ndim)
    channels = x.shape[channel_axis]
    if not isinstance(num_groups, int) or num_groups < 1 or channels % num_groups:
        raise ValueError(
            f"group_norm: num_groups ({num_groups!r}) must be a positive divisor of the {channels} channels"
        )
    y = _channels_first(x, channel_axis)
    shape = y.shape
    grouped = ops.reshape(y, [shape[0], num_groups, channels // num_groups] + shape[2:])
    xd = grouped._data
    axes = tuple(range(2, xd.ndim))
    mean, _, rstd = _moments(backend.get_array_module(xd), xd, axes, epsilon)
    affine_shape = (1, num_groups, channels // num_groups) + (1,) * (xd.ndim - 3)
    out = _normalize(grouped, mean, rstd, axes, True, weight, bias, affine_shape)
    return _channels_back(ops.reshape(out, shape), channel_axis)


def instance_norm(
    x: Tensor,
    running_mean: Optional[Tensor] = None,
    running_var: Optional[Tensor] = None,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    use_input_stats: bool = True,
    momentum: float = 0.9,
    eps: float = 1e-05,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """Normalise each channel of each sample over its spatial positions, then scale and shift.

    With ``use_input_stats=False`` the given running statistics are used instead (and are not
    updated), as in Paddle.
    """
    check_tensor("instance_norm", "x", x)
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expects an input [N, C, *spatial], got shape {x.shape}")
    channel_axis = _channel_axis("instance_norm", data_format, x.ndim)
    y = _channels_first(x, channel_axis)
    xd = y._data
    channels = xd.shape[1]
    xp = backend.get_array_module(xd)
    affine_shape = (1, channels) + (1,) * (xd.ndim - 2)
    axes = tuple(range(2, xd.ndim))
    if use_input_stats:
        mean, _, rstd = _moments(xp, xd, axes, eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        mean = running_mean._data.reshape(affine_shape)
        rstd = 1.0 / xp.sqrt(running_var._data.reshape(affine_shape) + eps)
    out = _normalize(y, mean, rstd, axes, use_input_stats, weight, bias, affine_shape)
    return _channels_back(out, channel_axis)


def normalize(
    x: Tensor,
    p: float = 2,
    axis: int = 1,
    epsilon: float = 1e-12,
    out: Optional[Tensor] = None,
    name: Optional[str] = None,
) -> Tensor:
    """x / max(||x||_p, epsilon) along ``axis``."""
    check_tensor("normalize", "x", x)
    norm = p_norm(x, float(p), axis, True)
    return x / ops.maximum(norm, ops.full_like(norm, epsilon))


def local_response_norm(
    x: Tensor,
    size: int,
    alpha: float = 0.0001,
    beta: float = 0.75,
    k: float = 1.0,
    data_format: str = "NCHW",
    name: Optional[str] = None,
) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta.

    The window is centred on each channel (size // 2 before, (size - 1) // 2 after, zeros
    beyond the edges), and the mean always divides by ``size``, as in Paddle.
    """
    check_tensor("local_response_norm", "x", x)
    if x.ndim < 3:
        raise ValueError(f"local_response_norm: expects an input with 3 or more axes, got shape {x.shape}")
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    channel_axis = _channel_axis("local_response_norm", data_format, x.ndim)
    channels = x.shape[channel_axis]
    widths = [(0, 0)] * x.ndim
    widths[channel_axis] = (size // 2, (size - 1) // 2)
    squares = pad_axes(x * x, widths)
    window = None
    for start in range(size):
        index = (slice(None),) * channel_axis + (slice(start, start + channels),)
        window = squares[index] if window is None else window + squares[index]
    return x / ops.pow(window * (alpha / size) + k, beta)


def as_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix with axis ``dim`` as its rows."""
    if dim:
        weight = ops.transpose(weight, [dim] + [a for a in range(weight.ndim) if a != dim])
    return ops.reshape(weight, [weight.shape[0], -1])


def power_iteration(matrix: Any, u: Any, v: Any, iterations: int, eps: float) -> tuple:
    """``iterations`` rounds of v = W^T u / |W^T u|, u = W v / |W v| on arrays; returns (u, v)."""
    xp = backend.get_array_module(matrix)
    for _ in range(iterations):
        v = matrix.T @ u
        v = v / (xp.linalg.norm(v) + eps)
        u = matrix @ v
        u = u / (xp.linalg.norm(u) + eps)
    return u, v


def spectral_normalize(weight: Tensor, dim: int, u: Any, v: Any) -> Tensor:
    """weight / (u^T W v): ``weight`` divided by its largest singular value as estimated by the
    vectors ``u`` and ``v``, which are held constant (the gradient flows through W only)."""
    matrix = as_matrix(weight, dim)
    sigma = (ops.matmul(matrix, wrap(v)) * wrap(u)).sum()
    return weight / sigma


def synced_batch_norm(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    momentum: float,
    epsilon: float,
    data_format: str,
    sum_across: Callable[[Any], Any],
) -> Tensor:
    """Training-mode batch normalisation whose statistics cover the batches of several processes.

    ``sum_across(array)`` returns the elementwise sum of ``array`` over the processes (identity
    for one process); it is called once in forward (per-channel sums, sums of squares and counts)
    and once in backward (the two per-channel sums the input gradient needs), the same calls in
    the same order on every process. The running statistics are updated in place with the
    global (biased) mean and variance, as batch_norm does.
    """
    channels, _, _ = _per_channel("SyncBatchNorm", x, data_format)
    xd = x._data
    xp = backend.get_array_module(xd)
    channel_axis = _channel_axis("SyncBatchNorm", data_format, xd.ndim)
    x3 = _channel_view(xd, channel_axis)
    local = xp.concatenate(
        [channel_sums(xp, x3), _channel_dots(xp, x3, x3), xp.full(1, xd.size // channels, dtype=xd.dtype)]
    ).astype("float64")
    total = sum_across(local)
    count = float(total[-1])
    mean = total[:channels] / count
    var = xp.maximum(total[channels : 2 * channels] / count - mean * mean, 0.0)
    _update_running(running_mean, running_var, mean, var, momentum)
    rstd = (1.0 / xp.sqrt(var + epsilon)).astype(xd.dtype)
    centered = x3 - mean.astype(xd.dtype).reshape(1, -1, 1)
    return _batch_normalize(x, centered, rstd, channel_axis, True, weight, bias, sum_across, count)
