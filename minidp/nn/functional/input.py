"""Integer inputs: embedding lookup (rows of a table picked by ids, the gradient scattered back),
one_hot, sequence_mask and gather_tree."""

from __future__ import annotations

from typing import Any, Optional

from ...core import backend
from ...core.tensor import Tensor
from ...core.op_util import result
from ._util import check_tensor

__all__ = [
    "embedding",
    "gather_tree",
    "one_hot",
    "sequence_mask",
]


def embedding(
    x: Tensor,
    weight: Tensor,
    padding_idx: Optional[int] = None,
    max_norm: Optional[float] = None,
    norm_type: float = 2.0,
    sparse: bool = False,
    scale_grad_by_freq: bool = False,
    name: Optional[str] = None,
) -> Tensor:
    """``weight[x]``: one row of ``weight`` [num_embeddings, dim] per id in ``x``.

    Ids equal to ``padding_idx`` give zero rows and send no gradient. With ``max_norm`` the
    rows looked up are first rescaled in place (outside autograd) so that their ``norm_type``
    norm is at most ``max_norm``; ``scale_grad_by_freq`` divides each row's gradient by the
    number of times its id occurs in ``x``. ``sparse`` is accepted for Paddle compatibility;
    the gradient is always a dense array shaped like ``weight``.
    """
    check_tensor("embedding", "x", x)
    check_tensor("embedding", "weight", weight)
    ids, table = x._data, weight._data
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}; use .astype('int64')")
    rows = table.shape[0]
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        raise ValueError(f"embedding: ids must lie in [0, {rows}), got values in [{int(ids.min())}, {int(ids.max())}]")
    if padding_idx is not None:
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
        if not 0 <= padding_idx < rows:
            raise ValueError(f"embedding: padding_idx must lie in [-{rows}, {rows}), got {padding_idx}")
    xp = backend.get_array_module(table)
    if max_norm is not None:
        used = xp.unique(ids)
        norms = (xp.abs(table[used]) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(table.dtype)
        table[used] *= scale[:, None]
    out = table[ids]
    keep = None
    if padding_idx is not None:
        keep = (ids != padding_idx)[..., None]
        out *= keep

    def backward(g):
        if keep is not None:
            g = g * keep
        if scale_grad_by_freq:
            counts = xp.bincount(ids.reshape(-1), minlength=rows)
            g = g / counts[ids][..., None]
        grad = xp.zeros_like(table)
        xp.add.at(grad, ids.reshape(-1), g.reshape(-1, table.shape[1]))
        return (grad,)

    return result(out, (weight,), backward)


def one_hot(x: Tensor, num_classes: int = -1, name: Optional[str] = None) -> Tensor:
    """float32 one-hot vectors of length ``num_classes`` (by default max(x) + 1) for integer ids ``x``;
    the result has a new last axis."""
    check_tensor("one_hot", "x", x)
    ids = x._data
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: ids must be integers, got dtype {ids.dtype}; use .astype('int64')")
    if num_classes == -1:
        num_classes = int(ids.max()) + 1 if ids.size else 0
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= num_classes):
        raise ValueError(
            f"one_hot: ids must lie in [0, {num_classes}), got values in [{int(ids.min())}, {int(ids.max())}]"
        )
    xp = backend.get_array_module(ids)
    return Tensor._wrap((ids[..., None] == xp.arange(num_classes)).astype("float32"))


def sequence_mask(x: Tensor, maxlen: Optional[int] = None, dtype: Any = "int64", name: Optional[str] = None) -> Tensor:
    """mask[..., j] = j < x[...]: one row of ``maxlen`` (default max(x)) flags per length in ``x``."""
    check_tensor("sequence_mask", "x", x)
    lengths = x._data
    if maxlen is None:
        maxlen = int(lengths.max()) if lengths.size else 0
    xp = backend.get_array_module(lengths)
    return Tensor._wrap((xp.arange(int(maxlen)) < lengths[..., None]).astype(backend.convert_dtype(dtype)))


def gather_tree(ids: Tensor, parents: Tensor) -> Tensor:
    """Whole beam-search paths from per-step choices: ``ids`` and ``parents`` are [max_time, batch,
    beam]; walking back from the last step through the parent beams gives each final beam's ids."""
    check_tensor("gather_tree", "ids", ids)
    check_tensor("gather_tree", "parents", parents)
    if ids.ndim != 3 or parents.shape != ids.shape:
        raise ValueError(
            f"gather_tree: ids and parents must both be [max_time, batch, beam], got {ids.shape} and {parents.shape}"
        )
    chosen, links = ids._data, parents._data
    xp = backend.get_array_module(chosen)
    steps, batch, beam = chosen.shape
    out = xp.empty_like(chosen)
    rows = xp.arange(batch)[:, None]
    beams = xp.broadcast_to(xp.arange(beam), (batch, beam))
    for step in range(steps - 1, -1, -1):
        out[step] = chosen[step][rows, beams]
        beams = links[step][rows, beams]
    return Tensor._wrap(out)
