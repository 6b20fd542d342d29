"""Connectionist temporal classification loss: the forward-backward recursion in log space.

The op takes unnormalised logits, as Paddle's warp-ctc kernel does, and normalises them with a
log-softmax itself. The gradient with respect to the logits is softmax(logits) minus the
posterior of each class at each step, which the alpha and beta passes give directly.
"""

from __future__ import annotations

from typing import Any

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_reduction, check_tensor

__all__ = [
    "ctc_loss",
]


def _shifted(xp: Any, v: Any, k: int) -> Any:
    """``v`` moved k places later (k < 0: earlier), -inf filling the gap."""
    gap = xp.full(abs(k), -xp.inf, dtype=v.dtype)
    return xp.concatenate([gap, v[:-k]]) if k > 0 else xp.concatenate([v[-k:], gap])


def _one_sequence(xp: Any, logp: Any, label: Any, blank: int) -> tuple:
    """-log p(label | logp) for one sequence logp [T, C], and d(loss)/d(logp) as posteriors [T, C]."""
    steps, classes = logp.shape
    ext = xp.full(2 * len(label) + 1, blank, dtype="int64")
    ext[1::2] = label
    size = ext.shape[0]
    skip = xp.zeros(size, dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = logp[:, ext]
    alpha = xp.full((steps, size), -xp.inf)
    beta = xp.full((steps, size), -xp.inf)
    alpha[0, :2] = emit[0, :2]
    for t in range(1, steps):
        prev = alpha[t - 1]
        total = xp.logaddexp(prev, _shifted(xp, prev, 1))
        total = xp.logaddexp(total, xp.where(skip, _shifted(xp, prev, 2), -xp.inf))
        alpha[t] = total + emit[t]
    beta[-1, -2:] = emit[-1, -2:]
    skip_ahead = xp.concatenate([skip[2:], xp.zeros(2, dtype=bool)])
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        total = xp.logaddexp(nxt, _shifted(xp, nxt, -1))
        total = xp.logaddexp(total, xp.where(skip_ahead, _shifted(xp, nxt, -2), -xp.inf))
        beta[t] = total + emit[t]
    log_likelihood = xp.logaddexp(alpha[-1, -1], alpha[-1, -2] if size > 1 else -xp.inf)
    if not xp.isfinite(log_likelihood):
        return 0.0, xp.zeros_like(logp)
    posterior = xp.exp(alpha + beta - emit - log_likelihood)
    per_class = xp.zeros((steps, classes), dtype=logp.dtype)
    for s in range(size):
        per_class[:, int(ext[s])] += posterior[:, s]
    return float(-log_likelihood), per_class


def ctc_loss(
    log_probs: Tensor,
    labels: Tensor,
    input_lengths: Tensor,
    label_lengths: Tensor,
    blank: int = 0,
    reduction: str = "mean",
    norm_by_times: bool = False,
    zero_infinity: bool = False,
) -> Tensor:
    """CTC loss of ``log_probs`` [T, N, C] (unnormalised scores; a log-softmax is applied inside, as
    Paddle's warp-ctc does) against padded ``labels`` [N, L].

    'mean' divides each sequence's loss by its label length, then averages over the batch;
    'none' returns [N]. A label that no alignment of its input can produce costs 0 (Paddle's
    warp-ctc result; ``zero_infinity`` is accepted for that reason). ``norm_by_times`` divides
    each sequence's gradient by its input length.
    """
    check_reduction("ctc_loss", reduction)
    for arg, value in (
        ("log_probs", log_probs),
        ("labels", labels),
        ("input_lengths", input_lengths),
        ("label_lengths", label_lengths),
    ):
        check_tensor("ctc_loss", arg, value)
    scores = log_probs._data
    if scores.ndim != 3 or labels.ndim != 2 or labels.shape[0] != scores.shape[1]:
        raise ValueError(
            f"ctc_loss: log_probs must be [T, N, C] and labels [N, L], got {log_probs.shape} and {labels.shape}"
        )
    xp = backend.get_array_module(scores)
    steps, batch, classes = scores.shape
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must lie in [0, {classes}), got {blank}")
    in_lengths = [int(v) for v in input_lengths._data.reshape(-1).tolist()]
    out_lengths = [int(v) for v in label_lengths._data.reshape(-1).tolist()]
    if len(in_lengths) != batch or len(out_lengths) != batch or max(in_lengths) > steps:
        raise ValueError(
            f"ctc_loss: input_lengths and label_lengths need one value per sequence ({batch}), input "
            f"lengths at most {steps}"
        )
    shifted = scores - scores.max(axis=2, keepdims=True)
    logp = shifted - xp.log(xp.exp(shifted).sum(axis=2, keepdims=True))
    losses = xp.zeros(batch, dtype=scores.dtype)
    grad = xp.zeros_like(scores)
    ids = labels._data
    for b in range(batch):
        length = in_lengths[b]
        value, posterior = _one_sequence(xp, logp[:length, b].astype("float64"), ids[b, : out_lengths[b]], blank)
        losses[b] = value
        if value:
            softmax = xp.exp(logp[:length, b])
            grad[:length, b] = (softmax - posterior) / (length if norm_by_times else 1)
    if reduction == "none":
        data, scale = losses, None
    elif reduction == "sum":
        data, scale = losses.sum(), xp.ones(batch, dtype=scores.dtype)
    else:
        divisors = xp.maximum(xp.asarray(out_lengths, dtype=scores.dtype), 1)
        data, scale = (losses / divisors).mean(), 1.0 / (divisors * batch)

    def backward(g):
        weight = g if scale is None else g * scale
        return (grad * weight.reshape(1, batch, 1),)

    return result(data, (log_probs,), backward)
