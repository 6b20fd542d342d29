"""Turn lists of arrays into the arguments of one kernel launch.

The same builders serve the CuPy path (device pointers from ``arr.data.ptr``) and the host
runner of the tests (``arr.ctypes.data``), so the code that computes pointer tables, flat
index ranges and launch shapes is the code the tests execute. Nothing here imports CuPy:
pointer, size and offset tables are created with the array module of the arrays passed in.

Kernel parameters and their order are those of the ``.cu`` sources in this package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy

from minidp.core.backend import get_array_module, place_of

DEFAULT_BLOCK_SIZE = 256
# Enough blocks to fill every SM of current GPUs many times over; the grid-stride loop
# covers whatever is left.
DEFAULT_MAX_BLOCKS = 4096

# C++ spelling of each supported element type, keyed by NumPy dtype name ("bfloat16" is the
# ml_dtypes type that CuPy and NumPy users have for it).
C_TYPE_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "__half",
    "bfloat16": "__nv_bfloat16",
}

# (input, output) element types that pack and unpack are instantiated for: each dtype to itself
# (the plain average of a bucket of that dtype), and float32 to and from float16 and bfloat16
# (the compression hooks of minidp.core.distributed.comm_hooks).
COPY_TYPE_PAIRS = (
    ("float32", "float32"),
    ("float64", "float64"),
    ("float32", "float16"),
    ("float16", "float32"),
    ("float16", "float16"),
    ("float32", "bfloat16"),
    ("bfloat16", "float32"),
    ("bfloat16", "bfloat16"),
)
# (parameter, state) element types of the optimizer kernels: float32 and float64 parameters
# keep states of their own type, 16-bit ones float32 states (Adam always, Momentum with
# multi_precision) or, for Momentum without it, velocities of their own type.
ADAM_TYPE_PAIRS = (
    ("float32", "float32"),
    ("float64", "float64"),
    ("float16", "float32"),
    ("bfloat16", "float32"),
)
MOMENTUM_TYPE_PAIRS = ADAM_TYPE_PAIRS + (("float16", "float16"), ("bfloat16", "bfloat16"))
SGD_TYPES = ("float32", "float64", "float16", "bfloat16")

BUCKET_SOURCE = "bucket.cu"
FUSED_ADAM_SOURCE = "fused_adam.cu"
SGD_MOMENTUM_SOURCE = "sgd_momentum.cu"


def _copy_name(kernel: str, in_name: str, out_name: str) -> str:
    return f"{kernel}<{C_TYPE_NAMES[in_name]}, {C_TYPE_NAMES[out_name]}>"


def _pair_name(kernel: str, param_name: str, state_name: str) -> str:
    return f"{kernel}<{C_TYPE_NAMES[param_name]}, {C_TYPE_NAMES[state_name]}>"


def _sgd_name(param_name: str) -> str:
    return f"minidp_sgd<{C_TYPE_NAMES[param_name]}>"


# Every kernel instantiation, per source file: the name_expressions given to NVRTC, the
# instantiations nvcc compiles in the compile gate and the entry points of the host runner.
NAME_EXPRESSIONS = {
    BUCKET_SOURCE: tuple(
        _copy_name(kernel, in_name, out_name)
        for kernel in ("minidp_pack", "minidp_unpack")
        for in_name, out_name in COPY_TYPE_PAIRS
    ),
    FUSED_ADAM_SOURCE: tuple(_pair_name("minidp_fused_adam", *pair) for pair in ADAM_TYPE_PAIRS),
    SGD_MOMENTUM_SOURCE: tuple(_sgd_name(name) for name in SGD_TYPES)
    + tuple(_pair_name("minidp_momentum", *pair) for pair in MOMENTUM_TYPE_PAIRS),
}


@dataclass(frozen=True)
class KernelLaunch:
    """Everything one launch needs: which kernel, its shape and its arguments in order.

    ``args`` holds arrays (passed as pointers) and NumPy scalars whose dtype is the C type of
    the parameter (``numpy.int32`` for ``int``, ``numpy.float32`` for ``float``, ...).
    """

    source: str
    name: str
    grid: Dim3
    block: Dim3
    args: tuple[Any, ...]


def data_pointer(array: Any) -> int:
    """Address of the first element of a NumPy (host) or CuPy (device) array."""
    if isinstance(array, numpy.ndarray):
        return array.ctypes.data
    return array.data.ptr


def arithmetic_dtype(*dtype_names: str) -> type:
    """NumPy scalar type of the kernels' arithmetic: float64 if any side is, else float32."""
    return numpy.float64 if "float64" in dtype_names else numpy.float32


