"""The tape: how results remember their inputs, and how backward walks them in reverse.

Every differentiable op (through :func:`minidp.core.function.result`) attaches a
:class:`Node` holding its input tensors and a ``backward`` closure to its output. The closure
receives the output's gradient as a raw array and returns one gradient array (or None) per input.
Backward closures never write into the arrays they receive: the engine and the ops share arrays
freely, and accumulation always makes a new array.

:func:`run_backward` counts, for every tensor reachable from the root, how many consumers will
send it a gradient, then processes a tensor as soon as all of them have (Kahn's algorithm, no
recursion). A leaf is therefore finished at the earliest possible moment, which is when its
gradient-ready hooks fire; see :meth:`Tensor._register_grad_ready_hook`.

An op with several outputs (``split``, ``topk``, a PyLayer returning a tuple) records one
:class:`MultiNode`; each output holds a :class:`NodeOutput` naming the node and its position.
The node counts as one consumer of each of its inputs, and its backward runs once, when every
output that the pass reaches has been processed; outputs that received no gradient pass None.
:mod:`minidp.core.function` is how ops build either kind.

A node also records each input's in-place version as the op read it, and the tape sees every
node through :func:`minidp.core.versions.inputs_as_read`, which sends the gradient of an input
updated since then to the value the op read (see :mod:`minidp.core.versions`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from numpy import asarray as _asarray, generic as _numpy_scalar

from . import timeline as _timeline, versions as _versions
from .versions import inputs_as_read

_grad_enabled = True
_end_of_backward_callbacks: list = []


class Node:
    """What an op recorded: its input tensors, their in-place versions as it read them (and the
    process's update count then), and the closure mapping output grad to input grads."""

    __slots__ = ("parents", "backward", "versions", "updates")

    def __init__(self, parents: tuple, backward: Callable) -> None:
        self.parents = parents
        self.backward = backward
        self.versions = [p._version for p in parents]
        self.updates = _versions.updates


class MultiNode:
    """An op with ``n_outputs`` outputs; ``backward`` maps a tuple of output grads to input grads."""

    __slots__ = ("parents", "backward", "versions", "updates", "n_outputs")

    def __init__(self, parents: tuple, backward: Callable, n_outputs: int) -> None:
        self.parents = parents
        self.backward = backward
        self.versions = [p._version for p in parents]
        self.updates = _versions.updates
        self.n_outputs = n_outputs


class NodeOutput:
    """What output ``index`` of a :class:`MultiNode` holds as its ``_node``."""

    __slots__ = ("node", "index")

    def __init__(self, node: MultiNode, index: int) -> None:
        self.node = node
        self.index = index


def is_grad_enabled() -> bool:
    """Whether ops currently record the graph."""
    return _grad_enabled


def _set_mode(mode: bool) -> None:
    global _grad_enabled
    _grad_enabled = bool(mode)


class set_grad_enabled:
    """Switch graph recording on or off for this process: at once when called, as Paddle's does;
    used as ``with set_grad_enabled(mode):``, the previous mode comes back at the block's end."""

    def __init__(self, mode: bool) -> None:
        self._previous = _grad_enabled
        _set_mode(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _set_mode(self._previous)


class no_grad:
    """Context manager and decorator that stops ops from recording the graph."""

    def __enter__(self) -> None:
        self._previous = _grad_enabled
        _set_mode(False)

    def __exit__(self, *exc: Any) -> None:
        _set_mode(self._previous)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad:
    """Context manager and decorator that turns graph recording back on (inside ``no_grad``)."""

    def __enter__(self) -> None:
        self._previous = _grad_enabled
        _set_mode(True)

    def __exit__(self, *exc: Any) -> None:
        _set_mode(self._previous)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with enable_grad():
                return fn(*args, **kwargs)

        return wrapper


def queue_end_of_backward_callback(fn: Callable[[], None]) -> None:
    """Run ``fn`` once, after the backward pass that is running now has visited every tensor.

    Hooks use it to finish work that needs the whole pass (the data-parallel reducer waits for
    its all-reduces there). Callbacks queued outside a backward pass run at the end of the next.
    """
    _end_of_backward_callbacks.append(fn)


def _count_consumers(root) -> dict:
    """For each tensor reachable from ``root``, how many graph edges point into it.

    A multi-output node is keyed by its own ``id``: its count is the number of its outputs that
    are reachable, and its inputs are counted once, when the first of them is seen.
    """
    consumers = {}
    stack = [root]
    while stack:
        node = stack.pop()._node
        if node is None:
            continue
        if node.__class__ is NodeOutput:
            node = node.node
            key = id(node)
            if key in consumers:
                consumers[key] += 1
                continue
            consumers[key] = 1
        if node.backward is None:
            raise RuntimeError(
                "backward through a graph whose buffers were already freed: a previous backward "
                "released it. Pass retain_graph=True to the first backward() to run it twice."
            )
        for p in inputs_as_read(node):
            if p.stop_gradient:
                continue
            key = id(p)
            if key in consumers:
                consumers[key] += 1
            else:
                consumers[key] = 1
                stack.append(p)
    return consumers


def _finish_leaf(leaf, grad) -> None:
    if grad is not None:
        if isinstance(grad, _numpy_scalar):
            grad = _asarray(grad)
        if leaf._grad_hooks:
            grad = leaf._apply_grad_hooks(grad)
        if leaf._grad is None:
            leaf._grad = grad if grad.dtype == leaf._data.dtype else grad.astype(leaf._data.dtype)
        else:
            leaf._grad = leaf._grad + grad
    if leaf._ready_hooks:
        for hook in list(leaf._ready_hooks.values()):
            hook(leaf)


def run_backward(root, grad, retain_graph: bool = False, capture: dict = None) -> None:
    """Propagate ``grad`` (an array shaped like ``root``) to every leaf that needs a gradient.

    With ``capture`` (``{id(tensor): None}``) the gradients reaching those tensors are stored in
    it instead, and no leaf's ``.grad`` changes nor its ready hooks fire (``minidp.grad``).
    """
    with _timeline.span("backward", "compute"):
        consumers = _count_consumers(root)
        pending = {id(root): grad}
        gathered = {}  # id(MultiNode) -> its outputs' gradients, while some are still to come
        ready = [root]
        try:
            while ready:
                tensor = ready.pop()
                grad = pending.pop(id(tensor), None)
                node = tensor._node
                if node is None:
                    if capture is None:
                        _finish_leaf(tensor, grad)
                    elif id(tensor) in capture:
                        capture[id(tensor)] = grad
                    continue
                if grad is not None and tensor._grad_hooks:
                    grad = tensor._apply_grad_hooks(grad)
                if capture is not None and id(tensor) in capture:
                    capture[id(tensor)] = grad
                if node.__class__ is NodeOutput:
                    node, grad = _gather_output(node, grad, consumers, gathered)
                    if node is None:
                        continue
                parents = node.parents  # as read: counting ran inputs_as_read on every node
                input_grads = node.backward(grad) if grad is not None else (None,) * len(parents)
                if not retain_graph:
                    node.backward = None
                for p, g in zip(parents, input_grads):
                    if p.stop_gradient:
                        continue
                    key = id(p)
                    if g is not None:
                        previous = pending.get(key)
                        pending[key] = g if previous is None else previous + g
                    left = consumers[key] - 1
                    consumers[key] = left
                    if left == 0:
                        ready.append(p)
        finally:
            callbacks = _end_of_backward_callbacks[:]
            _end_of_backward_callbacks.clear()
    for callback in callbacks:
        callback()


def _gather_output(output: NodeOutput, grad, consumers: dict, gathered: dict):
    """File one output's gradient with its multi-output node.

    Returns ``(node, grads)`` once every reachable output of the node has been filed (``grads``
    is None when none of them received a gradient), else ``(None, None)``.
    """
    node = output.node
    key = id(node)
    grads = gathered.get(key)
    if grads is None:
        grads = gathered[key] = [None] * node.n_outputs
    grads[output.index] = grad
    left = consumers[key] - 1
    consumers[key] = left
    if left:
        return None, None
    del gathered[key]
    for g in grads:
        if g is not None:
            return node, tuple(grads)
    return node, None


def reachable_leaves(outputs) -> dict:
    """The leaves (by ``id``) that a backward from any of ``outputs`` could reach."""
    leaves = {}
    seen = set()
    stack = [t for t in outputs if not t.stop_gradient]
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        node = tensor._node
        if node is None:
            leaves[id(tensor)] = tensor
            continue
        if node.__class__ is NodeOutput:
            node = node.node
        stack.extend(p for p in inputs_as_read(node) if not p.stop_gradient)
    return leaves


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_key")
    _next_key = 0

    def __init__(self, hooks: dict, fn: Callable) -> None:
        RemovableHandle._next_key += 1
        self._hooks = hooks
        self._key = RemovableHandle._next_key
        hooks[self._key] = fn

    def remove(self) -> None:
        self._hooks.pop(self._key, None)
