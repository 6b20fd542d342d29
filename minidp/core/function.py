"""How an op records itself on the tape: the helpers every op module builds its results with.

An op computes its output arrays with the array module, then hands them over with the closure
that maps output gradients to input gradients:

- One output: ``result(data, parents, backward)`` returns a Tensor. ``backward(g)`` receives the
  output's gradient array ``g`` and returns a tuple with one gradient array (or None) per tensor
  in ``parents``. Example::

      def exp(x):
          data = xp.exp(x._data)
          return result(data, (x,), lambda g: (g * data,))

- Several outputs computed together (``split``, ``unbind``, ``topk``, ``sort``, a PyLayer that
  returns a tuple): ``results(datas, parents, backward)`` returns a tuple of Tensors, one per
  array in ``datas``, that share one graph node. ``backward(grads)`` receives a tuple with one
  entry per output, in the order of ``datas``: the output's gradient array, or None when no
  gradient reached that output (it was not used, or only by paths that produced none). It
  returns one gradient (or None) per parent, as above. The engine calls it once per backward
  pass, after every output that the pass reaches has delivered. Example::

      def split_in_two(x):
          a, b = x._data[:1], x._data[1:]

          def backward(grads):
              ga, gb = grads
              gx = xp.zeros_like(x._data)
              if ga is not None:
                  gx[:1] = ga
              if gb is not None:
                  gx[1:] = gb
              return (gx,)

          return results((a, b), (x,), backward)

  Outputs that carry no gradient, such as the indices ``topk`` or ``cummax`` return, are
  flagged with ``results(..., differentiable=(True, False))``: they get ``stop_gradient=True``
  and their slot in ``grads`` is always None. (``minidp.core.op_util.scatter_add_along`` sends a
  gradient back through such indices.)

``parents`` lists every tensor the op read, including those with ``stop_gradient=True`` (the
engine skips them; their slot in the returned tuple may hold anything, conventionally None).
Backward closures never write into the arrays they receive or saved from the forward pass.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from numpy import asarray as _asarray, generic as _numpy_scalar

from . import engine
from .engine import MultiNode, Node, NodeOutput
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


def results(
    datas: Sequence[Any], parents: tuple, backward: Callable, differentiable: Optional[Sequence[bool]] = None
) -> tuple:
    """Wrap several output arrays of one op, recording them as the outputs of one graph node.

    ``differentiable`` (one flag per output) marks outputs that carry no gradient, such as the
    indices ``topk`` or ``cummax`` return: they get ``stop_gradient=True`` and their slot in
    ``backward``'s argument is always None.
    """
    outs = tuple(wrap(_asarray(d) if isinstance(d, _numpy_scalar) else d) for d in datas)
    if engine._grad_enabled and any(not p.stop_gradient for p in parents):
        node = MultiNode(parents, backward, len(outs))
        for index, out in enumerate(outs):
            if differentiable is None or differentiable[index]:
                out.stop_gradient = False
                out._node = NodeOutput(node, index)
    return outs
