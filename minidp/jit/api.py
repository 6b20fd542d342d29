"""``paddle.jit`` in an eager runtime: ``to_static`` keeps the code eager, with the same results.

Paddle's ``to_static`` translates a function or a Layer's ``forward`` into a static graph and
compiles it. minidp has no graph compiler, so the decorated code runs eagerly as written; the
first use says so once in the log (logger ``minidp.jit``, WARNING), because the speed a script
expects from compilation is not there. The arguments are checked as Paddle checks them.
``jit.save``/``jit.load`` export and import compiled programs, which minidp cannot produce, so
they refuse and name what saves parameters instead.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from ..core.layer import Layer
from ..core.tensor import Tensor
from ..static.input import InputSpec

__all__ = ["to_static", "not_to_static", "enable_to_static", "ignore_module", "save", "load"]

_logger = logging.getLogger("minidp.jit")
_announced = False
_BACKENDS = ("CINN", "PCC")


def _announce() -> None:
    """Log, once per process, that to_static code runs eagerly."""
    global _announced
    if not _announced:
        _announced = True
        _logger.warning(
            "paddle.jit.to_static: minidp has no static graph or compiler; the decorated code runs "
            "eagerly, with the same results (this is said once)"
        )


def _check_input_spec(input_spec: Any) -> None:
    if input_spec is None:
        return
    if not isinstance(input_spec, (list, tuple)):
        raise TypeError(
            f"to_static: input_spec must be a list or tuple of InputSpec (or Tensor), got {type(input_spec).__name__}"
        )
    for item in input_spec:
        if isinstance(item, (list, tuple)):
            _check_input_spec(item)
        elif isinstance(item, dict):
            _check_input_spec(list(item.values()))
        elif item is not None and not isinstance(item, (InputSpec, Tensor)):
            raise TypeError(f"to_static: each input_spec item must be an InputSpec or a Tensor, got {item!r}")


def to_static(
    function: Optional[Callable] = None,
    input_spec: Optional[list] = None,
    build_strategy: Any = None,
    backend: Optional[str] = "CINN",
    **kwargs: Any,
) -> Any:
    """Decorator (``@to_static``, ``@to_static(input_spec=...)``) or call (``to_static(layer)``):
    returns the function or Layer unchanged, to run eagerly. ``input_spec`` (InputSpec or
    Tensor items), ``build_strategy``, ``backend`` (``"CINN"``, ``"PCC"`` or None)
    and the keyword options ``full_graph`` and ``property`` are checked and have no effect."""
    _check_input_spec(input_spec)
    if backend is not None and (not isinstance(backend, str) or backend.upper() not in _BACKENDS):
        raise ValueError(f"to_static: backend must be one of {', '.join(_BACKENDS)} or None, got {backend!r}")
    full_graph = kwargs.get("full_graph")
    if full_graph is not None and not isinstance(full_graph, bool):
        raise TypeError(f"to_static: full_graph must be True, False or None, got {full_graph!r}")

    def decorated(target: Callable) -> Callable:
        if not callable(target):
            raise TypeError(f"to_static: expected a function or a Layer, got {type(target).__name__}")
        _announce()
        return target

    if function is not None:
        return decorated(function)
    return decorated


def not_to_static(func: Optional[Callable] = None) -> Callable:
    """Marks code that ``to_static`` must leave eager; everything is eager, so the function is
    returned as it is (also as ``@not_to_static()``)."""
    if func is None:
        return lambda f: f
    if not callable(func):
        raise TypeError(f"not_to_static: expected a function, got {type(func).__name__}")
    return func


def enable_to_static(enable_to_static_bool: bool) -> None:
    """Paddle's global switch for ``to_static``; checked, and without effect (code is always eager)."""
    if not isinstance(enable_to_static_bool, bool):
        raise TypeError(f"enable_to_static: expects True or False, got {type(enable_to_static_bool).__name__}")


def ignore_module(modules: list) -> None:
    """Paddle's list of modules ``to_static`` must not translate; nothing is translated, so it is
    checked and kept nowhere."""
    if not isinstance(modules, list):
        raise TypeError(f"ignore_module: modules must be a list of modules, got {type(modules).__name__}")


def save(layer: Any, path: str, input_spec: Optional[list] = None, **configs: Any) -> None:
    """Refused: saving a compiled inference program needs a static graph."""
    raise RuntimeError(
        "minidp.jit.save: minidp has no static graph, so it cannot export an inference program; save the "
        "parameters with paddle.save(layer.state_dict(), path + '.pdparams') (minidp.save) and load them "
        "with layer.set_state_dict(paddle.load(...))"
    )


def load(path: str, **configs: Any) -> Layer:
    """Refused: loading a compiled inference program needs a static graph."""
    raise RuntimeError(
        "minidp.jit.load: minidp has no static graph, so it cannot load an inference program; build the "
        "Layer in Python and restore its parameters with layer.set_state_dict(paddle.load(path + '.pdparams')), "
        "saved by paddle.save (minidp.save)"
    )
