"""``paddle.base.dygraph``: the dynamic-graph switches older scripts and Paddle's own tests use.

minidp is always in dynamic graph mode, so ``guard()`` only selects the place for its block and
``enabled()`` is always True; switching to the static graph is refused (see
:func:`minidp.framework.enable_static`). ``Tensor._grad_ivar()``, which those tests read, is bound
here too, as in Paddle.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

from ..autograd.gradients import grad
from ..core import backend
from ..core.engine import no_grad
from ..core.tensor import Tensor, tensor_method
from ..framework import disable_static, enable_static, in_dynamic_mode

__all__ = ["guard", "enabled", "enable_dygraph", "disable_dygraph", "no_grad", "grad"]


@contextlib.contextmanager
def guard(place: Optional[Any] = None) -> Iterator[None]:
    """``with guard():`` runs its block in dynamic graph mode (minidp's only mode); with ``place``
    (a place object or ``'cpu'``/``'gpu:N'``), tensors made inside are created there, and the
    previous place is restored on leaving."""
    if place is None:
        yield
        return
    previous = backend.get_device()
    backend.set_device(backend.place_name(place))
    try:
        yield
    finally:
        backend.set_device(previous)


def enabled() -> bool:
    """True: minidp always runs in dynamic graph mode."""
    return in_dynamic_mode()


def enable_dygraph(place: Optional[Any] = None) -> None:
    """Enter dynamic graph mode (already on); ``place`` is checked and ignored, as by
    :func:`minidp.disable_static`."""
    disable_static(place)


def disable_dygraph() -> None:
    """Refused, as :func:`minidp.enable_static`: minidp has no static graph."""
    enable_static()


@tensor_method("_grad_ivar")
def _grad_ivar(x: Tensor) -> Optional[Tensor]:
    """The gradient accumulated in ``x`` (None before any backward), as ``x.grad``."""
    return x.grad
