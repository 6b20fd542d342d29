"""Linear (one fused matmul-plus-bias op), bilinear, label_smooth and the dropout family."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import matmul_arrays, result
from ...ops.inplace import inplace_form
from ...core.random import device_uniform, host_generator
from ._util import check_tensor

__all__ = [
    "alpha_dropout",
    "bilinear",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "label_smooth",
    "linear",
]

_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
    """``x @ weight + bias`` with ``weight`` [in_features, out_features], as Paddle stores it.

    One op instead of two keeps the per-layer autograd cost to a single graph node.
    """
    try:
        xd, wd = x._data, weight._data
    except AttributeError:
        check_tensor("linear", "x", x)
        check_tensor("linear", "weight", weight)
    if xd.dtype != wd.dtype:
        raise TypeError(
            f"linear: input dtype {xd.dtype} differs from weight dtype {wd.dtype}; "
            f"convert the input with .astype('{wd.dtype}')"
        )
    try:
        out = matmul_arrays(xd, wd)
    except ValueError:
        raise ValueError(
            f"linear: input shape {x.shape} does not fit weight shape {weight.shape}: the "
            "last input axis must equal in_features"
        ) from None
    if bias is not None:
        out += bias._data
    out_features = wd.shape[1]

    def backward(g):
        gx = None if x.stop_gradient else matmul_arrays(g, wd.T)
        gw = None
        if not weight.stop_gradient:
            gw = matmul_arrays(xd.reshape(-1, wd.shape[0]).T, g.reshape(-1, out_features))
        if bias is None:
            return gx, gw
        return gx, gw, None if bias.stop_gradient else g.reshape(-1, out_features).sum(axis=0)

    return result(out, (x, weight) if bias is None else (x, weight, bias), backward)


def _keep_mask(xp: Any, shape: tuple, keep: float, dtype: Any, value: float = 1.0) -> Any:
    """``value`` where an element survives (probability ``keep``), else 0, in ``dtype``, drawn
    from the seeded generators.

    On the host each element takes 32 raw bits of the generator, compared with ``keep * 2**32``
    (``keep`` to within 2**-32): five times faster than drawing uniform floats, which made
    dropout's mask cost more than the matmuls around it.
    """
    if xp is backend.numpy:
        count = math.prod(shape)
        bits = host_generator().bit_generator.random_raw((count + 1) // 2).view(backend.numpy.uint32)[:count]
        kept = bits.reshape(shape) < min(int(keep * 2.0**32), 2**32 - 1)
    else:
        kept = device_uniform(shape) < keep
    return xp.multiply(kept, value, dtype=dtype)


def dropout_mask(xp: Any, shape: tuple, p: float, dtype: Any, upscale: bool = True) -> Any:
    """What training-mode dropout multiplies by: 0 for each element dropped (probability ``p``),
    else 1, or 1 / (1 - p) with ``upscale``. Fused ops that drop out draw their mask here, so they
    consume the seeded generators exactly as ``dropout`` would."""
    if p == 1:
        return xp.zeros(shape, dtype=dtype)
    return _keep_mask(xp, shape, 1.0 - p, dtype, 1.0 / (1.0 - p) if upscale else 1.0)


def _dropout(x: Tensor, p: float, axis: Any, training: bool, mode: str) -> Tensor:
    """The out-of-place dropout (the arguments checked already)."""
    xd = x._data
    if not training:
        if mode == "upscale_in_train" or p == 0:
            return x
        return result(xd * (1.0 - p), (x,), lambda g: (g * (1.0 - p),))
    if p == 0:
        return x
    xp = backend.get_array_module(xd)
    if axis is None:
        mask_shape = xd.shape
    else:
        axes = [axis] if isinstance(axis, int) else list(axis)
        axes = [a % xd.ndim for a in axes]
        mask_shape = tuple(n if i in axes else 1 for i, n in enumerate(xd.shape))
    mask = dropout_mask(xp, mask_shape, p, xd.dtype, mode == "upscale_in_train")
    return result(xd * mask, (x,), lambda g: (g * mask,))


_dropout_ = inplace_form(_dropout, "dropout")


def dropout(
    x: Tensor,
    p: float = 0.5,
    axis: Any = None,
    training: bool = True,
    inplace: bool = False,
    mode: str = "upscale_in_train",
    name: Optional[str] = None,
) -> Tensor:
    """Zero each element with probability ``p`` during training.

    ``upscale_in_train`` (default) scales survivors by 1/(1-p) in training and is the identity
    in evaluation; ``downscale_in_infer`` keeps survivors as they are and scales by (1-p) in
    evaluation. ``axis`` drops whole slices: the mask varies only along the given axes. With
    ``inplace`` x itself is updated (see :mod:`minidp.ops.inplace`), with or without ``axis``
    (Paddle 3.3.1 refuses ``axis`` there); ``p=0`` returns x untouched, as in Paddle.
    """
    check_tensor("dropout", "x", x)
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p!r}")
    if mode not in _DROPOUT_MODES:
        raise ValueError(f"dropout: mode must be one of {_DROPOUT_MODES}, got {mode!r}")
    if inplace and p != 0:
        return _dropout_(x, p, axis, training, mode)
    return _dropout(x, p, axis, training, mode)


def _feature_dropout(op: str, x: Tensor, p: float, training: bool, data_format: str, layouts: tuple) -> Tensor:
    """Dropout of whole channels: the mask varies along the batch and channel axes only."""
    check_tensor(op, "x", x)
    if data_format not in layouts:
        raise ValueError(f"{op}: data_format must be one of {layouts}, got {data_format!r}")
    if x.ndim != len(data_format):
        raise ValueError(f"{op}: expects a {len(data_format)}-D input ({data_format}), got shape {x.shape}")
    return dropout(x, p, [0, data_format.index("C")], training)


def dropout2d(
    x: Tensor, p: float = 0.5, training: bool = True, data_format: str = "NCHW", name: Optional[str] = None
) -> Tensor:
    """Zero whole channels of an [N, C, H, W] input with probability ``p`` (survivors scaled by 1/(1-p))."""
    return _feature_dropout("dropout2d", x, p, training, data_format, ("NCHW", "NHWC"))


def dropout3d(
    x: Tensor, p: float = 0.5, training: bool = True, data_format: str = "NCDHW", name: Optional[str] = None
) -> Tensor:
    """Zero whole channels of an [N, C, D, H, W] input with probability ``p``."""
    return _feature_dropout("dropout3d", x, p, training, data_format, ("NCDHW", "NDHWC"))


_SELU_SATURATION = -1.0507009873554805 * 1.6732632423543772


def _alpha_dropout(op: str, x: Tensor, p: float, training: bool, mask_shape: tuple) -> Tensor:
    """Set dropped elements to SELU's saturation value, then rescale so that a zero-mean,
    unit-variance input keeps its mean and variance (self-normalising networks)."""
    check_tensor(op, "x", x)
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"{op}: p must be a probability in [0, 1], got {p!r}")
    if not training or p == 0:
        return x
    xd = x._data
    xp = backend.get_array_module(xd)
    if p == 1:
        return result(xp.zeros_like(xd), (x,), lambda g: (g * 0,))
    keep = _keep_mask(xp, mask_shape, 1.0 - p, xd.dtype)
    a = ((1 - p) * (1 + p * _SELU_SATURATION**2)) ** -0.5
    b = -a * _SELU_SATURATION * p
    scaled_keep = a * keep
    out = xd * scaled_keep + (a * _SELU_SATURATION * (1 - keep) + b)
    return result(out.astype(xd.dtype, copy=False), (x,), lambda g: (g * scaled_keep,))


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = True, name: Optional[str] = None) -> Tensor:
    """Dropout for SELU networks: keeps the activations' mean and variance (identity in evaluation)."""
    check_tensor("alpha_dropout", "x", x)
    return _alpha_dropout("alpha_dropout", x, p, training, tuple(x._data.shape))


