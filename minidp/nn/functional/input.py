"""Embedding lookup: rows of a table picked by integer ids, with the gradient scattered back."""
from __future__ import annotations

from typing import Optional

from ... import backend
from ...autograd.tensor import Tensor
from ...ops._util import result
from ._util import check_tensor


def embedding(x: Tensor, weight: Tensor, padding_idx: Optional[int] = None, sparse: bool = False,
              name: Optional[str] = None) -> Tensor:
    """``weight[x]``: one row of ``weight`` [num_embeddings, dim] per id in ``x``.

    Ids equal to ``padding_idx`` give zero rows and send no gradient. ``sparse`` is accepted
    for Paddle compatibility; the gradient is always a dense array shaped like ``weight``.
    """
    check_tensor("embedding", "x", x)
    check_tensor("embedding", "weight", weight)
    ids, table = x._data, weight._data
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}; use .astype('int64')")
    rows = table.shape[0]
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        raise ValueError(f"embedding: ids must lie in [0, {rows}), got values in "
                         f"[{int(ids.min())}, {int(ids.max())}]")
    if padding_idx is not None:
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
        if not 0 <= padding_idx < rows:
            raise ValueError(f"embedding: padding_idx must lie in [-{rows}, {rows}), got {padding_idx}")
    out = table[ids]
    keep = None
    if padding_idx is not None:
        keep = (ids != padding_idx)[..., None]
        out *= keep
    xp = backend.get_array_module(table)

    def backward(g):
        if keep is not None:
            g = g * keep
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
        raise ValueError(f"one_hot: ids must lie in [0, {num_classes}), got values in "
                         f"[{int(ids.min())}, {int(ids.max())}]")
    xp = backend.get_array_module(ids)
    return Tensor._wrap((ids[..., None] == xp.arange(num_classes)).astype("float32"))
