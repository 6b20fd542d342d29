"""``auto_cast``, ``decorate`` and the device queries of paddle.amp.

``auto_cast`` runs the ops of Paddle's white list in a 16-bit dtype and those of its black list
in float32 (see :mod:`minidp.amp.dispatch` for how the ops are reached). ``decorate`` at level
O2 stores a model's parameters in the 16-bit dtype and makes its optimizers keep float32 master
weights. Unlike Paddle's CPU build, which turns both off on the CPU with a warning, minidp
casts on the CPU too (bfloat16 through ml_dtypes, float16 through NumPy); docs/amp.md says what
that costs.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator, Optional

import numpy

from ..core import backend
from ..core.layer import Layer
from ..core.distributed.data_parallel import DataParallel
from ..nn.layers.norm import LayerNorm, _BatchNorm, _InstanceNorm
from . import dispatch, state
from .lists import LEVELS, LOW_DTYPES, effective_lists

__all__ = [
    "auto_cast",
    "amp_guard",
    "autocast",
    "decorate",
    "amp_decorate",
    "is_float16_supported",
    "is_bfloat16_supported",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
]


def _dtype_name(dtype: Any, argument: str, caller: str) -> str:
    name = dtype if isinstance(dtype, str) else getattr(backend.convert_dtype(dtype), "name", None)
    if not isinstance(name, str) or name.lower() not in LOW_DTYPES:
        raise ValueError(f"{caller}: {argument} must be 'float16' or 'bfloat16', got {dtype!r}")
    return name.lower()


@contextlib.contextmanager
def auto_cast(
    enable: bool = True,
    custom_white_list: Optional[Iterable[str]] = None,
    custom_black_list: Optional[Iterable[str]] = None,
    level: str = "O1",
    dtype: str = "float16",
    use_promote: bool = True,
) -> Iterator[None]:
    """Run the ops inside the block in mixed precision, for the calling thread.

    ``level`` O1 casts the inputs of white-list ops (matmul, linear, conv2d ...) to ``dtype`` and
    those of black-list ops (exp, log, softmax, cross_entropy, the reductions ...) to float32;
    O2 keeps only Paddle's short O2 black list in float32 and, with ``use_promote=False``, runs
    every other listed op in ``dtype``; O0 casts nothing. Ops on no list follow their inputs
    (float16 with float32 gives float32). Contexts nest (the innermost decides) and the previous
    state comes back when the block exits, by exception too.
    """
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise ValueError(f"auto_cast: level must be one of {', '.join(LEVELS)}, got {level!r}")
    level = level.upper()
    dtype = _dtype_name(dtype, "dtype", "auto_cast") if enable else str(getattr(dtype, "name", dtype)).lower()
    white, black = effective_lists(custom_white_list, custom_black_list, level, dtype if enable else "float16")
    enabled = bool(enable) and level != "O0"
    state.push(state.AmpState(enabled, level, dtype, white, black, bool(use_promote)))
    if enabled:
        dispatch.install()
    try:
        yield
    finally:
        if enabled:
            dispatch.uninstall()
        state.pop()


amp_guard = auto_cast


def autocast(device_type: Optional[str], dtype: Any = "float16", enabled: bool = True, cache_enabled: bool = True):
    """Paddle's PyTorch-style spelling: ``auto_cast(enable=enabled, dtype=dtype)`` at level O1.
    ``device_type`` and ``cache_enabled`` are accepted and, as in Paddle, do nothing."""
    return auto_cast(enable=enabled, dtype=dtype)


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """True inside an enabled auto_cast of the calling thread (``device_type`` is accepted and,
    as in Paddle, changes nothing)."""
    current = state.current()
    return current is not None and current.enabled


def get_autocast_dtype(device_type: Optional[str] = None) -> Any:
    """The low dtype of the calling thread's auto_cast (float16 outside any, as Paddle answers;
    ``device_type`` is accepted and, as in Paddle, changes nothing)."""
    current = state.current()
    return backend.convert_dtype(current.dtype if current is not None and current.enabled else "float16")


get_autocast_cpu_dtype = get_autocast_dtype
get_autocast_gpu_dtype = get_autocast_dtype


def _device_kind(device: Optional[str]) -> str:
    if device is None:
        device = backend.get_device()
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'gpu:0', got {device!r}")
    return "gpu" if device.startswith(("gpu", "cuda")) else "cpu"


def _compute_capability() -> int:
    cupy = backend._cupy()
    return int(cupy.cuda.Device().compute_capability)


def is_float16_supported(device: Optional[str] = None) -> bool:
    """Whether ``device`` (default: the current one) runs float16 AMP: a GPU of compute capability
    7.0 or more; not the CPU (Paddle's answer, though minidp's CPU float16 works, slowly)."""
    return _device_kind(device) == "gpu" and _compute_capability() >= 70


def is_bfloat16_supported(device: Optional[str] = None) -> bool:
    """Whether ``device`` (default: the current one) runs bfloat16 AMP: the CPU, or a GPU of
    compute capability 8.0 or more."""
    return _device_kind(device) == "cpu" or _compute_capability() >= 80


def _keeps_float32(layer: Layer, dtype: str, excluded: tuple, excluded_types: tuple) -> bool:
    """Paddle's rule: batch norms always keep float32 parameters; layer and instance norms keep
    them for float16 (not bfloat16); so do the excluded layers and their sublayers."""
    if id(layer) in excluded or (excluded_types and isinstance(layer, excluded_types)):
        return True
    if isinstance(layer, _BatchNorm):
        return True
    return dtype == "float16" and isinstance(layer, (LayerNorm, _InstanceNorm))


def _excluded(excluded_layers: Any) -> tuple:
    """(ids of excluded layer instances and their sublayers, excluded layer types)."""
    if excluded_layers is None:
        return (), ()
    items = excluded_layers if isinstance(excluded_layers, list) else [excluded_layers]
    instances, types = set(), []
    for item in items:
        if isinstance(item, Layer):
            instances.update(id(sub) for sub in item.sublayers(include_self=True))
        elif isinstance(item, type) and issubclass(item, Layer):
            types.append(item)
        else:
            raise TypeError(f"decorate: excluded_layers must be a Layer, a Layer type or a list of them, got {item!r}")
    return frozenset(instances), tuple(types)


def _cast_model(model: Layer, dtype: str, excluded_layers: Any) -> None:
    target = backend.convert_dtype(dtype)
    excluded, excluded_types = _excluded(excluded_layers)
    for layer in model.sublayers(include_self=True):
        if _keeps_float32(layer, dtype, excluded, excluded_types):
            continue
        for tensor in list(layer._parameters.values()) + list(layer._buffers.values()):
            if tensor is not None and tensor._data.dtype == numpy.dtype("float32"):
                tensor._data = tensor._data.astype(target)
                tensor._grad = None


def _save_dtype_hook(save_dtype: str) -> Any:
    target = backend.convert_dtype(save_dtype)

    def cast_floating(state_dict: dict) -> dict:
        for key, value in state_dict.items():
            if backend.is_floating(value._data.dtype) and value._data.dtype != target:
                state_dict[key] = value.astype(target)
        return state_dict

    return cast_floating


def decorate(
    models: Any,
    optimizers: Any = None,
    level: str = "O1",
    dtype: str = "float16",
    master_weight: Optional[bool] = None,
    save_dtype: Optional[str] = None,
    master_grad: bool = False,
    excluded_layers: Any = None,
) -> Any:
    """Prepare models (a Layer or a list) and optimizers for AMP; returns them in the form given.

    O1 changes nothing. O2 casts the float32 parameters and buffers to ``dtype`` in place, except
    in batch norms (and layer/instance norms for float16) and ``excluded_layers``, and turns on
    each optimizer's float32 master weights unless ``master_weight=False``. ``save_dtype`` makes
    ``state_dict`` return floating values in that dtype (O2 only, as in Paddle). Decorate before wrapping in
    DataParallel. ``master_grad`` (float32 gradients) is not supported: it raises.
    """
    if level not in ("O1", "O2"):
        raise ValueError(f"decorate: level must be 'O1' or 'O2', got {level!r}")
    dtype = _dtype_name(dtype, "dtype", "decorate")
    if master_grad:
        raise ValueError("decorate: master_grad=True is not supported by minidp; leave it False")
    if save_dtype is not None and save_dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"decorate: save_dtype must be float16, bfloat16, float32 or float64, got {save_dtype!r}")
    model_list = models if isinstance(models, list) else [models]
    for model in model_list:
        if isinstance(model, DataParallel):
            raise RuntimeError("decorate: decorate the model first, then wrap the result in DataParallel")
        if not isinstance(model, Layer):
            raise TypeError(f"decorate: models must be a Layer or a list of Layers, got {type(model).__name__}")
    optimizer_list = [] if optimizers is None else optimizers if isinstance(optimizers, list) else [optimizers]
    for optimizer in optimizer_list:
        if not hasattr(optimizer, "_multi_precision"):
            raise TypeError(f"decorate: optimizers must be minidp optimizers, got {type(optimizer).__name__}")
    if level == "O2":
        for model in model_list:
            _cast_model(model, dtype, excluded_layers)
        for optimizer in optimizer_list:
            optimizer._multi_precision = master_weight is not False
        if save_dtype is not None:
            for model in model_list:
                model.register_state_dict_hook(_save_dtype_hook(save_dtype))
    if optimizers is None:
        return models
    return models, optimizers


amp_decorate = decorate
