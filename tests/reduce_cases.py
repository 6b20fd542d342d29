"""Every reduce op on every dtype, for one process group: the check each backend's tests run.

``check_every_op_and_dtype(group)`` runs on every rank of a group at once. Each rank contributes
small integers (signs only where the dtype has them, 1 and 2 for PROD), so every result is exact
in every dtype -- bfloat16 and float16 included -- and is compared bit for bit with a float64
reference: AVG divides exactly for floating types and truncates toward zero for integers (Paddle's
and NCCL's ``ncclAvg``). bfloat16 is also broadcast and gathered, to show it moves at all.
"""

from __future__ import annotations

from typing import Any, Callable, List

import ml_dtypes
import numpy as np

from minidp.core.distributed.backends.base import ReduceOp

DTYPES = ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8"]
COUNT = 7


def dtype_of(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def contribution(rank: int, name: str, op: ReduceOp, count: int = COUNT) -> np.ndarray:
    """Rank ``rank``'s values: exact in ``name``, and so are their reductions over a few ranks."""
    rng = np.random.default_rng([rank, count, int(op), DTYPES.index(name)])
    if op == ReduceOp.PROD:
        values = rng.choice([1, 2], size=count)
    elif name == "uint8":
        values = rng.integers(0, 9, size=count)
    else:
        values = rng.integers(-8, 9, size=count)
    return values.astype(dtype_of(name))


def reference(size: int, name: str, op: ReduceOp, count: int = COUNT) -> np.ndarray:
    """The reduction over ``size`` ranks, in float64 (exact for these values)."""
    stacked = np.stack([contribution(r, name, op, count).astype(np.float64) for r in range(size)])
    if op == ReduceOp.AVG:
        total = stacked.sum(0)
        return total / size if name.startswith("float") or name == "bfloat16" else np.trunc(total / size)
    return {
        ReduceOp.SUM: stacked.sum(0),
        ReduceOp.MAX: stacked.max(0),
        ReduceOp.MIN: stacked.min(0),
        ReduceOp.PROD: stacked.prod(0),
    }[op]


def check_every_op_and_dtype(
    group: Any, to_device: Callable[[np.ndarray], Any] = np.asarray, to_host: Callable[[Any], np.ndarray] = np.asarray
) -> List[str]:
    """Run all_reduce and reduce_scatter with every op on every dtype; the mismatches found.

    ``to_device`` makes the group's arrays from NumPy ones and ``to_host`` reads them back
    (identity for the CPU backends).
    """
    size, rank = group.size, group.rank
    failures = []
    for name in DTYPES:
        for op in ReduceOp:
            array = to_device(contribution(rank, name, op))
            group.all_reduce(array, op)
            got = to_host(array)
            want = reference(size, name, op)
            if got.dtype != dtype_of(name) or not np.array_equal(got.astype(np.float64), want):
                failures.append(f"all_reduce {op.name} {name}: got {got} want {want}")
            block = COUNT // size
            out = to_device(np.zeros(block, dtype_of(name)))
            group.reduce_scatter(out, to_device(contribution(rank, name, op, block * size)), op)
            got = to_host(out)
            want = reference(size, name, op, block * size)[rank * block : (rank + 1) * block]
            if not np.array_equal(got.astype(np.float64), want):
                failures.append(f"reduce_scatter {op.name} {name}: got {got} want {want}")
    bf16 = dtype_of("bfloat16")
    moved = to_device(np.array([rank + 0.5, -rank], bf16))
    group.broadcast(moved, size - 1)
    if to_host(moved).astype(np.float64).tolist() != [size - 0.5, 1.0 - size]:
        failures.append(f"broadcast bfloat16: got {to_host(moved)}")
    gathered = to_device(np.zeros((size, 2), bf16))
    group.all_gather(gathered, to_device(np.array([rank, 0.25], bf16)))
    if to_host(gathered).astype(np.float64).tolist() != [[r, 0.25] for r in range(size)]:
        failures.append(f"all_gather bfloat16: got {to_host(gathered)}")
    return failures
