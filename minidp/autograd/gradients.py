"""``minidp.grad``: gradients of outputs with respect to chosen inputs, returned rather than
accumulated into ``.grad`` (Paddle's ``paddle.grad``).

The outputs become the parents of one extra graph node whose backward hands each its
``grad_outputs`` entry; the engine runs from that node in capture mode, which records the
gradient reaching each input and leaves every leaf's ``.grad`` and ready hooks alone.
Higher-order gradients (``create_graph=True``) are not supported: backward closures compute
with arrays, not with recorded ops.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from ..core import backend
from ..core import engine
from ..core.engine import Node
from ..core.tensor import Tensor

__all__ = ["grad"]

Tensors = Union[Tensor, Sequence[Tensor]]


def _as_list(value: Any, what: str) -> List[Any]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if not isinstance(item, Tensor) and not (what == "grad_outputs" and item is None):
            raise TypeError(f"grad: {what} must be Tensors (or a list of them), got {type(item).__name__}")
    return items


def _seed_gradients(outputs: List[Tensor], grad_outputs: Any) -> list:
    """One gradient array per output: ones where grad_outputs gives none."""
    given = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs, "grad_outputs")
    if len(given) != len(outputs):
        raise ValueError(
            f"grad: grad_outputs has {len(given)} entries for {len(outputs)} outputs; give one each (None for ones)"
        )
    seeds = []
    for out, g in zip(outputs, given):
        xp = backend.get_array_module(out._data)
        if g is None:
            seeds.append(xp.ones_like(out._data))
            continue
        if tuple(g._data.shape) != tuple(out._data.shape):
            raise ValueError(f"grad: a grad_outputs entry has shape {g.shape} for an output of shape {out.shape}")
        seeds.append(g._data.astype(out._data.dtype, copy=False))
    return seeds


def grad(
    outputs: Tensors,
    inputs: Tensors,
    grad_outputs: Optional[Any] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool = False,
    no_grad_vars: Optional[Any] = None,
) -> List[Optional[Tensor]]:
    """The gradients of ``outputs`` (weighted by ``grad_outputs``, ones by default) with respect
    to each of ``inputs``, as a list of tensors with ``stop_gradient=True``; ``.grad`` of the
    leaves is not touched.

    ``retain_graph`` keeps the graph for another backward (default: free it, as
    ``create_graph`` is False). An input the outputs do not depend on raises ValueError unless
    ``allow_unused`` is set, which gives None for it. ``no_grad_vars`` are tensors no gradient
    flows through. ``only_inputs`` is accepted as Paddle's (only True is meaningful there).
    """
    if create_graph:
        raise ValueError(
            "grad: create_graph=True (gradients that can be differentiated again) is not supported "
            "by minidp, whose backward computes with arrays rather than recorded ops; use "
            "create_graph=False"
        )
    output_list, input_list = _as_list(outputs, "outputs"), _as_list(inputs, "inputs")
    live = [
        (out, seed)
        for out, seed in zip(output_list, _seed_gradients(output_list, grad_outputs))
        if not out.stop_gradient
    ]
    blocked = [] if no_grad_vars is None else _as_list(no_grad_vars, "no_grad_vars")
    captured = {id(x): None for x in input_list}
    if live:
        root = Tensor._wrap(backend.numpy.zeros(()))
        root.stop_gradient = False
        root._node = Node(tuple(out for out, _ in live), lambda g: tuple(seed for _, seed in live))
        saved = [(t, t.stop_gradient) for t in blocked]
        for t in blocked:
            t.stop_gradient = True
        try:
            engine.run_backward(root, root._data, bool(retain_graph), captured)
        finally:
            for t, flag in saved:
                t.stop_gradient = flag
    grads = []
    for index, x in enumerate(input_list):
        g = captured[id(x)]
        if g is None:
            if not allow_unused:
                raise ValueError(
                    f"grad: input {index} does not take part in computing the outputs; pass "
                    f"allow_unused=True to get None for it"
                )
            grads.append(None)
            continue
        grads.append(Tensor._wrap(g if g.dtype == x._data.dtype else g.astype(x._data.dtype)))
    return grads