def adam_scalars(lr: float, beta1_pow: float, beta2_pow: float, epsilon: float) -> tuple[float, float]:
    """Bias-corrected step size and epsilon, Paddle's form: ``(lr_t, eps_hat)``.

    ``lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)`` and
    ``eps_hat = epsilon * sqrt(1 - beta2_pow)``, computed in double precision.
    """
    correction2 = math.sqrt(1.0 - beta2_pow)
    return lr * correction2 / (1.0 - beta1_pow), epsilon * correction2


Dim3 = tuple[int, int, int]


def launch_shape(total: int, block_size: int | None, grid_size: int | None) -> tuple[Dim3, Dim3]:
    """Grid and block of a 1-D grid-stride launch over ``total`` elements.

    Defaults: 256 threads a block and enough blocks for one element a thread, at most 4096
    (never fewer than one, so an empty launch is still valid).
    """
    block = DEFAULT_BLOCK_SIZE if block_size is None else block_size
    if not isinstance(block, int) or not 1 <= block <= 1024:
        raise ValueError(f"block_size must be an int in [1, 1024], got {block_size!r}")
    if grid_size is None:
        grid = max(1, min(DEFAULT_MAX_BLOCKS, -(-total // block)))
    else:
        grid = grid_size
    if not isinstance(grid, int) or not 1 <= grid <= 2**31 - 1:
        raise ValueError(f"grid_size must be an int in [1, 2**31 - 1], got {grid_size!r}")
    return (grid, 1, 1), (block, 1, 1)


def _dtype_name(array: Any, role: str) -> str:
    name = numpy.dtype(array.dtype).name
    if name not in C_TYPE_NAMES:
        raise TypeError(f"{role} has dtype {name}; the kernels support {sorted(C_TYPE_NAMES)}")
    return name


def _check_arrays(arrays: Sequence[Any], role: str, place: str) -> str:
    """Common dtype name of ``arrays``, after checking that each is contiguous on ``place``."""
    names = set()
    for index, array in enumerate(arrays):
        if not array.flags.c_contiguous:
            raise ValueError(f"{role}[{index}] must be C-contiguous; pass a contiguous copy")
        if place_of(array) != place:
            raise ValueError(f"{role}[{index}] lives on {place_of(array)}, the launch on {place}")
        names.add(_dtype_name(array, f"{role}[{index}]"))
    if len(names) > 1:
        raise TypeError(f"{role} mix dtypes {sorted(names)}; one launch takes one dtype")
    return names.pop() if names else ""


def _beside(like: Any, table: numpy.ndarray) -> Any:
    """``table`` where ``like`` lives: itself for a NumPy array, else a copy on like's device."""
    if isinstance(like, numpy.ndarray):
        return table
    with like.device:
        return get_array_module(like).asarray(table)


def _pointer_table(like: Any, arrays: Sequence[Any]) -> Any:
    """The arrays' data addresses as a uint64 table on the device of ``like``."""
    pointers = numpy.fromiter((data_pointer(a) for a in arrays), numpy.uint64, len(arrays))
    return _beside(like, pointers)


def _starts_table(like: Any, arrays: Sequence[Any]) -> tuple[Any, int]:
    """Where each array starts in the flat index space (prefix sums of sizes), and the total."""
    starts = numpy.zeros(len(arrays) + 1, dtype=numpy.int64)
    numpy.cumsum([array.size for array in arrays], out=starts[1:])
    return _beside(like, starts), int(starts[-1])


def _copy_launch(
    kernel: str,
    tensors: Sequence[Any],
    flat: Any,
    offsets: Sequence[int],
    scale: float,
    block_size: int | None,
    grid_size: int | None,
    tensors_role: str,
) -> KernelLaunch:
    """Checks and tables shared by pack and unpack; ``tensors`` are the per-tensor side."""
    tensors = list(tensors)
    if len(offsets) != len(tensors):
        raise ValueError(f"got {len(tensors)} {tensors_role} but {len(offsets)} offsets; give one offset per tensor")
    if not flat.flags.c_contiguous:
        raise ValueError("the flat buffer must be C-contiguous")
    place = place_of(flat)
    flat_name = _dtype_name(flat, "the flat buffer")
    tensor_name = _check_arrays(tensors, tensors_role, place) or flat_name
    packing = kernel == "minidp_pack"
    in_name, out_name = (tensor_name, flat_name) if packing else (flat_name, tensor_name)
    if (in_name, out_name) not in COPY_TYPE_PAIRS:
        raise TypeError(f"{kernel} has no {in_name} -> {out_name} instantiation; supported: {COPY_TYPE_PAIRS}")
    offset_table = numpy.asarray(offsets, dtype=numpy.int64).reshape(-1)
    for index, (offset, tensor) in enumerate(zip(offset_table, tensors)):
        if offset < 0 or offset + tensor.size > flat.size:
            raise ValueError(
                f"{tensors_role}[{index}] ({tensor.size} elements at offset {offset}) "
                f"does not fit the flat buffer of {flat.size} elements"
            )
    pointers = _pointer_table(flat, tensors)
    starts, total = _starts_table(flat, tensors)
    grid, block = launch_shape(total, block_size, grid_size)
    scalar = arithmetic_dtype(in_name, out_name)(scale)
    count = numpy.int32(len(tensors))
    offset_table = _beside(flat, offset_table)
    if packing:
        args = (pointers, starts, offset_table, count, numpy.int64(total), scalar, flat)
    else:
        args = (flat, pointers, starts, offset_table, count, numpy.int64(total), scalar)
    return KernelLaunch(BUCKET_SOURCE, _copy_name(kernel, in_name, out_name), grid, block, args)


def pack_launch(
    sources: Sequence[Any],
    flat: Any,
    offsets: Sequence[int],
    scale: float = 1.0,
    *,
    block_size: int | None = None,
    grid_size: int | None = None,
) -> KernelLaunch:
    """Launch that writes ``flat[offsets[t]:offsets[t] + sources[t].size] = sources[t] * scale``.

    Every source has one dtype; the flat buffer may have another (see ``COPY_TYPE_PAIRS``):
    the product is computed in float (double for float64) and rounded to nearest even.
    """
    return _copy_launch("minidp_pack", sources, flat, offsets, scale, block_size, grid_size, "sources")


def unpack_launch(
    flat: Any,
    destinations: Sequence[Any],
    offsets: Sequence[int],
    scale: float = 1.0,
    *,
    block_size: int | None = None,
    grid_size: int | None = None,
) -> KernelLaunch:
    """Launch that writes ``destinations[t] = flat[offsets[t]:offsets[t] + size] * scale``."""
    return _copy_launch("minidp_unpack", destinations, flat, offsets, scale, block_size, grid_size, "destinations")


def _optimizer_tables(
    kernel: str,
    params: Sequence[Any],
    grads: Sequence[Any],
    masters: Sequence[Any] | None,
    states: dict[str, Sequence[Any]],
    type_pairs: Sequence[tuple[str, str]],
) -> tuple[str, str, tuple[Any, ...], int]:
    """Check the arrays of one optimizer launch; return the parameter and state type names, the
    tables (params, grads, masters, *states, starts) on the parameters' device and the total.

    ``masters`` holds a float master weight or None per parameter (None: no masters at all).
    """
    params, grads = list(params), list(grads)
    masters = [None] * len(params) if masters is None else list(masters)
    tables = {
        "params": params,
        "grads": grads,
        "masters": masters,
        **{role: list(table) for role, table in states.items()},
    }
    lengths = {role: len(table) for role, table in tables.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"{kernel} needs one entry per parameter in every list, got lengths {lengths}")
    if not params:
        raise ValueError(f"{kernel} needs at least one parameter")
    like = params[0]
    place = place_of(like)
    param_name = _check_arrays(params, "params", place)
    if _check_arrays(grads, "grads", place) != param_name:
        raise TypeError(
            f"{kernel} takes params and grads of one dtype, got params of {param_name} "
            f"and grads of {_check_arrays(grads, 'grads', place)}"
        )
    state_names = {_check_arrays(table, role, place) for role, table in states.items()}
    state_name = state_names.pop() if len(state_names) == 1 else param_name
    if state_names or (param_name, state_name) not in type_pairs:
        raise TypeError(
            f"{kernel} takes params and grads of one dtype and states of one dtype, "
            f"pairs {list(type_pairs)}; got {param_name} and {sorted(state_names | {state_name})}"
        )
    compute_name = numpy.dtype(arithmetic_dtype(param_name, state_name)).name
    present = [master for master in masters if master is not None]
    if present and _check_arrays(present, "masters", place) != compute_name:
        raise TypeError(f"{kernel}: master weights must be {compute_name}")
    for index, group in enumerate(zip(*tables.values())):
        sizes = [array.size for array in group if array is not None]
        if len(set(sizes)) != 1:
            raise ValueError(f"parameter {index}: {' and '.join(tables)} differ in size {sizes}")
    starts, total = _starts_table(like, params)
    master_pointers = numpy.fromiter((0 if m is None else data_pointer(m) for m in masters), numpy.uint64, len(masters))
    pointer_tables = (
        _pointer_table(like, params),
        _pointer_table(like, grads),
        _beside(like, master_pointers),
        *(_pointer_table(like, table) for table in states.values()),
    )
    return param_name, state_name, pointer_tables + (starts,), total


def fused_adam_launch(
    params: Sequence[Any],
    grads: Sequence[Any],
    moment1s: Sequence[Any],
    moment2s: Sequence[Any],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    beta1_pow: float,
    beta2_pow: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    masters: Sequence[Any] | None = None,
    block_size: int | None = None,
    grid_size: int | None = None,
) -> KernelLaunch:
    """Launch of one Adam (``decoupled=False``) or AdamW step over all ``params`` in place.

    ``beta1_pow``/``beta2_pow`` are ``beta1**t``/``beta2**t`` for the step being taken.
    Adam's ``weight_decay`` adds ``weight_decay * p`` to the gradient (Paddle's L2Decay);
    AdamW's multiplies ``p`` by ``1 - lr * weight_decay`` first. Parameters and gradients share
    a dtype, the moments have its compute dtype (float32 for 16-bit parameters, see
    ``ADAM_TYPE_PAIRS``); ``masters`` are optional float32 master weights (None entries for
    parameters without one). The formulas are in ``fused_adam.cu``.
    """
    param_name, state_name, tables, total = _optimizer_tables(
        "fused_adam", params, grads, masters, {"moment1s": moment1s, "moment2s": moment2s}, ADAM_TYPE_PAIRS
    )
    scalar = arithmetic_dtype(param_name, state_name)
    lr_t, eps_hat = adam_scalars(lr, beta1_pow, beta2_pow, epsilon)
    l2_coeff = 0.0 if decoupled else weight_decay
    decay_factor = 1.0 - lr * weight_decay if decoupled else 1.0
    grid, block = launch_shape(total, block_size, grid_size)
    args = (
        *tables,
        numpy.int32(len(params)),
        numpy.int64(total),
        scalar(lr_t),
        scalar(beta1),
        scalar(beta2),
        scalar(eps_hat),
        scalar(l2_coeff),
        scalar(decay_factor),
    )
    return KernelLaunch(FUSED_ADAM_SOURCE, _pair_name("minidp_fused_adam", param_name, state_name), grid, block, args)


def sgd_launch(
    params: Sequence[Any],
    grads: Sequence[Any],
    *,
    lr: float,
    weight_decay: float = 0.0,
    masters: Sequence[Any] | None = None,
    block_size: int | None = None,
    grid_size: int | None = None,
) -> KernelLaunch:
    """Launch of one SGD step ``p -= lr * (g + weight_decay * p)`` over all ``params`` in place.

    Parameters and gradients share a dtype (``SGD_TYPES``); ``masters`` as for
    :func:`fused_adam_launch`. The formulas are in ``sgd_momentum.cu``.
    """
    param_name, _, tables, total = _optimizer_tables(
        "sgd", params, grads, masters, {}, [(name, name) for name in SGD_TYPES]
    )
    scalar = arithmetic_dtype(param_name)
    grid, block = launch_shape(total, block_size, grid_size)
    args = (*tables, numpy.int32(len(params)), numpy.int64(total), scalar(lr), scalar(weight_decay))
    return KernelLaunch(SGD_MOMENTUM_SOURCE, _sgd_name(param_name), grid, block, args)


def momentum_launch(
    params: Sequence[Any],
    grads: Sequence[Any],
    velocities: Sequence[Any],
    *,
    lr: float,
    momentum: float,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    masters: Sequence[Any] | None = None,
    block_size: int | None = None,
    grid_size: int | None = None,
) -> KernelLaunch:
    """Launch of one Momentum step over all ``params`` in place (velocities updated too).

    ``v = momentum * v + g`` with ``g`` including ``weight_decay * p``; ``p -= lr * v``, or
    ``p -= lr * (g + momentum * v)`` with ``nesterov``. Velocities have the parameters' dtype or,
    for 16-bit parameters, float32 (``MOMENTUM_TYPE_PAIRS``); ``masters`` as for
    :func:`fused_adam_launch`. The formulas are in ``sgd_momentum.cu``.
    """
    param_name, state_name, tables, total = _optimizer_tables(
        "momentum", params, grads, masters, {"velocities": velocities}, MOMENTUM_TYPE_PAIRS
    )
    scalar = arithmetic_dtype(param_name, state_name)
    grid, block = launch_shape(total, block_size, grid_size)
    args = (
        *tables,
        numpy.int32(len(params)),
        numpy.int64(total),
        scalar(lr),
        scalar(momentum),
        scalar(weight_decay),
        numpy.int32(bool(nesterov)),
    )
    return KernelLaunch(SGD_MOMENTUM_SOURCE, _pair_name("minidp_momentum", param_name, state_name), grid, block, args)
