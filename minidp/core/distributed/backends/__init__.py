"""Process-group backends: the table that maps a backend name to its factory, and the rule that
chooses a job's backend.

A factory takes a :class:`~minidp.core.distributed.backends.base.GroupSpec` and returns a
:class:`~minidp.core.distributed.backends.base.ProcessGroup` (or None on processes outside the
group). Built-in backends are named by ``"module:function"`` and imported on first use, so a
CPU-only install never imports mpi4py or CuPy; ``register_backend`` adds others. The gloo
backend picks its transport (shared memory or TCP) itself: see :mod:`.gloo`.
"""

from __future__ import annotations

import importlib
from typing import Callable, Dict, List, Optional, Union

from ... import backend as array_backend
from .base import GroupSpec, ProcessGroup, ReduceOp, Work

BackendFactory = Callable[[GroupSpec], Optional[ProcessGroup]]

_FACTORIES: Dict[str, Union[str, BackendFactory]] = {
    "gloo": "minidp.core.distributed.backends.gloo:create_process_group",
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


def _known(name: str) -> str:
    """``name`` in lower case; ``ValueError`` unless it names a backend."""
    key = name.lower()
    if key not in _FACTORIES:
        raise ValueError(f"unknown communication backend {name!r}; use one of {available_backends()}")
    return key


def mpi4py_available() -> bool:
    """True when mpi4py imports (which initialises MPI)."""
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError:
        return False
    return True


def choose_backend(requested: str = "auto", *, gpus_requested: bool = False, launched_by_mpi: bool = False) -> str:
    """The backend a job's ranks use: one rule for ``spawn``, the launcher and ``init_parallel_env``.

    ``requested`` is a backend name, checked, or ``"auto"`` (also when empty): nccl when GPUs
    are asked for (``gpus_requested``) or CuPy sees one, else mpi when an MPI launcher started
    this process (``launched_by_mpi``) and mpi4py imports, else gloo.
    """
    if not isinstance(requested, str):
        raise TypeError(f"backend must be a string such as 'auto' or 'gloo', got {type(requested).__name__}")
    name = requested.strip().lower() or "auto"
    if name != "auto":
        return _known(name)
    if gpus_requested or array_backend.is_compiled_with_cuda():
        return "nccl"
    if launched_by_mpi and mpi4py_available():
        return "mpi"
    return "gloo"


def get_backend_factory(name: str) -> BackendFactory:
    """The factory for backend ``name``, importing its module on first use."""
    key = _known(name)
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
    "choose_backend",
    "mpi4py_available",
]
