"""Linear (one fused matmul-plus-bias op) and dropout."""
from __future__ import annotations

from typing import Any, Optional

from ... import backend
from ...autograd.tensor import Tensor
from ...ops._util import matmul_arrays, result
from ...ops.creation import host_generator
from ._util import check_tensor

_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, name: Optional[str] = None) -> Tensor:
    """``x @ weight + bias`` with ``weight`` [in_features, out_features], as Paddle stores it.

    One op instead of two keeps the per-layer autograd cost to a single graph node.
    """
    xd, wd = x._data, weight._data
    if xd.dtype != wd.dtype:
        raise TypeError(f"linear: input dtype {xd.dtype} differs from weight dtype {wd.dtype}; "
                        f"convert the input with .astype('{wd.dtype}')")
    try:
        out = matmul_arrays(xd, wd)
    except ValueError:
        raise ValueError(f"linear: input shape {x.shape} does not fit weight shape {weight.shape}: the "
                         "last input axis must equal in_features") from None
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


def _keep_mask(xp: Any, shape: tuple, keep: float, dtype: Any) -> Any:
    """1 where an element survives (probability ``keep``), drawn from the seeded generators."""
    if xp is backend.numpy:
        draws = host_generator().random(shape)
    else:
        draws = xp.random.random(shape)
    return (draws < keep).astype(dtype)


def dropout(x: Tensor, p: float = 0.5, axis: Any = None, training: bool = True,
            mode: str = "upscale_in_train", name: Optional[str] = None) -> Tensor:
    """Zero each element with probability ``p`` during training.

    ``upscale_in_train`` (default) scales survivors by 1/(1-p) in training and is the identity
    in evaluation; ``downscale_in_infer`` keeps survivors as they are and scales by (1-p) in
    evaluation. ``axis`` drops whole slices: the mask varies only along the given axes.
    """
    check_tensor("dropout", "x", x)
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p!r}")
    if mode not in _DROPOUT_MODES:
        raise ValueError(f"dropout: mode must be one of {_DROPOUT_MODES}, got {mode!r}")
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
    if p == 1:
        mask = xp.zeros(mask_shape, dtype=xd.dtype)
    else:
        mask = _keep_mask(xp, mask_shape, 1.0 - p, xd.dtype)
        if mode == "upscale_in_train":
            mask *= 1.0 / (1.0 - p)
    return result(xd * mask, (x,), lambda g: (g * mask,))

