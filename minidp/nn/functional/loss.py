"""Loss functions, each one fused op whose backward goes straight to the input gradient.

Cross-entropy is log-softmax and negative log-likelihood in a single op: the backward of the
pair collapses to ``softmax(x) - target`` (scaled), which is both cheaper and more accurate than
differentiating the two steps separately.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ...core import backend, threads
from ...core.tensor import Tensor
from ...core.op_util import result, scatter_add_along, unbroadcast, wrap
from ._util import check_reduction, check_tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "log_loss",
    "mse_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax_with_cross_entropy",
    "square_error_cost",
]


def _float_pair(op: str, input: Tensor, label: Tensor) -> tuple:
    """The input and label arrays with one floating dtype (integer labels are converted)."""
    check_tensor(op, "input", input)
    check_tensor(op, "label", label)
    xd, yd = input._data, label._data
    if xd.dtype != yd.dtype:
        if backend.is_floating(yd.dtype) and backend.is_floating(xd.dtype):
            raise TypeError(
                f"{op}: input dtype {xd.dtype} differs from label dtype {yd.dtype}; "
                f"convert the label with .astype('{xd.dtype}')"
            )
        yd = yd.astype(xd.dtype)
    return xd, yd


def _reduce(loss: Any, reduction: str) -> tuple:
    """The reduced loss and the factor d(reduced)/d(element) (None for 'none').

    ``'batchmean'`` (kl_div only) is the sum divided by the length of the first axis.
    """
    if reduction == "batchmean":
        batch = loss.shape[0] if loss.ndim else 1
        return loss.sum() / batch, 1.0 / batch
    if reduction == "mean":
        return loss.mean(), 1.0 / max(loss.size, 1)
    if reduction == "sum":
        return loss.sum(), 1.0
    return loss, None


def _elementwise_loss(input: Tensor, label: Tensor, loss: Any, d_input: Any, d_label: Any, reduction: str) -> Tensor:
    """Build a loss op from its elementwise values and their derivatives w.r.t. input and label."""
    data, scale = _reduce(loss, reduction)
    in_shape, label_shape = input._data.shape, label._data.shape

    def backward(g):
        g = g if scale is None else g * scale
        return (
            None if input.stop_gradient else unbroadcast(g * d_input, in_shape),
            None if label.stop_gradient else unbroadcast(g * d_label, label_shape),
        )

    return result(data, (input, label), backward)


def mse_loss(input: Tensor, label: Tensor, reduction: str = "mean", name: Optional[str] = None) -> Tensor:
    """Squared error (input - label)^2, averaged (default), summed or per element."""
    check_reduction("mse_loss", reduction)
    xd, yd = _float_pair("mse_loss", input, label)
    diff = xd - yd
    twice = 2 * diff
    return _elementwise_loss(input, label, diff * diff, twice, -twice, reduction)


def l1_loss(input: Tensor, label: Tensor, reduction: str = "mean", name: Optional[str] = None) -> Tensor:
    """Absolute error |input - label|; the gradient at 0 is 0."""
    check_reduction("l1_loss", reduction)
    xd, yd = _float_pair("l1_loss", input, label)
    diff = xd - yd
    xp = backend.get_array_module(diff)
    sign = xp.sign(diff)
    return _elementwise_loss(input, label, xp.abs(diff), sign, -sign, reduction)


def binary_cross_entropy_with_logits(
    logit: Tensor,
    label: Tensor,
    weight: Optional[Tensor] = None,
    reduction: str = "mean",
    pos_weight: Optional[Tensor] = None,
    name: Optional[str] = None,
) -> Tensor:
    """Sigmoid plus binary cross-entropy, computed from logits without overflow.

    loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x), times ``weight``.
    """
    check_reduction("binary_cross_entropy_with_logits", reduction)
    xd, yd = _float_pair("binary_cross_entropy_with_logits", logit, label)
    xp = backend.get_array_module(xd)
    e = xp.exp(-xp.abs(xd))
    softplus_neg = xp.log1p(e) + xp.maximum(-xd, 0)
    sigmoid = xp.where(xd >= 0, 1 / (1 + e), e / (1 + e))
    if pos_weight is None:
        loss = (1 - yd) * xd + softplus_neg
        d_logit = sigmoid - yd
        d_label = -xd
    else:
        pw = pos_weight._data
        scale = 1 + (pw - 1) * yd
        loss = (1 - yd) * xd + scale * softplus_neg
        d_logit = (1 - yd) + scale * (sigmoid - 1)
        d_label = -xd + (pw - 1) * softplus_neg
    if weight is not None:
        w = weight._data
        loss, d_logit, d_label = loss * w, d_logit * w, d_label * w
    return _elementwise_loss(logit, label, loss, d_logit, d_label, reduction)


def _class_weight(op: str, weight: Optional[Tensor], classes: int, dtype: Any) -> Any:
    if weight is None:
        return None
    check_tensor(op, "weight", weight)
    if weight.shape != [classes]:
        raise ValueError(f"{op}: weight must have one value per class, shape [{classes}], got {weight.shape}")
    return weight._data.astype(dtype, copy=False)


def _axis_shape(ndim: int, axis: int, n: int) -> tuple:
    return tuple(n if i == axis else 1 for i in range(ndim))


def _hard_label_nll(
    op: str,
    logp: Any,
    label: Any,
    axis: int,
    weight: Any,
    ignore_index: int,
    reduction: str,
    mean_over_all: bool = False,
) -> tuple:
    """-logp[label] per sample (times the class weight), reduced as Paddle reduces it.

    ``logp`` is the log-probabilities array, or ``(shape, dtype, pick)`` where ``pick(index)``
    returns them at ``index`` only (along ``axis``): cross_entropy then never forms them all.
    The mean divides by the summed weight of the samples that are not ignored (their count
    without weights), or with ``mean_over_all`` by the number of all samples. Returns the loss
    array, a function mapping the upstream gradient to d(loss)/d(logp[label]) per sample
    (shaped as ``index``), and ``index``: the labels with ``axis`` kept, ignored ones set to 0.
    """
    if isinstance(logp, tuple):
        shape, dtype, pick = logp
    else:
        shape, dtype = logp.shape, logp.dtype
        xp_logp = backend.get_array_module(logp)

        def pick(index):
            return xp_logp.take_along_axis(logp, index, axis=axis)

    xp = backend.get_array_module(label)
    if label.dtype.kind not in "iu":
        raise TypeError(
            f"{op}: hard labels must be integers, got dtype {label.dtype}; use "
            "label.astype('int64'), or soft_label=True for probabilities"
        )
    classes = shape[axis]
    expected = shape[:axis] + (1,) + shape[axis + 1 :]
    if label.ndim == len(shape) - 1:
        label_k = xp.expand_dims(label, axis)
    else:
        label_k = label
    if label_k.shape != expected:
        raise ValueError(
            f"{op}: label shape {list(label.shape)} does not fit input shape "
            f"{list(shape)}; expected {list(expected[:axis] + expected[axis + 1 :])} "
            f"or {list(expected)}"
        )
    valid = label_k != ignore_index
    safe = xp.where(valid, label_k, 0)
    if safe.size and (int(safe.min()) < 0 or int(safe.max()) >= classes):
        raise ValueError(
            f"{op}: labels must lie in [0, {classes}) or equal ignore_index={ignore_index}, "
            f"got values in [{int(safe.min())}, {int(safe.max())}]"
        )
    coef = valid.astype(dtype)
    if weight is not None:
        coef = coef * weight[safe]
    loss = -pick(safe) * coef
    if reduction == "none":
        data, denom = loss.reshape(label.shape), None
    elif reduction == "sum":
        data, denom = loss.sum(), None
    else:
        denom = xp.asarray(coef.size, dtype=coef.dtype) if mean_over_all else coef.sum()
        denom = denom + (denom == 0)
        data = loss.sum() / denom

    def grad_at_label(g):
        if reduction == "none":
            g = g.reshape(label_k.shape)
        elif denom is not None:
            g = g / denom
        return -g * coef

    return data, grad_at_label, safe


def _one_hot_grad(xp: Any, shape: tuple, axis: int, index: Any, per_sample: Any) -> Any:
    """The gradient of an input of ``shape`` that receives ``per_sample`` at ``index`` along
    ``axis`` (one entry per sample) and 0 elsewhere."""
    classes = shape[axis]
    classes_along_axis = xp.arange(classes).reshape(_axis_shape(len(shape), axis, classes))
    return (classes_along_axis == index) * per_sample


def _soft_label_nll(op: str, logp: Any, target: Any, axis: int, weight: Any, reduction: str) -> tuple:
    """-sum(target * logp) per sample, times sum(target * weight) when weighted, reduced.

    Returns the loss, d(loss)/d(logp) and d(loss)/d(target) (the latter without weights only).
    """
    if target.shape != logp.shape:
        raise ValueError(f"{op}: soft labels must have the input's shape {list(logp.shape)}, got {list(target.shape)}")
    per_sample = -(target * logp).sum(axis=axis, keepdims=True)
    sample_weight = None
    if weight is not None:
        sample_weight = (target * weight.reshape(_axis_shape(logp.ndim, axis, weight.size))).sum(
            axis=axis, keepdims=True
        )
        per_sample = per_sample * sample_weight
    if reduction == "none":
        data, denom = per_sample, None
    elif reduction == "sum":
        data, denom = per_sample.sum(), None
    else:
        denom = per_sample.size if sample_weight is None else sample_weight.sum()
        denom = denom + (denom == 0)
        data = per_sample.sum() / denom

    def upstream(g):
        if denom is not None:
            g = g / denom
        return g if sample_weight is None else g * sample_weight

    return data, (lambda g: -target * upstream(g)), (lambda g: -logp * upstream(g))


def _smoothed_target(xd: Any, label: Any, axis: int, epsilon: float) -> Any:
    """The soft target (1 - epsilon) * one_hot(label) + epsilon / C along ``axis``."""
    xp = backend.get_array_module(xd)
    classes = xd.shape[axis]
    if label.dtype.kind in "iu":
        if label.ndim == xd.ndim:
            label = label.squeeze(axis)
        label = (xp.expand_dims(label, axis) == xp.arange(classes).reshape(_axis_shape(xd.ndim, axis, classes))).astype(
            xd.dtype
        )
    return (1.0 - epsilon) * label.astype(xd.dtype, copy=False) + epsilon / classes


def cross_entropy(
    input: Tensor,
    label: Tensor,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    soft_label: bool = False,
    axis: int = -1,
    use_softmax: bool = True,
    label_smoothing: float = 0.0,
    name: Optional[str] = None,
) -> Tensor:
    """Softmax cross-entropy over ``axis`` with hard labels ([N] or [N, 1]) or soft labels.

    ``weight`` gives each class a weight; samples whose label is ``ignore_index`` count for
    nothing in the loss. The mean divides by the summed weight of the other samples, or their
    number without weights, except as Paddle 3 does: an unweighted mean with a negative
    ``ignore_index`` (such as the default -100) divides by the number of all samples, ignored
    ones included (``nll_loss`` divides by the samples kept in every case). With
    ``use_softmax=False`` the input is taken to be probabilities already. With
    ``reduction='none'`` a hard-label loss has the label's shape; a soft-label one keeps
    ``axis`` with length 1.

    ``label_smoothing`` (eps > 0) turns the label into the soft label (1 - eps) * one_hot + eps / C
    (integer labels are one-hot encoded first), as Paddle does.
    """
    check_reduction("cross_entropy", reduction)
    check_tensor("cross_entropy", "input", input)
    check_tensor("cross_entropy", "label", label)
    xd = input._data
    if xd.ndim == 0:
        raise ValueError("cross_entropy: input must have a class axis, got a 0-d tensor")
    axis = axis % xd.ndim
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got {label_smoothing!r}")
    if label_smoothing > 0.0:
        label = wrap(_smoothed_target(xd, label._data, axis, label_smoothing))
        soft_label = True
    xp = backend.get_array_module(xd)
    w = _class_weight("cross_entropy", weight, xd.shape[axis], xd.dtype)
    if use_softmax and not soft_label:
        return _softmax_hard_label_loss(input, label._data, axis, w, ignore_index, reduction)
    if use_softmax:
        shifted = xd - xd.max(axis=axis, keepdims=True)
        exps = xp.exp(shifted)
        totals = exps.sum(axis=axis, keepdims=True)
        logp = shifted - xp.log(totals)
    else:
        logp = xp.log(xd)
    if soft_label:
        if weight is not None and not label.stop_gradient:
            raise ValueError(
                "cross_entropy: gradients w.r.t. soft labels are supported only without a "
                "class weight; detach the label or drop weight"
            )
        _, target = _float_pair("cross_entropy", input, label)
        data, grad_logp, grad_target = _soft_label_nll("cross_entropy", logp, target, axis, w, reduction)
        parents = (input, label)
    else:
        data, grad_at_label, index = _hard_label_nll(
            "cross_entropy",
            logp,
            label._data,
            axis,
            w,
            ignore_index,
            reduction,
            mean_over_all=w is None and ignore_index < 0,
        )
        parents = (input,)

        def grad_logp(g):
            return _one_hot_grad(xp, xd.shape, axis, index, grad_at_label(g))

    def backward(g):
        d = grad_logp(g)
        if use_softmax:
            gx = d - (exps / totals) * d.sum(axis=axis, keepdims=True)
        else:
            gx = d / xd
        if not soft_label:
            return (gx,)
        return gx, None if label.stop_gradient else grad_target(g)

    return result(data, parents, backward)


def _softmax_hard_label_loss(
    input: Tensor, label: Any, axis: int, weight: Any, ignore_index: int, reduction: str
) -> Tensor:
    """cross_entropy of logits with integer labels, without forming all the log-probabilities:
    the loss needs them only at the labels, and the gradient is softmax * (-s) plus s at each
    label (s the per-sample gradient there): one pass over the logits and a scatter. The passes
    over the logits run on ranges of the first axis (when ``axis`` is another one) over
    :mod:`minidp.core.threads`."""
    xd = input._data
    xp = backend.get_array_module(xd)
    rows = xd.shape[0] if axis > 0 else 1

    def along_rows(start: int, stop: int) -> slice:
        return slice(start, stop) if axis > 0 else slice(None)

    reduced_shape = xd.shape[:axis] + (1,) + xd.shape[axis + 1 :]
    peak, totals, exps = xp.empty(reduced_shape, xd.dtype), xp.empty(reduced_shape, xd.dtype), xp.empty_like(xd)

    def softmax_terms(start: int, stop: int) -> None:
        part = along_rows(start, stop)
        xd[part].max(axis=axis, keepdims=True, out=peak[part])
        xp.subtract(xd[part], peak[part], out=exps[part])
        xp.exp(exps[part], out=exps[part])
        exps[part].sum(axis=axis, keepdims=True, out=totals[part])

    threads.for_each_chunk(xd, rows, softmax_terms)
    log_norm = peak + xp.log(totals)
    data, grad_at_label, index = _hard_label_nll(
        "cross_entropy",
        (xd.shape, xd.dtype, lambda at: xp.take_along_axis(xd, at, axis=axis) - log_norm),
        label,
        axis,
        weight,
        ignore_index,
        reduction,
        mean_over_all=weight is None and ignore_index < 0,
    )

    def backward(g):
        per_sample = grad_at_label(g)
        scale = -per_sample / totals
        gx = xp.empty(xd.shape, xp.result_type(exps, scale))

        def softmax_times_scale(start: int, stop: int) -> None:
            part = along_rows(start, stop)
            xp.multiply(exps[part], scale[part], out=gx[part])

        threads.for_each_chunk(xd, rows, softmax_times_scale)
        scatter_add_along(xp, gx, index, per_sample, axis)
        return (gx,)

    return result(data, (input,), backward)


def nll_loss(
    input: Tensor,
    label: Tensor,
    weight: Optional[Tensor] = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` [N, C, ...] at integer ``label`` [N, ...]."""
    check_reduction("nll_loss", reduction)
    check_tensor("nll_loss", "input", input)
    check_tensor("nll_loss", "label", label)
    xd = input._data
    if xd.ndim < 2:
        raise ValueError(f"nll_loss: input must be [N, C, ...], got shape {input.shape}")
    w = _class_weight("nll_loss", weight, xd.shape[1], xd.dtype)
    data, grad_at_label, index = _hard_label_nll("nll_loss", xd, label._data, 1, w, ignore_index, reduction)
    xp = backend.get_array_module(xd)
    return result(data, (input,), lambda g: (_one_hot_grad(xp, xd.shape, 1, index, grad_at_label(g)),))


