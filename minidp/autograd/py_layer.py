"""PyLayer: a user-defined op whose forward and backward are written with tensors."""

from __future__ import annotations

from typing import Any

from ..core import backend
from ..core.engine import no_grad
from ..core.function import results, wrap
from ..core.tensor import Tensor


class PyLayerContext:
    """The ``ctx`` that forward fills and backward reads."""

    def __init__(self) -> None:
        self._saved: tuple = ()
        self._materialize_grads = True
        self._non_differentiable: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or anything) for backward."""
        self._saved = tensors

    def saved_tensor(self) -> tuple:
        """What :meth:`save_for_backward` kept, in the same order."""
        return self._saved

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward sees zeros (True, the default) or None for outputs that got no gradient."""
        self._materialize_grads = bool(value)

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs of forward that carry no gradient (``stop_gradient=True``, such as indices)."""
        self._non_differentiable = tensors


class PyLayer:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    ``forward`` returns a tensor or a tuple; its tensor outputs become the outputs of one graph
    node (other values pass through). ``backward`` receives one gradient per tensor output, in
    order (zeros for outputs that got none, unless ``ctx.set_materialize_grads(False)``), and
    returns one gradient per tensor argument of ``apply`` (None for inputs that need none).
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
        items = (outputs,) if single else tuple(outputs)
        positions = [i for i, item in enumerate(items) if isinstance(item, Tensor)]
        out_arrays = tuple(items[i]._data for i in positions)

        def backward(grads):
            if ctx._materialize_grads:
                grads = [
                    backend.get_array_module(o).zeros_like(o) if g is None else g for g, o in zip(grads, out_arrays)
                ]
            returned = cls.backward(ctx, *[None if g is None else wrap(g) for g in grads])
            returned = (returned,) if isinstance(returned, Tensor) or returned is None else tuple(returned)
            if len(returned) != len(inputs):
                raise ValueError(
                    f"{cls.__name__}.backward returned {len(returned)} gradients for "
                    f"{len(inputs)} tensor inputs; return one per tensor input (None allowed)"
                )
            return tuple(None if r is None else r._data if isinstance(r, Tensor) else r for r in returned)

        frozen = {id(t) for t in ctx._non_differentiable}
        differentiable = [id(items[i]) not in frozen for i in positions]
        merged = list(items)
        for position, tensor in zip(positions, results(out_arrays, inputs, backward, differentiable)):
            merged[position] = tensor
        return merged[0] if single else tuple(merged)
