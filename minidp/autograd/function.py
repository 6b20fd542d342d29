"""How an op records itself on the tape: the helpers every op module builds its results with.

An op computes its output arrays with the array module, then hands them over with the closure
that maps output gradients to input gradients:

- One output: ``result(data, parents, backward)`` returns a Tensor. ``backward(g)`` receives the
  output's gradient array ``g`` and returns a tuple with one gradient array (or None) per tensor
  in ``parents``. Example::

      def exp(x):
          data = xp.exp(x._data)
          return result(data, (x,), lambda g: (g * data,))

``parents`` lists every tensor the op read, including those with ``stop_gradient=True`` (the
engine skips them; their slot in the returned tuple may hold anything, conventionally None).
Backward closures never write into the arrays they receive or saved from the forward pass.
"""
from __future__ import annotations

from typing import Any, Callable

from numpy import asarray as _asarray, generic as _numpy_scalar

from . import engine
from .engine import Node
from .tensor import Tensor

wrap = Tensor._wrap


def result(data: Any, parents: tuple, backward: Callable) -> Tensor:
    """Wrap an op's output array; record the op when gradients are on and an input needs one.

    NumPy turns 0-d results into scalars; they are made arrays again here, in one place.
    """
    if isinstance(data, _numpy_scalar):
        data = _asarray(data)
    out = wrap(data)
    if engine._grad_enabled:
        for p in parents:
            if not p.stop_gradient:
                out.stop_gradient = False
                out._node = Node(parents, backward)
                break
    return out