def softmax_with_cross_entropy(
    logits: Tensor,
    label: Tensor,
    soft_label: bool = False,
    ignore_index: int = -100,
    numeric_stable_mode: bool = True,
    return_softmax: bool = False,
    axis: int = -1,
) -> Any:
    """Paddle's older cross-entropy: per-sample losses that keep ``axis`` with length 1.

    Hard labels have the logits' shape with 1 along ``axis`` (a label without that axis is
    accepted too); with ``return_softmax`` the softmax of the logits comes back as well.
    """
    check_tensor("softmax_with_cross_entropy", "logits", logits)
    check_tensor("softmax_with_cross_entropy", "label", label)
    xd = logits._data
    axis = axis % max(xd.ndim, 1)
    if not soft_label and label._data.ndim == xd.ndim - 1:
        label = wrap(backend.get_array_module(xd).expand_dims(label._data, axis))
    loss = cross_entropy(logits, label, ignore_index=ignore_index, reduction="none", soft_label=soft_label, axis=axis)
    if not return_softmax:
        return loss
    shifted = xd - xd.max(axis=axis, keepdims=True)
    exps = backend.get_array_module(xd).exp(shifted)
    return loss, wrap(exps / exps.sum(axis=axis, keepdims=True))


def binary_cross_entropy(
    input: Tensor, label: Tensor, weight: Optional[Tensor] = None, reduction: str = "mean", name: Optional[str] = None
) -> Tensor:
    """-(y log x + (1 - y) log(1 - x)) for probabilities x, each log floored at -100 as in Paddle."""
    check_reduction("binary_cross_entropy", reduction)
    xd, yd = _float_pair("binary_cross_entropy", input, label)
    xp = backend.get_array_module(xd)
    with backend.numpy.errstate(divide="ignore"):
        log_x = xp.maximum(xp.log(xd), -100.0)
        log_not_x = xp.maximum(xp.log1p(-xd), -100.0)
    loss = -(yd * log_x + (1 - yd) * log_not_x)
    d_input = (xd - yd) / xp.maximum(xd * (1 - xd), 1e-12)
    d_label = log_not_x - log_x
    if weight is not None:
        check_tensor("binary_cross_entropy", "weight", weight)
        w = weight._data
        loss, d_input, d_label = loss * w, d_input * w, d_label * w
    return _elementwise_loss(input, label, loss, d_input, d_label, reduction)


