"""Process-group backends and the table that maps a backend name to its factory.

A factory takes a :class:`~minidp.core.distributed.backends.base.GroupSpec` and returns a
:class:`~minidp.core.distributed.backends.base.ProcessGroup` (or None on processes outside the
group). Built-in backends are named by ``"module:function"`` and imported on first use, so a
CPU-only install never imports mpi4py or CuPy; ``register_backend`` adds others.
"""

from __future__ import annotations

import importlib
from typing import Callable, Dict, List, Optional, Union

from .base import GroupSpec, ProcessGroup, ReduceOp, Work

BackendFactory = Callable[[GroupSpec], Optional[ProcessGroup]]

_FACTORIES: Dict[str, Union[str, BackendFactory]] = {
    "gloo": "minidp.core.distributed.backends.shm:create_process_group",
    "mpi": "minidp.distributed.backends.mpi:create_process_group",
    "nccl": "minidp.distributed.backends.nccl:create_process_group",
}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``name`` usable as ``PADDLE_DISTRI_BACKEND`` / ``new_group(backend=name)``."""
    if not callable(factory):
        raise TypeError(f"backend factory for {name!r} must be callable")
    _FACTORIES[name.lower()] = factory


def available_backends() -> List[str]:
    """Names accepted by :func:`get_backend_factory` (whether or not their libraries load)."""
    return sorted(_FACTORIES)


def get_backend_factory(name: str) -> BackendFactory:
    """The factory for backend ``name``, importing its module on first use."""
    key = name.lower()
    if key not in _FACTORIES:
        raise ValueError(f"unknown communication backend {name!r}; use one of {available_backends()}")
    factory = _FACTORIES[key]
    if isinstance(factory, str):
        module_name, _, attribute = factory.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise RuntimeError(
                f"the {key} backend cannot be loaded ({error}); install what it needs "
                "(mpi: pip install 'minidp[mpi]'; nccl: 'minidp[gpu]' on a CUDA machine) or set "
                "PADDLE_DISTRI_BACKEND=gloo"
            ) from error
        factory = getattr(module, attribute)
        _FACTORIES[key] = factory
    return factory


__all__ = [
    "GroupSpec",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "BackendFactory",
    "register_backend",
    "available_backends",
    "get_backend_factory",
]
