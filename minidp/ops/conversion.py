"""Tensor methods that convert or describe a tensor: dtype shortcuts (``x.float()``, ``x.long()``),
moves between devices (``x.to``, ``x.cpu``, ``x.cuda``), ``requires_grad``, ``retain_grads``,
``apply`` and the small facts scripts ask about (``device``, ``itemsize``, ``is_cuda``).

Casts go through :func:`astype` and moves through one differentiable op, :func:`_to_place`, so
gradients flow through both. Each is bound to Tensor where it is defined; none is a top-level
function.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..core import backend
from ..core.engine import no_grad
from ..core.tensor import Tensor, tensor_method, tensor_property
from ..framework import CPUPlace, CUDAPlace, place_name
from ..core.op_util import named_op, result
from ..core.ops import astype

__all__: list = []

# Paddle's dtype shortcut methods: name -> dtype
_CASTS = {
    "bfloat16": "bfloat16",
    "bool": "bool",
    "byte": "uint8",
    "char": "int8",
    "double": "float64",
    "float": "float32",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "half": "float16",
    "int": "int32",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "long": "int64",
    "short": "int16",
    "uint8": "uint8",
}


def _cast_method(name: str, dtype: str) -> None:
    """Bind ``x.<name>()``: x cast to ``dtype``."""

    def cast_to(self: Tensor) -> Tensor:
        return astype(self, dtype)

    tensor_method(name)(named_op(cast_to, name, f"x cast to {dtype} (``x.astype('{dtype}')``)."))


for _name, _dtype in _CASTS.items():
    _cast_method(_name, _dtype)


def _to_place(x: Tensor, place: str) -> Tensor:
    """x on ``place`` ('cpu' or 'gpu:N'); x itself when it is there already. The gradient goes back."""
    source = x.place
    if place == source:
        return x
    data = backend.to_host(x._data) if place == "cpu" else _on_gpu(x._data, place)
    return result(data, (x,), lambda g: (backend.to_host(g) if source == "cpu" else _on_gpu(g, source),))


def _on_gpu(array: Any, place: str) -> Any:
    cupy = backend._cupy()
    with cupy.cuda.Device(int(place.split(":")[1])):
        return cupy.asarray(array)


def _is_place(value: Any) -> bool:
    if isinstance(value, (CPUPlace, CUDAPlace)):
        return True
    return isinstance(value, str) and value.strip().lower().split(":")[0] in ("cpu", "gpu")


@tensor_method("to")
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """x on another device and/or in another dtype: ``x.to('gpu:0')``, ``x.to('float64')``,
    ``x.to('cpu', 'float64')``, ``x.to(other)`` (other's device and dtype), or the keywords
    ``device``, ``dtype``, ``blocking``. Returns x itself when nothing changes."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("blocking", None)
    if kwargs:
        raise TypeError(f"Tensor.to: unexpected keyword arguments {sorted(kwargs)}; use device, dtype, blocking")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.place, arg.dtype
        elif _is_place(arg):
            device = arg
        elif isinstance(arg, bool) or arg is None:
            continue  # Paddle's positional ``blocking`` flag
        else:
            dtype = arg
    out = self if device is None else _to_place(self, backend._parse_place(place_name(device)))
    if dtype is not None and backend.convert_dtype(dtype) != out.dtype:
        out = astype(out, dtype)
    return out


@tensor_method("cpu")
def cpu(self: Tensor) -> Tensor:
    """x on the host (x itself when it is there already)."""
    return _to_place(self, "cpu")


@tensor_method("cuda")
def cuda(self: Tensor, device_id: Optional[int] = None, blocking: bool = True) -> Tensor:
    """x on GPU ``device_id`` (default: the current GPU, else GPU 0)."""
    if device_id is None:
        current = backend.get_device()
        device_id = int(current.split(":")[1]) if current.startswith("gpu") else 0
    return _to_place(self, backend._parse_place(f"gpu:{device_id}"))


@tensor_method("get_device")
def get_device(self: Tensor) -> int:
    """The GPU number x lives on, or -1 on the host."""
    place = self.place
    return -1 if place == "cpu" else int(place.split(":")[1])


@tensor_method("ndimension")
def ndimension(self: Tensor) -> int:
    """The number of axes (``x.ndim``)."""
    return self._data.ndim


@tensor_method("type_as")
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """x cast to other's dtype."""
    return astype(self, other.dtype)


@tensor_method("requires_grad_")
def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Set whether x takes part in autograd (the opposite of ``stop_gradient``); returns x."""
    self.stop_gradient = not requires_grad
    return self


@tensor_method("detach_")
def detach_(self: Tensor) -> Tensor:
    """Cut x from the graph in place (it becomes a leaf that records no gradient); returns x."""
    self._node = None
    self.stop_gradient = True
    return self


@tensor_method("apply")
def apply(self: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
    """``func(x)`` computed outside autograd; refused on a tensor that requires a gradient."""
    if not self.stop_gradient:
        raise RuntimeError(
            "Tensor.apply: cannot apply a function to a tensor that requires a gradient; call it on x.detach()"
        )
    with no_grad():
        return func(self)


@tensor_method("apply_")
def apply_(self: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
    """x replaced in place by ``func(x)`` (computed outside autograd); returns x."""
    out = apply(self, func)
    self.set_value(out)
    return self


@tensor_method("retain_grads")
def retain_grads(self: Tensor) -> None:
    """Keep the gradient that backward computes for this non-leaf tensor in ``x.grad`` (leaves
    keep theirs anyway). Each backward adds to it, as for leaves."""
    if self.stop_gradient or self._node is None:
        return
    if self._grad_hooks and any(hook.__name__ == "_keep_grad" for hook in self._grad_hooks.values()):
        return

    def _keep_grad(grad: Tensor) -> None:
        self._grad = grad._data if self._grad is None else self._grad + grad._data

    self.register_hook(_keep_grad)


def _data_set(self: Tensor, value: Any) -> None:
    self._data = value._data if isinstance(value, Tensor) else backend.get_array_module(self._data).asarray(value)


@tensor_property("data", setter=_data_set)
def _data_get(self: Tensor) -> Tensor:
    """x's values as a tensor cut from the graph; assigning replaces them (shape and dtype may change)."""
    return self.detach()


tensor_method("grad_")(Tensor.grad)  # Paddle's second name for ``grad`` (read and assign)


@tensor_property("device")
def _device(self: Tensor) -> str:
    """Where x lives: 'cpu' or 'gpu:N'."""
    return self.place


@tensor_property("is_cuda")
def _is_cuda(self: Tensor) -> bool:
    """Whether x lives on a GPU."""
    return self.place != "cpu"


@tensor_property("itemsize")
def _itemsize(self: Tensor) -> int:
    """Bytes per element."""
    return self._data.dtype.itemsize


@tensor_property("requires_grad", setter=requires_grad_)
def _requires_grad(self: Tensor) -> bool:
    """Whether x takes part in autograd (the opposite of stop_gradient)."""
    return not self.stop_gradient