def smooth_l1_loss(
    input: Tensor,
    label: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    is_huber: bool = True,
    name: Optional[str] = None,
) -> Tensor:
    """Quadratic for |d| < delta, linear beyond (d = input - label).

    Huber form (default): 0.5 d^2, else delta (|d| - delta / 2). With ``is_huber=False`` the
    smooth-L1 form: 0.5 d^2 / delta, else |d| - delta / 2.
    """
    check_reduction("smooth_l1_loss", reduction)
    if not delta > 0:
        raise ValueError(f"smooth_l1_loss: delta must be positive, got {delta!r}")
    xd, yd = _float_pair("smooth_l1_loss", input, label)
    xp = backend.get_array_module(xd)
    diff = xd - yd
    size = xp.abs(diff)
    inside = size < delta
    scale = 1.0 if is_huber else 1.0 / delta
    if is_huber:
        loss = xp.where(inside, 0.5 * diff * diff, delta * (size - 0.5 * delta))
        slope = xp.where(inside, diff, delta * xp.sign(diff))
    else:
        loss = xp.where(inside, 0.5 * diff * diff * scale, size - 0.5 * delta)
        slope = xp.where(inside, diff * scale, xp.sign(diff))
    return _elementwise_loss(input, label, loss, slope, -slope, reduction)


