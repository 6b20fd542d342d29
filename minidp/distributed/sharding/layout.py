"""Who holds what: a bucket of parameters cut into one equal block per rank.

A bucket's parameters are laid out one after the other in a flat buffer (the layout of the
reducer's bucket of the same parameters, so a gradient block and a parameter block cover the
same elements), followed by ``reserved`` elements that are not parameters (the reducer's check
count in its last bucket) and zeros up to a multiple of the group size. Rank ``r`` holds block
``r``: elements ``[r * block, (r + 1) * block)``. A parameter may fall in one block or straddle
several; the part of it in this rank's block is a :class:`Piece`, which the sharded optimizer
updates as if it were a parameter of its own.

A :class:`ShardedBucket` keeps the parameters in one of two ways:

- replicated (``os``, ``os_g``, and the layers ``p_g_os`` keeps whole): every rank holds the
  whole flat buffer, the parameters are views of it, and this rank's block is a view too; after
  the optimizer step, :meth:`ShardedBucket.all_gather` sends each rank's updated block to all.
- sharded (``p_g_os``): a rank holds only its block; :meth:`ShardedBucket.gather` builds the
  whole buffer for a forward pass and :meth:`ShardedBucket.release` drops it again, leaving each
  parameter a read-only, zero-byte stand-in of its shape. On the host the whole buffer is one
  :class:`~.storage.ReleasableBuffer` for the bucket's life: releasing gives its memory back
  while the tape's views of it stay valid, and gathering again (for backward) refills them.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence

from ...core import backend
from ...core.tensor import Parameter
from .storage import ReleasableBuffer


class Piece(NamedTuple):
    """The part ``[start, stop)`` of entry ``entry``'s flattened values that lies in this rank's
    block, at ``offset`` in the block."""

    entry: int
    start: int
    stop: int
    offset: int


def block_size(numel: int, ranks: int) -> int:
    """Elements per rank when ``numel`` elements are cut into ``ranks`` equal blocks (padded)."""
    return -(-numel // ranks)


def pieces_of(sizes: Sequence[int], ranks: int, rank: int, reserved: int = 0) -> List[Piece]:
    """The pieces of entries of ``sizes`` elements (laid out one after the other, then
    ``reserved`` more elements) that fall in block ``rank`` of ``ranks``; empty pieces are left
    out, so a rank may hold no piece of an entry, or of any."""
    block = block_size(sum(sizes) + reserved, ranks)
    low, high = rank * block, (rank + 1) * block
    pieces, offset = [], 0
    for entry, size in enumerate(sizes):
        start, stop = max(low, offset), min(high, offset + size)
        if start < stop:
            pieces.append(Piece(entry, start - offset, stop - offset, start - low))
        offset += size
    return pieces


def stand_in(data: Any) -> Any:
    """A read-only array of ``data``'s shape and dtype that takes no memory (every element is
    one zero): what a released parameter holds, so its shape and dtype stay readable while a
    write fails loudly."""
    xp = backend.get_array_module(data)
    return xp.broadcast_to(xp.zeros((), dtype=data.dtype), data.shape)


class ShardedBucket:
    """The parameters ``params`` of one bucket, cut into blocks over ``group`` (a process group).

    ``sharded`` chooses how they are kept (see the module docstring); ``reserved`` counts the
    elements after the parameters in the reducer's bucket. ``pieces`` are this rank's parts of
    the parameters and ``piece_params`` the tensors the optimizer updates: views of this rank's
    block, named after their parameters and carrying their optimizer attributes.
    """

    def __init__(self, params: Sequence[Parameter], group: Any, sharded: bool, reserved: int = 0) -> None:
        self.params = list(params)
        self.group = group
        self.sharded = sharded
        self.sizes = [p._data.size for p in self.params]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(self.sizes))]
        self.block = block_size(sum(self.sizes) + reserved, group.size)
        self.pieces = pieces_of(self.sizes, group.size, group.rank, reserved)
        first = self.params[0]._data
        self._xp = backend.get_array_module(first)
        self.dtype = first.dtype
        full = self._new_full() if not sharded else self._xp.zeros(self.block * group.size, dtype=self.dtype)
        for param, offset, size in zip(self.params, self.offsets, self.sizes):
            full[offset : offset + size] = param._data.reshape(-1)
        low = group.rank * self.block
        self.full: Optional[Any] = full
        self.shard = full[low : low + self.block] if not sharded else full[low : low + self.block].copy()
        self._gathering: Optional[Any] = None
        # the sharded bucket's whole buffer on the host (None: a new array per gather, on a GPU)
        self.storage = (
            ReleasableBuffer(self.block * group.size, self.dtype) if sharded and self._xp is backend.numpy else None
        )
        self.piece_params = [self._piece_param(piece) for piece in self.pieces]
        if sharded:
            self.release()
        else:
            self._point_params_at(full)

    def _new_full(self) -> Any:
        """The zeroed flat buffer of a replicated bucket: on the host, memory the group hands
        out for repeated collectives (shared memory between a host's ranks, where the
        all-gather after each step reads every rank's block in place); a collective."""
        size = self.block * self.group.size
        if self._xp is backend.numpy:
            return self.group.allocate((size,), self.dtype)
        return self._xp.zeros(size, dtype=self.dtype)

    def _piece_param(self, piece: Piece) -> Parameter:
        param = self.params[piece.entry]
        view = self.shard[piece.offset : piece.offset + piece.stop - piece.start]
        tensor = Parameter.__new__(Parameter)
        tensor._start(view, False)
        tensor._name = param.name
        tensor.persistable = True
        tensor.optimize_attr = param.optimize_attr
        tensor.need_clip = param.need_clip
        tensor.regularizer = param.regularizer
        return tensor

    def _point_params_at(self, full: Any) -> None:
        for param, offset, size in zip(self.params, self.offsets, self.sizes):
            param._data = full[offset : offset + size].reshape(param._data.shape)

    # --- replicated buckets ---------------------------------------------------------------
    def all_gather(self) -> Any:
        """Start sending this rank's block to every rank (replicated buckets, after a step)."""
        return self.group.all_gather(self.full.reshape(self.group.size, self.block), self.shard, sync_op=False)

    # --- sharded buckets ------------------------------------------------------------------
    @property
    def gathered(self) -> bool:
        """Whether the parameters hold their whole values now (always, when replicated)."""
        return self.full is not None

    def gather(self, sync_op: bool = True) -> None:
        """Start building the whole parameters from every rank's block (nothing to do if they
        are whole or on their way); :meth:`wait_gathered` points the parameters at them."""
        if self.full is not None or self._gathering is not None:
            return
        if self.storage is not None:
            self.storage.hold()
            full = self.storage.array
        else:
            full = self._xp.empty(self.block * self.group.size, dtype=self.dtype)
        work = self.group.all_gather(full.reshape(self.group.size, self.block), self.shard, sync_op=sync_op)
        self._gathering = (full, work)

    def wait_gathered(self) -> None:
        """Finish :meth:`gather` (starting it if needed) and point the parameters at the result."""
        self.gather()
        if self._gathering is None:
            return
        full, work = self._gathering
        work.wait()
        self._gathering = None
        self.full = full
        self._point_params_at(full)

    def release(self) -> None:
        """Drop the whole parameters of a sharded bucket: each becomes a zero-byte stand-in,
        and the host buffer gives its memory back (views the tape holds read zeros until the
        next gather)."""
        if not self.sharded:
            return
        if self._gathering is not None:
            self._gathering[1].wait()
            self._gathering = None
        self.full = None
        for param in self.params:
            param._data = stand_in(param._data)
        if self.storage is not None:
            self.storage.release()

    def scatter_from_params(self) -> None:
        """Copy this rank's block out of the gathered parameters (after they were loaded)."""
        low = self.group.rank * self.block
        self.shard[...] = self.full[low : low + self.block]

    def gradient_views(self, grads: Sequence[Optional[Any]]) -> List[Optional[Any]]:
        """For each piece, its part of its parameter's gradient in ``grads`` (None stays None)."""
        views = []
        for piece in self.pieces:
            grad = grads[piece.entry]
            views.append(None if grad is None else grad.reshape(-1)[piece.start : piece.stop])
        return views

    def block_views(self, block: Any) -> List[Any]:
        """For each piece, its part of ``block`` (an array laid out like this rank's block)."""
        return [block[p.offset : p.offset + p.stop - p.start] for p in self.pieces]
