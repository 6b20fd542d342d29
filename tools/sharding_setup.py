"""What tools/bench_sharding.py and the sharding tests (tests/scripts/sharding_tasks.py) both
do with a model: wrap it for DataParallel or a level of ``group_sharded_parallel``, and count the
bytes of parameters, gradients and optimizer state a rank holds. A module those two import: run
on its own, it only answers ``--help``."""

from __future__ import annotations

from typing import Any, Dict, Optional

import minidp
from minidp.distributed.sharding import group_sharded_parallel

LEVELS = ("dp", "os", "os_g", "p_g_os")  # "dp": plain DataParallel, the reference


def wrap(level: str, model: Any, optimizer: Any, dp_options: Optional[dict] = None, **sharding: Any) -> tuple:
    """``(model, optimizer)`` ready to train at ``level`` (one of :data:`LEVELS`): DataParallel
    with ``dp_options``, or ``group_sharded_parallel`` with the ``sharding`` keywords."""
    if level == "dp":
        return minidp.DataParallel(model, **(dp_options or {})), optimizer
    wrapped, sharded, _ = group_sharded_parallel(model, optimizer, level, **sharding)
    return wrapped, sharded


def held_bytes(model: Any, optimizer: Any) -> Dict[str, int]:
    """Bytes of parameters, gradients and optimizer state this rank holds, by the arrays' sizes
    (a released parameter's stand-in takes none; a whole bucket counts once)."""
    buckets = getattr(model, "sharded_buckets", None)
    if not buckets:
        params = model.parameters()
        return {
            "params": sum(p._data.nbytes for p in params),
            "grads": sum(p._grad.nbytes for p in params if p._grad is not None),
            "state": sum(a.nbytes for s in optimizer._slots for a in s.state.values() if hasattr(a, "nbytes")),
        }
    shards = model.grad_shards
    return {
        "params": sum(b.shard.nbytes if b.sharded else b.full.nbytes for b in buckets),
        "grads": sum(p._grad.nbytes for b in buckets for p in b.params if p._grad is not None)
        + (sum(block.nbytes for block in shards.blocks) if shards is not None else 0),
        "state": sum(
            a.nbytes
            for slots in optimizer._slots
            for _, slot in slots
            for a in slot.state.values()
            if hasattr(a, "nbytes")
        ),
    }


if __name__ == "__main__":
    from command_line import answer_help

    answer_help(__name__, __doc__)