def kl_div(
    input: Tensor, label: Tensor, reduction: str = "mean", log_target: bool = False, name: Optional[str] = None
) -> Tensor:
    """Kullback-Leibler divergence of ``label`` from log-probabilities ``input``.

    Per element y (log y - x), and 0 where y <= 0 (Paddle's rule); with ``log_target`` the label
    holds log-probabilities: exp(y) (y - x). ``reduction='batchmean'`` divides the sum by the
    batch size, the form that matches the mathematical definition.
    """
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"kl_div: reduction must be 'mean', 'sum', 'none' or 'batchmean', got {reduction!r}")
    xd, yd = _float_pair("kl_div", input, label)
    xp = backend.get_array_module(xd)
    if log_target:
        p = xp.exp(yd)
        loss = p * (yd - xd)
        d_input, d_label = -p, p * (yd - xd + 1)
    else:
        positive = yd > 0
        log_y = xp.log(xp.where(positive, yd, 1))
        loss = xp.where(positive, yd * (log_y - xd), 0)
        d_input = -yd * positive
        d_label = xp.where(positive, log_y - xd + 1, 0)
    return _elementwise_loss(input, label, loss, d_input, d_label, reduction)


def square_error_cost(input: Tensor, label: Tensor) -> Tensor:
    """(input - label)^2 per element, unreduced."""
    return mse_loss(input, label, reduction="none")