def feature_alpha_dropout(x: Tensor, p: float = 0.5, training: bool = True, name: Optional[str] = None) -> Tensor:
    """Alpha dropout of whole channels of an [N, C, ...] input."""
    check_tensor("feature_alpha_dropout", "x", x)
    if x.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: expects an input [N, C, ...], got shape {x.shape}")
    shape = tuple(x._data.shape[:2]) + (1,) * (x.ndim - 2)
    return _alpha_dropout("feature_alpha_dropout", x, p, training, shape)


def bilinear(
    x1: Tensor, x2: Tensor, weight: Tensor, bias: Optional[Tensor] = None, name: Optional[str] = None
) -> Tensor:
    """out[n, o] = sum_ij x1[n, i] weight[o, i, j] x2[n, j] (+ bias[0, o])."""
    check_tensor("bilinear", "x1", x1)
    check_tensor("bilinear", "x2", x2)
    check_tensor("bilinear", "weight", weight)
    out_f, in1, in2 = weight.shape
    if x1.ndim != 2 or x2.ndim != 2 or x1.shape[1] != in1 or x2.shape[1] != in2 or x1.shape[0] != x2.shape[0]:
        raise ValueError(
            f"bilinear: x1 [N, {in1}] and x2 [N, {in2}] must fit weight {weight.shape}, got {x1.shape} and {x2.shape}"
        )
    mixed = ops.matmul(x1, ops.reshape(ops.transpose(weight, [1, 0, 2]), [in1, out_f * in2]))
    out = (ops.reshape(mixed, [-1, out_f, in2]) * ops.unsqueeze(x2, 1)).sum(axis=-1)
    return out if bias is None else out + bias


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an [N, C, L] (or [C, L]) input with probability ``p``.

    ``inplace=True`` is ignored with a warning, as Paddle 3.3.1 does: the result is a new tensor.
    """
    check_tensor("dropout1d", "input", input)
    if input.ndim not in (2, 3):
        raise ValueError(f"dropout1d: expects a 2-D or 3-D input, got shape {input.shape}")
    if inplace:
        warnings.warn("dropout1d: inplace=True is not supported and is ignored (as in Paddle)", stacklevel=2)
    return dropout(input, p, list(range(input.ndim - 1)), training)


def label_smooth(
    label: Tensor, prior_dist: Optional[Tensor] = None, epsilon: float = 0.1, name: Optional[str] = None
) -> Tensor:
    """(1 - epsilon) * label + epsilon * prior, the prior being uniform over the last axis by default."""
    check_tensor("label_smooth", "label", label)
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"label_smooth: epsilon must lie in [0, 1], got {epsilon!r}")
    prior = 1.0 / label.shape[-1] if prior_dist is None else prior_dist
    return label * (1.0 - epsilon) + prior * epsilon
