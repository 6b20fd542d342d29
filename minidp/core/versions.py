"""In-place versions: how backward knows that a tensor changed after an op read it.

A tensor counts its in-place updates in ``_version`` (Paddle's ``inplace_version``), and each
graph node records its inputs' versions as the op read them (``Node.versions``, with the
process's update count :data:`updates` of that moment). An update (:func:`mark_updated`) may keep
what stands for the value it replaces, in the tensor's ``_earlier`` (an :class:`EarlierValues`):
a :func:`snapshot` when the tensor is rebound to a new array and node, nothing when the value was
overwritten in its buffer. Before walking a graph, the tape passes every node through
:func:`inputs_as_read`: an input updated since the op read it is replaced by what stands for the
value the op read, so the op's gradient goes there; when that value was overwritten, the op's
saved arrays are stale and backward refuses to run.

The in-place ops themselves (``x.add_(y)``, ``x[index] = value``) are built in
``minidp.ops.inplace`` with :func:`snapshot` and :func:`mark_updated`.
"""

from __future__ import annotations

from typing import Any, Optional

updates = 0
"""In-place updates so far in this process: a node recorded after the last one read current
values, so :func:`inputs_as_read` skips its check (the common case, kept cheap)."""


def snapshot(tensor: Any) -> Any:
    """A new tensor holding ``tensor``'s current array and place in the graph: what stands for
    its value once an update rebinds it."""
    earlier = tensor.detach()
    earlier.stop_gradient = tensor.stop_gradient
    earlier._node = tensor._node
    return earlier


def mark_updated(tensor: Any, earlier: Optional[Any]) -> None:
    """Count one in-place update of ``tensor``. ``earlier`` (a :func:`snapshot` taken before it)
    stands for the value that ops recorded until now have read: backward routes their gradient
    to it. None means that value was overwritten in its buffer, so their saved arrays are stale
    and backward refuses to run through them. Each update also drops the earlier values whose
    graph a backward freed (see :class:`EarlierValues`)."""
    global updates
    if earlier is not None:
        if tensor._earlier is None:
            tensor._earlier = EarlierValues()
        tensor._earlier.keep(tensor._version, earlier)
    elif tensor._earlier is not None:
        tensor._earlier.forget_freed()
    tensor._version += 1
    updates += 1


def inputs_as_read(node: Any) -> tuple:
    """``node.parents`` as the op read them: an input updated in place since then is replaced,
    once and in the node itself, by the tensor standing for the value the op read."""
    if node.updates != updates:
        if [p._version for p in node.parents] != node.versions:
            node.parents = tuple(
                p if p._version == v else _earlier_value(p, v, node) for p, v in zip(node.parents, node.versions)
            )
            node.versions = [p._version for p in node.parents]
        node.updates = updates
    return node.parents


def _earlier_value(tensor: Any, version: int, node: Any) -> Any:
    """The tensor standing for ``tensor`` at ``version``; an error if that value was overwritten."""
    earlier = tensor._earlier.get(version) if tensor._earlier is not None else None
    if earlier is None:
        op = getattr(node.backward, "__qualname__", "an op").split(".<locals>")[0]
        raise RuntimeError(
            f"backward: {op} read {tensor.name} at inplace_version {version}, but an in-place "
            f"op has since overwritten it (now version {tensor._version}), so the values {op} "
            f"kept for its gradient are stale. Update the tensor before {op} reads it, or use "
            f"the out-of-place form (x = x.exp() instead of x.exp_())"
        )
    return earlier


class _FreedNode:
    """The graph node of a value whose graph a backward freed: no inputs, and no backward, so a
    backward reaching it raises as through any freed graph."""

    __slots__ = ("parents", "backward", "versions", "updates")

    def __init__(self) -> None:
        self.parents = ()
        self.backward = None
        self.versions = []
        self.updates = 0


class _Gone:
    """What stands, among an op's inputs, for an earlier value that is no longer kept: to the
    tape, a tensor outside the graph (backward skips it) or one in a freed graph."""

    __slots__ = ("stop_gradient", "_node", "_version")

    def __init__(self, node: Optional[_FreedNode]) -> None:
        self.stop_gradient = node is None
        self._node = node
        self._version = 0


_OUTSIDE_THE_GRAPH = _Gone(None)  # an earlier value that needed no gradient
_IN_A_FREED_GRAPH = _Gone(_FreedNode())  # an earlier value whose graph a backward freed


class EarlierValues:
    """A tensor's earlier values by version, for the ops that read them (``Tensor._earlier``).

    A value outside the graph is only a version number (backward skips it: its array need not
    live on). A value in a graph is its snapshot until a backward frees that graph: then no
    backward can run through it any more, and keeping it would keep the whole graph's arrays
    alive as long as the tensor (a state updated in place and ``detach_()``-ed each step), so
    every update turns those into version numbers too, which stand for the freed graph (a
    backward reaching one says so). Only the values in a graph are scanned for that, so a
    tensor updated many times outside the graph does not make each update slower.
    """

    __slots__ = ("in_graph", "outside", "freed")

    def __init__(self) -> None:
        self.in_graph: dict = {}
        self.outside: set = set()
        self.freed: set = set()

    def keep(self, version: int, earlier: Any) -> None:
        """Record ``earlier`` (a snapshot) as the value at ``version``; drop freed ones."""
        self.forget_freed()
        if earlier._node is None and earlier.stop_gradient:
            self.outside.add(version)
        else:
            self.in_graph[version] = earlier

    def get(self, version: int) -> Optional[Any]:
        """The tensor standing for the value at ``version``, or None if it is gone."""
        if version in self.outside:
            return _OUTSIDE_THE_GRAPH
        if version in self.freed:
            return _IN_A_FREED_GRAPH
        return self.in_graph.get(version)

    def forget_freed(self) -> None:
        freed = [v for v, t in self.in_graph.items() if _graph_freed(t)]
        for version in freed:
            del self.in_graph[version]
            self.freed.add(version)


def _graph_freed(tensor: Any) -> bool:
    """Whether ``tensor`` is an op's result whose graph a backward (without retain_graph) freed."""
    node = tensor._node
    if node is None:
        return False
    return getattr(node, "node", node).backward is None