def log_loss(input: Tensor, label: Tensor, epsilon: float = 0.0001, name: Optional[str] = None) -> Tensor:
    """-y log(x + eps) - (1 - y) log(1 - x + eps) per element, unreduced."""
    xd, yd = _float_pair("log_loss", input, label)
    xp = backend.get_array_module(xd)
    log_x, log_not_x = xp.log(xd + epsilon), xp.log(1 - xd + epsilon)
    loss = -yd * log_x - (1 - yd) * log_not_x
    d_input = -yd / (xd + epsilon) + (1 - yd) / (1 - xd + epsilon)
    return _elementwise_loss(input, label, loss, d_input, log_not_x - log_x, "none")


def soft_margin_loss(input: Tensor, label: Tensor, reduction: str = "mean", name: Optional[str] = None) -> Tensor:
    """log(1 + exp(-y x)) for labels y in {1, -1}."""
    check_reduction("soft_margin_loss", reduction)
    xd, yd = _float_pair("soft_margin_loss", input, label)
    xp = backend.get_array_module(xd)
    z = -yd * xd
    loss = xp.log1p(xp.exp(-xp.abs(z))) + xp.maximum(z, 0)
    sig = 1 / (1 + xp.exp(-z))
    return _elementwise_loss(input, label, loss, -yd * sig, -xd * sig, reduction)


