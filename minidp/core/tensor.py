"""Tensor and Parameter: an array plus what autograd needs to know about it.

The array lives in ``_data`` (a NumPy or CuPy ndarray). A tensor with ``stop_gradient=False``
takes part in autograd: a leaf accumulates its gradient in ``_grad``; a result of an op holds the
``_node`` that produced it. ``_version`` counts in-place updates (Paddle's ``inplace_version``)
and ``_earlier`` holds what stands for its earlier values: :mod:`minidp.core.versions` keeps both.
Arithmetic operators and methods such as ``sum`` are attached by
``minidp.ops`` so that every op is defined once, next to its backward.
"""

from __future__ import annotations

import enum
import itertools
from typing import Any, Callable, Optional

import numpy

from . import backend
from .size import Size
from . import engine


class VarType(enum.Enum):
    """What ``Tensor.type`` reports, under Paddle's name and number: minidp's tensors are all dense."""

    DENSE_TENSOR = 7


_names = itertools.count()


class Tensor:
    """An n-dimensional array that records the ops applied to it for reverse-mode autograd."""

    __slots__ = (
        "_data",
        "stop_gradient",
        "_grad",
        "_node",
        "_grad_hooks",
        "_ready_hooks",
        "_name",
        "persistable",
        "_grad_reads_zero",
        "_version",
        "_earlier",
        "__weakref__",
    )

    def __init__(self, data: Any, stop_gradient: bool = True, name: Optional[str] = None) -> None:
        if isinstance(data, Tensor):
            data = data._data
        self._start(backend.get_array_module(data).asarray(data), bool(stop_gradient))
        if name is not None:
            self._name = name

    @classmethod
    def _wrap(cls, data: Any) -> "Tensor":
        """A tensor around an existing array, with no graph: the fast path ops use."""
        t = cls.__new__(cls)
        t._start(data, True)
        return t

    def _start(self, data: Any, stop_gradient: bool) -> None:
        """Set every slot (but the optional name) as a new tensor around the array ``data`` has
        them: no gradient, graph node or hooks, version 0. Shared by ``__init__`` and :meth:`_wrap`."""
        self._data = data
        self.stop_gradient = stop_gradient
        self._grad = None
        self._node = None
        self._grad_hooks = None
        self._ready_hooks = None
        self.persistable = False
        self._grad_reads_zero = False
        self._version = 0
        self._earlier = None

    # --- description -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The sizes of the axes: a :class:`minidp.Size`, a list that also equals a tuple."""
        return Size.of_array(self._data)

    @property
    def type(self) -> VarType:
        """Paddle's kind of tensor storage: always ``VarType.DENSE_TENSOR`` in minidp."""
        return VarType.DENSE_TENSOR

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def place(self) -> str:
        return backend.place_of(self._data)

    @property
    def name(self) -> str:
        try:
            return self._name
        except AttributeError:
            self._name = f"generated_tensor_{next(_names)}"
            return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    @property
    def inplace_version(self) -> int:
        """How many in-place updates this tensor has had (ops that read it remember the count)."""
        return self._version

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    def numel(self) -> int:
        return int(self._data.size)

    def dim(self) -> int:
        return self._data.ndim

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __repr__(self) -> str:
        """Paddle's layout: the header, then the values as NumPy prints them (its print options,
        see :func:`minidp.set_printoptions`), indented under the header."""
        indent = " " * len("Tensor(")
        values = numpy.array2string(backend.to_host(self._data), separator=", ", prefix=indent)
        return (
            f"Tensor(shape={list(self._data.shape)}, dtype={self.dtype}, place=Place({self.place}), "
            f"stop_gradient={self.stop_gradient},\n{indent}{values})"
        )

    __hash__ = object.__hash__

    # --- conversion --------------------------------------------------------------------
    def numpy(self, force: bool = False):
        """The values as a NumPy array (copied to the host when the tensor lives on a GPU).

        ``force`` is accepted as Paddle's C method accepts a positional flag; it changes nothing.
        """
        return backend.to_host(self._data)

    # NumPy operands on the left (np.float64(0.5) * x, array + x) defer to the tensor's
    # reflected operator, as with Paddle: the result is a tensor that keeps the graph, not an array
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def item(self, *index: int):
        """The single value of a one-element tensor (or the value at ``index``) as a Python number."""
        if index:
            return self._data[index].item()
        if self._data.size != 1:
            raise ValueError(f"item() needs a tensor with one element, this one has shape {self.shape}")
        return self._data.item()

    def tolist(self) -> list:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

    def __index__(self) -> int:
        return int(self.item())

    # --- autograd ----------------------------------------------------------------------
    @property
    def grad(self) -> Optional["Tensor"]:
        """The accumulated gradient of a leaf, or None before any backward (or after clearing)."""
        if self._grad is None:
            if self._grad_reads_zero:
                return Tensor._wrap(backend.get_array_module(self._data).zeros_like(self._data))
            return None
        return Tensor._wrap(self._grad)

    @grad.setter
    def grad(self, value: Any) -> None:
        self._grad = None if value is None else (value._data if isinstance(value, Tensor) else value)

    def backward(self, grad_tensor: Optional["Tensor"] = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf with ``stop_gradient=False``.

        A non-scalar tensor back-propagates ones unless ``grad_tensor`` is given. On a tensor
        with ``stop_gradient=True`` (nothing it depends on needs a gradient) it does nothing,
        as in Paddle.
        """
        if self.stop_gradient:
            return
        xp = backend.get_array_module(self._data)
        if grad_tensor is None:
            grad = xp.ones_like(self._data)
        else:
            grad = grad_tensor._data if isinstance(grad_tensor, Tensor) else xp.asarray(grad_tensor)
            if tuple(grad.shape) != tuple(self._data.shape):
                raise ValueError(
                    f"grad_tensor has shape {list(grad.shape)} but the tensor has shape "
                    f"{self.shape}; pass a gradient of the same shape"
                )
            if grad.dtype != self._data.dtype:
                grad = grad.astype(self._data.dtype)
        engine.run_backward(self, grad, retain_graph)

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Forget the accumulated gradient (Paddle's ``clear_gradient``).

        With ``set_to_zero`` the gradient reads as zeros afterwards, otherwise as None. Either way
        no zeros are stored: the next backward writes its gradient without adding it to zeros.
        """
        self._grad = None
        self._grad_reads_zero = set_to_zero

    clear_gradient = clear_grad

    def detach(self) -> "Tensor":
        """A tensor sharing this one's values but cut from the graph."""
        return Tensor._wrap(self._data)

    def register_hook(self, hook: Callable[["Tensor"], Optional["Tensor"]]) -> engine.RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if self.stop_gradient:
            raise RuntimeError("cannot register a gradient hook on a tensor with stop_gradient=True")
        if self._grad_hooks is None:
            self._grad_hooks = {}
        return engine.RemovableHandle(self._grad_hooks, hook)

    def _apply_grad_hooks(self, grad: Any) -> Any:
        """``grad`` passed through the hooks of :meth:`register_hook`, in registration order; the
        engine calls this on the raw array, so only the hooks see Tensors."""
        for hook in list(self._grad_hooks.values()):
            result = hook(Tensor._wrap(grad))
            if result is not None:
                grad = result._data if isinstance(result, Tensor) else result
        return grad

    def _register_grad_ready_hook(self, hook: Callable[["Tensor"], None]) -> engine.RemovableHandle:
        """Call ``hook(leaf)`` once per backward pass, when this leaf's gradient is final.

        Contract (the data-parallel reducer relies on it):
        - it fires only for leaves, exactly once in each backward pass that reaches the leaf, and
          after the pass's gradient has been accumulated into ``_grad`` (so ``_grad`` holds the
          leaf's whole gradient, including earlier passes that were not cleared);
        - it fires as soon as every op that used the leaf has sent its gradient, while the rest of
          the backward pass may still be running;
        - ``_grad`` may be None when every path to the leaf produced no gradient;
        - leaves the pass does not reach do not fire; the hook can queue
          :func:`minidp.core.engine.queue_end_of_backward_callback` to notice that.
        """
        if self._ready_hooks is None:
            self._ready_hooks = {}
        return engine.RemovableHandle(self._ready_hooks, hook)

    def set_value(self, value: Any) -> None:
        """Overwrite the values in place, keeping shape and dtype (used when loading state).

        The value may live elsewhere: a GPU array is copied to the host for a CPU tensor (CuPy
        refuses NumPy's implicit conversion), a host value to the device for a GPU tensor.
        """
        array = value._data if isinstance(value, Tensor) else value
        xp = backend.get_array_module(self._data)
        if xp is backend.numpy and backend.get_array_module(array) is not backend.numpy:
            array = backend.to_host(array)
        array = xp.asarray(array)
        if tuple(array.shape) != tuple(self._data.shape):
            raise ValueError(
                f"set_value: {self.name} has shape {self.shape} but the value has shape {list(array.shape)}"
            )
        self._data[...] = array.astype(self._data.dtype, copy=False)


class Parameter(Tensor):
    """A trainable leaf tensor owned by a Layer (``stop_gradient=False`` by default).

    ``trainable`` and ``stop_gradient`` are one flag seen from two sides, as in Paddle.
    """

    __slots__ = ("optimize_attr", "need_clip", "regularizer")

    def __init__(self, data: Any, trainable: bool = True, name: Optional[str] = None) -> None:
        super().__init__(data, stop_gradient=not trainable, name=name)
        self.persistable = True
        self.optimize_attr = {"learning_rate": 1.0}
        self.need_clip = True
        self.regularizer = None

    @property
    def trainable(self) -> bool:
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.stop_gradient = not value

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def tensor_method(*names: str, reflected: Optional[str] = None) -> Callable:
    """Decorator: bind the op it decorates as the Tensor methods ``names`` (``x.add(y)``,
    ``x + y``), where the op is defined, as DeZero binds its operators in one place; with
    ``reflected``, also as that reflected operator (``2 - x`` calls ``x.__rsub__(2)``, which is
    ``subtract(2, x)``). Binding happens once, at import; the op is returned unchanged."""
    if not names or not all(isinstance(name, str) and name for name in names):
        raise TypeError(f"tensor_method: names must be one or more attribute names, got {names!r}")

    def bind(op: Callable) -> Callable:
        for name in names:
            setattr(Tensor, name, op)
        if reflected is not None:
            setattr(Tensor, reflected, lambda self, other: op(other, self))
        return op

    return bind


def tensor_property(name: str, setter: Optional[Callable] = None) -> Callable:
    """Decorator: bind the function it decorates as the Tensor property ``name`` (read by the
    function, assigned by ``setter`` if given), documented by the function's docstring; the
    function is returned unchanged."""

    def bind(getter: Callable) -> Callable:
        setattr(Tensor, name, property(getter, setter, doc=getter.__doc__))
        return getter

    return bind
