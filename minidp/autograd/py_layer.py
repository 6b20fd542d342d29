"""PyLayer: a user-defined op whose forward and backward are written with tensors."""
from __future__ import annotations

from typing import Any

from .engine import no_grad
from .function import result, wrap
from .tensor import Tensor


class PyLayerContext:
    """The ``ctx`` that forward fills and backward reads."""

    def __init__(self) -> None:
        self._saved: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or anything) for backward."""
        self._saved = tensors

    def saved_tensor(self) -> tuple:
        """What :meth:`save_for_backward` kept, in the same order."""
        return self._saved


class _Grads(tuple):
    """Per-output gradients of a multi-output PyLayer; adding two merges them slot by slot."""

    def __add__(self, other: "_Grads") -> "_Grads":
        return _Grads(b if a is None else a if b is None else a + b for a, b in zip(self, other))


class PyLayer:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    ``backward`` receives one gradient tensor per output and returns one gradient per tensor
    input (None for inputs that need none).
    """

    @staticmethod
    def forward(ctx: PyLayerContext, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a PyLayer subclass must define a static forward(ctx, *args)")

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Tensor) -> Any:
        raise TypeError("a PyLayer subclass must define a static backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = PyLayerContext()
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        inputs = tuple(a for a in args if isinstance(a, Tensor))
        single = isinstance(outputs, Tensor)
        outs = (outputs,) if single else tuple(outputs)
        out_arrays = tuple(o._data for o in outs)

        def backward(grads):
            if not single:
                xp_like = [g if g is not None else o * 0 for g, o in zip(grads, out_arrays)]
                grads = xp_like
            else:
                grads = [grads]
            returned = cls.backward(ctx, *[wrap(g) for g in grads])
            returned = (returned,) if isinstance(returned, Tensor) or returned is None else tuple(returned)
            if len(returned) != len(inputs):
                raise ValueError(
                    f"{cls.__name__}.backward returned {len(returned)} gradients for "
                    f"{len(inputs)} tensor inputs; return one per tensor input (None allowed)"
                )
            return tuple(None if r is None else r._data if isinstance(r, Tensor) else r for r in returned)

        if single:
            return result(outs[0]._data, inputs, backward)
        hub = result(out_arrays[0], inputs, backward)
        wrapped = []
        for i, o in enumerate(out_arrays):
            slots = [None] * len(out_arrays)

            def route(g, i=i, slots=tuple(slots)):
                parts = list(slots)
                parts[i] = g
                return (_Grads(parts),)

            wrapped.append(result(o, (hub,), route))
        return tuple(wrapped)