def hinge_embedding_loss(
    input: Tensor, label: Tensor, margin: float = 1.0, reduction: str = "mean", name: Optional[str] = None
) -> Tensor:
    """x where the label is 1, max(0, margin - x) where it is -1 (other labels count 0)."""
    check_reduction("hinge_embedding_loss", reduction)
    xd, yd = _float_pair("hinge_embedding_loss", input, label)
    xp = backend.get_array_module(xd)
    positive, negative = yd == 1, yd == -1
    gap = margin - xd
    loss = xp.where(positive, xd, 0) + xp.where(negative & (gap > 0), gap, 0)
    d_input = positive.astype(xd.dtype) - (negative & (gap > 0))
    return _elementwise_loss(input, label, loss, d_input, xp.zeros((), xd.dtype), reduction)


def poisson_nll_loss(
    input: Tensor,
    label: Tensor,
    log_input: bool = True,
    full: bool = False,
    epsilon: float = 1e-08,
    reduction: str = "mean",
    name: Optional[str] = None,
) -> Tensor:
    """Negative log-likelihood of a Poisson target: exp(x) - y x for a log-rate x (default), or
    x - y log(x + epsilon) for a rate x; ``full`` adds Stirling's term for targets above 1."""
    check_reduction("poisson_nll_loss", reduction)
    if not epsilon > 0:
        raise ValueError(f"poisson_nll_loss: epsilon must be positive, got {epsilon!r}")
    xd, yd = _float_pair("poisson_nll_loss", input, label)
    xp = backend.get_array_module(xd)
    if log_input:
        rate = xp.exp(xd)
        loss, d_input, d_label = rate - yd * xd, rate - yd, -xd
    else:
        log_rate = xp.log(xd + epsilon)
        loss, d_input, d_label = xd - yd * log_rate, 1 - yd / (xd + epsilon), -log_rate
    if full:
        above = yd > 1
        safe = xp.where(above, yd, 1)
        loss = loss + xp.where(above, safe * xp.log(safe) - safe + 0.5 * xp.log(2 * math.pi * safe), 0)
        d_label = d_label + xp.where(above, xp.log(safe) + 0.5 / safe, 0)
    return _elementwise_loss(input, label, loss, d_input, d_label, reduction)
