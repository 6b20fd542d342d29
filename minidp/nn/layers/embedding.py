"""Embedding."""

from __future__ import annotations

from typing import Any, Optional

from ...core.tensor import Tensor
from ...core.op_util import check_size
from .. import functional as F
from ...core.layer import Layer

__all__ = [
    "Embedding",
]


class Embedding(Layer):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by integer ids.

    The row at ``padding_idx`` is zeroed at creation, looks up as zeros and is never updated.
    ``max_norm``/``norm_type`` renormalise the rows looked up, ``scale_grad_by_freq`` scales
    their gradients by inverse frequency (see :func:`minidp.nn.functional.embedding`);
    ``sparse`` is accepted for Paddle compatibility (gradients are dense).
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: Optional[int] = None,
        max_norm: Optional[float] = None,
        norm_type: float = 2.0,
        *,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        weight_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        num_embeddings = check_size("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = check_size("Embedding", "embedding_dim", embedding_dim)
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(
                f"Embedding: padding_idx must lie in [-{num_embeddings}, {num_embeddings}), got {padding_idx}"
            )
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self._sparse, self._max_norm, self._norm_type = sparse, max_norm, norm_type
        self._scale_grad_by_freq = scale_grad_by_freq
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr)
        if self._padding_idx is not None:
            self.weight._data[self._padding_idx] = 0

    def forward(self, x: Tensor) -> Tensor:
        return F.embedding(
            x, self.weight, self._padding_idx, self._max_norm, self._norm_type, self._sparse, self._scale_grad_by_freq
        )

    def extra_repr(self) -> str:
        return f"{self._num_embeddings}, {self._embedding_dim}, padding_idx={self._padding_idx}"
