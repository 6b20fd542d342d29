"""Layer: the base class of every model, holding parameters, buffers and sublayers in order.

Assigning a :class:`Parameter`, a ``Layer`` or (for a registered name) a buffer tensor to an
attribute registers it. Every container is an insertion-ordered dict, never a set: data-parallel
ranks walk ``parameters()`` to pair up gradients, so they must all see the same order, which is
the order in which a model's ``__init__`` created things.
"""

from __future__ import annotations

import collections
import itertools
import re
import warnings
from typing import Any, Callable, Iterator, Optional

from . import backend
from .engine import RemovableHandle
from .tensor import Parameter, Tensor
from . import initializer as init
from .param_attr import ParamAttr

_scope_counters: dict = collections.defaultdict(itertools.count)


def _snake_case(name: str) -> str:
    """Paddle's default name scope: ``MyModel`` -> ``my_model``, ``Conv2D`` -> ``conv2d``,
    ``MyMLP`` -> ``my_mlp``, ``BCEWithLogitsLoss`` -> ``bce_with_logits_loss``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


class Layer:
    """A model or a piece of one: subclasses define ``forward`` and create state in ``__init__``."""

    def __init__(self, name_scope: Optional[str] = None, dtype: Any = None) -> None:
        scope = name_scope or _snake_case(type(self).__name__)
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names", {})
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_post_hooks", collections.OrderedDict())
        object.__setattr__(self, "_state_dict_hooks", collections.OrderedDict())
        object.__setattr__(self, "_param_counters", collections.defaultdict(itertools.count))
        self._full_name = f"{scope}_{next(_scope_counters[scope])}"
        # Paddle creates parameters in the default dtype of the moment (set_default_dtype)
        self._dtype = backend.DEFAULT_FLOAT if dtype is None else backend.convert_dtype(dtype)
        self.training = True

    # --- calling ------------------------------------------------------------------------
    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                changed = hook(self, inputs)
                if changed is not None:
                    inputs = changed if isinstance(changed, tuple) else (changed,)
        outputs = self.forward(*inputs, **kwargs)
        if self._forward_post_hooks:
            for hook in list(self._forward_post_hooks.values()):
                changed = hook(self, inputs, outputs)
                if changed is not None:
                    outputs = changed
        return outputs

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(layer, inputs)`` before forward; a returned value replaces the inputs."""
        return RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(layer, inputs, outputs)`` after forward; a returned value replaces the outputs."""
        return RemovableHandle(self._forward_post_hooks, hook)

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """Same as :meth:`register_forward_post_hook` (the PyTorch-style name Paddle also offers)."""
        return self.register_forward_post_hook(hook)

    # --- registration -------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError(
                    f"call super().__init__() in {type(self).__name__}.__init__ before assigning the parameter {name!r}"
                )
            self._drop_registration(name, keep=params)
            params[name] = value
        elif isinstance(value, Layer):
            if params is None:
                raise AttributeError(
                    f"call super().__init__() in {type(self).__name__}.__init__ before assigning the sublayer {name!r}"
                )
            self._drop_registration(name, keep=self._sub_layers)
            self._sub_layers[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"{self._full_name}.{name} is a parameter: assign a Parameter or None, not {type(value).__name__}"
                )
            params[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"{self._full_name}.{name} is a buffer: assign a Tensor or None, not {type(value).__name__}"
                )
            self._buffers[name] = value
        elif params is not None and name in self._sub_layers:
            if value is not None:
                raise TypeError(
                    f"{self._full_name}.{name} is a sublayer: assign a Layer or None, not {type(value).__name__}"
                )
            self._sub_layers[name] = None
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: entries put into the registries directly.
        for registry in ("_parameters", "_sub_layers", "_buffers"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        self._drop_registration(name)
        object.__delattr__(self, name)

    def _drop_registration(self, name: str, keep: Optional[dict] = None) -> None:
        """Forget ``name`` in every registry but ``keep`` (where a re-assignment keeps its position)."""
        for registry in (self._parameters, self._sub_layers, self._buffers):
            if registry is not keep:
                registry.pop(name, None)
        self._non_persistable_buffer_names.pop(name, None)

    def add_sublayer(self, name: str, sublayer: Optional["Layer"]) -> Optional["Layer"]:
        """Register ``sublayer`` under ``name`` (also reachable as an attribute); returns it."""
        if not isinstance(name, str) or "." in name or not name:
            raise ValueError(f"add_sublayer: invalid sublayer name {name!r} (a string, no dots, not empty)")
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: {name!r} must be a Layer, got {type(sublayer).__name__}")
        self._drop_registration(name, keep=self._sub_layers)
        self._sub_layers[name] = sublayer
        object.__setattr__(self, name, sublayer)
        return sublayer

    def add_module(self, name: str, module: Optional["Layer"]) -> None:
        """Register ``module`` under ``name`` (PyTorch-style name of :meth:`add_sublayer`)."""
        self.add_sublayer(name, module)

    register_module = add_module

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Register ``param`` under ``name`` (PyTorch-style name of :meth:`add_parameter`)."""
        self.add_parameter(name, param)

    def add_parameter(self, name: str, parameter: Optional[Parameter]) -> Optional[Parameter]:
        """Register ``parameter`` under ``name`` (also reachable as an attribute); returns it."""
        if not isinstance(name, str) or "." in name or not name:
            raise ValueError(f"add_parameter: invalid parameter name {name!r} (a string, no dots, not empty)")
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: {name!r} must be a Parameter, got {type(parameter).__name__}")
        self._drop_registration(name, keep=self._parameters)
        self._parameters[name] = parameter
        object.__setattr__(self, name, parameter)
        return parameter

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistable: bool = True) -> None:
        """Register a tensor that is state but not trained (e.g. a step counter).

        Persistable buffers go into :meth:`state_dict`; all buffers are moved by :meth:`to`.
        """
        if not isinstance(name, str) or "." in name or not name:
            raise ValueError(f"register_buffer: invalid buffer name {name!r} (a string, no dots)")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor, got {type(tensor).__name__}")
        self._drop_registration(name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistable:
            self._non_persistable_buffer_names[name] = True
        object.__setattr__(self, name, tensor)

    def create_parameter(
        self, shape: Any, attr: Any = None, dtype: Any = None, is_bias: bool = False, default_initializer: Any = None
    ) -> Optional[Parameter]:
        """A new parameter, initialised by ``attr``'s initializer, else the one set by
        :func:`minidp.nn.initializer.set_global_initializer`, else ``default_initializer``, else
        Paddle's defaults (zeros for a bias, Xavier-uniform otherwise).

        Returns None when ``attr`` is False (a layer built without that parameter). The parameter
        is not registered until it is assigned to an attribute.
        """
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        dtype = self._dtype if dtype is None else backend.convert_dtype(dtype)
        shape = [int(s) for s in shape]
        if any(s < 0 for s in shape):
            raise ValueError(f"create_parameter: negative dimension in shape {shape}")
        initializer = (
            attr.initializer
            or init.global_initializer(is_bias)
            or default_initializer
            or (init.Constant(0.0) if is_bias else init.XavierUniform())
        )
        kind = "b" if is_bias else "w"
        name = attr.name or f"{self._full_name}.{kind}_{next(self._param_counters[kind])}"
        array = backend.default_array_module().zeros(shape, dtype)
        param = Parameter(array, trainable=attr.trainable, name=name)
        initializer(param)
        param.optimize_attr["learning_rate"] = attr.learning_rate
        param.need_clip = attr.need_clip
        param.regularizer = attr.regularizer
        return param

    # --- traversal ----------------------------------------------------------------------
    def named_sublayers(
        self, prefix: str = "", include_self: bool = False, layers_set: Optional[dict] = None
    ) -> Iterator[tuple]:
        """(dotted name, layer) for every sublayer, depth first in registration order, each once."""
        seen = {} if layers_set is None else layers_set
        if include_self and id(self) not in seen:
            seen[id(self)] = True
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None or id(layer) in seen:
                continue
            path = f"{prefix}.{key}" if prefix else key
            seen[id(layer)] = True
            yield path, layer
            yield from layer.named_sublayers(prefix=path, layers_set=seen)

    def sublayers(self, include_self: bool = False) -> list:
        """Every sublayer, depth first in registration order."""
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self) -> Iterator[tuple]:
        """(name, layer) for the direct sublayers."""
        seen = {}
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen[id(layer)] = True
                yield name, layer

    def children(self) -> Iterator["Layer"]:
        """The direct sublayers."""
        for _, layer in self.named_children():
            yield layer

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple]:
        """(dotted name, parameter) in registration order; a shared parameter appears once."""
        seen = {}
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen[id(param)] = True
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), param

    def parameters(self, include_sublayers: bool = True) -> list:
        """Every parameter, in registration order (the order every data-parallel rank agrees on)."""
        return [param for _, param in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple]:
        """(dotted name, buffer) in registration order."""
        seen = {}
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, buffer in layer._buffers.items():
                if buffer is None or id(buffer) in seen:
                    continue
                seen[id(buffer)] = True
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), buffer

    def buffers(self, include_sublayers: bool = True) -> list:
        """Every buffer, in registration order."""
        return [buffer for _, buffer in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn: Callable[["Layer"], None]) -> "Layer":
        """Call ``fn`` on every sublayer, then on this layer (e.g. custom initialisation)."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def named_modules(
        self, memo: Optional[dict] = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple]:
        """(dotted name, layer) for this layer ('' or ``prefix``) and every sublayer, depth first;
        a layer reachable twice is listed once."""
        yield from self.named_sublayers(prefix=prefix, include_self=True, layers_set=memo)

    def modules(self) -> Iterator["Layer"]:
        """This layer and every sublayer, depth first."""
        for _, layer in self.named_modules():
            yield layer

    def get_sublayer(self, target: str) -> "Layer":
        """The sublayer at dotted path ``target`` ('' is this layer)."""
        layer = self
        for part in target.split(".") if target else ():
            child = layer._sub_layers.get(part)
            if child is None:
                raise ValueError(f"get_sublayer: {type(layer).__name__} has no sublayer {part!r} (path {target!r})")
            layer = child
        return layer

    get_submodule = get_sublayer

    def set_sublayer(self, target: str, layer: "Layer", strict: bool = False) -> None:
        """Replace the sublayer at dotted path ``target`` by ``layer`` (with ``strict``, the path must exist)."""
        parent_path, _, name = target.rpartition(".")
        parent = self.get_sublayer(parent_path)
        if strict and name not in parent._sub_layers:
            raise ValueError(f"set_sublayer: {type(parent).__name__} has no sublayer {name!r} (path {target!r})")
        parent.add_sublayer(name, layer)

    set_submodule = set_sublayer

    def _get_entry(self, target: str, registry: str, kind: str) -> Any:
        layer_path, _, name = target.rpartition(".")
        entries = getattr(self.get_sublayer(layer_path), registry)
        if name not in entries:
            raise ValueError(f"get_{kind}: no {kind} named {target!r}")
        return entries[name]

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (e.g. ``fc.weight``)."""
        return self._get_entry(target, "_parameters", "parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (e.g. ``bn._mean``)."""
        return self._get_entry(target, "_buffers", "buffer")

    def full_name(self) -> str:
        """This layer's unique name, e.g. ``linear_0``; its parameters are named after it."""
        return self._full_name

    # --- modes --------------------------------------------------------------------------
    def train(self) -> "Layer":
        """Training mode for this layer and its sublayers (Dropout drops, BatchNorm updates stats)."""
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self) -> "Layer":
        """Evaluation mode for this layer and its sublayers."""
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    def clear_gradients(self, set_to_zero: bool = True) -> None:
        """Clear the gradient of every parameter (see :meth:`Tensor.clear_grad`)."""
        for param in self.parameters():
            param.clear_grad(set_to_zero)

    def to(self, device: Optional[str] = None, dtype: Any = None, blocking: Optional[bool] = None) -> "Layer":
        """Move parameters and buffers to ``device`` and/or cast floating ones to ``dtype``, in place.

        Parameter objects keep their identity (optimizers built afterwards see them); their
        arrays are replaced, and gradients are cleared.
        """
        target = None if dtype is None else backend.convert_dtype(dtype)
        if device is not None:
            place = backend._parse_place(device)
            xp = backend.numpy if place == "cpu" else backend._cupy()
        for tensor in itertools.chain(self.parameters(), self.buffers()):
            array = tensor._data
            if device is not None:
                array = backend.to_host(array) if xp is backend.numpy else xp.asarray(array)
            if target is not None and backend.is_floating(array.dtype):
                array = array.astype(target)
            tensor._data = array
            tensor._grad = None
        if target is not None:
            for layer in self.sublayers(include_self=True):
                layer._dtype = target
        return self

    def astype(self, dtype: Any) -> "Layer":
        """Cast floating parameters and buffers to ``dtype`` in place (same as ``to(dtype=...)``)."""
        return self.to(dtype=dtype)

    def _cast_floating(self, dtype: Any, excluded_layers: Any) -> "Layer":
        """Cast the floating parameters and buffers of every layer that is not an instance of
        ``excluded_layers`` (a Layer type or a list of them) to ``dtype``, in place."""
        if excluded_layers is None:
            excluded = ()
        elif isinstance(excluded_layers, type):
            excluded = (excluded_layers,)
        elif isinstance(excluded_layers, (list, tuple)):
            excluded = tuple(excluded_layers)
        else:
            raise TypeError(
                f"excluded_layers must be a Layer type or a list of them, got {type(excluded_layers).__name__}"
            )
        target = backend.convert_dtype(dtype)
        for layer in self.sublayers(include_self=True):
            if excluded and isinstance(layer, excluded):
                continue
            for tensor in itertools.chain(layer._parameters.values(), layer._buffers.values()):
                if tensor is not None and tensor._data.dtype.kind == "f" and tensor._data.dtype != target:
                    tensor._data = tensor._data.astype(target)
                    tensor._grad = None
            layer._dtype = target
        return self

    def float(self, excluded_layers: Any = None) -> "Layer":
        """Floating parameters and buffers to float32 (layers of the ``excluded_layers`` types keep theirs)."""
        return self._cast_floating("float32", excluded_layers)

    def float16(self, excluded_layers: Any = None) -> "Layer":
        """Floating parameters and buffers to float16."""
        return self._cast_floating("float16", excluded_layers)

    def bfloat16(self, excluded_layers: Any = None) -> "Layer":
        """Floating parameters and buffers to bfloat16 (needs the ml_dtypes package on the CPU)."""
        return self._cast_floating("bfloat16", excluded_layers)

    def double(self) -> "Layer":
        """Floating parameters and buffers to float64."""
        return self._cast_floating("float64", None)

    def half(self) -> "Layer":
        """Floating parameters and buffers to float16."""
        return self._cast_floating("float16", None)

    def type(self, dst_type: Any) -> "Layer":
        """Floating parameters and buffers to ``dst_type``."""
        return self._cast_floating(dst_type, None)

    def cpu(self) -> "Layer":
        """Move parameters and buffers to the host."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Layer":
        """Move parameters and buffers to GPU ``device`` (an index or 'gpu:N'; default 0)."""
        if device is None:
            device = 0
        return self.to(f"gpu:{device}" if isinstance(device, int) else device)

    def requires_grad_(self, requires_grad: bool = True) -> "Layer":
        """Make every parameter trainable (True) or frozen (False)."""
        for param in self.parameters():
            param.stop_gradient = not requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none``), or fill it with zeros."""
        self.clear_gradients(set_to_zero=not set_to_none)

    # --- state --------------------------------------------------------------------------
    def state_dict(
        self,
        destination: Optional[dict] = None,
        include_sublayers: bool = True,
        structured_name_prefix: str = "",
        use_hook: bool = True,
        keep_vars: bool = True,
    ) -> "collections.OrderedDict":
        """Parameters and persistable buffers by dotted name (``fc.weight``), as live tensors.

        With ``use_hook`` the hooks of :meth:`register_state_dict_hook` then run, innermost
        layers first; a hook may return a new dict that replaces the result.
        """
        out = collections.OrderedDict() if destination is None else destination
        layers = list(self.named_sublayers(include_self=True) if include_sublayers else [("", self)])
        for layer_prefix, layer in layers:
            prefix = structured_name_prefix + (f"{layer_prefix}." if layer_prefix else "")
            for key, param in layer._parameters.items():
                if param is not None:
                    out[prefix + key] = param
            for key, buffer in layer._buffers.items():
                if buffer is not None and key not in layer._non_persistable_buffer_names:
                    out[prefix + key] = buffer
        if use_hook:
            for _, layer in reversed(layers):
                for hook in list(layer._state_dict_hooks.values()):
                    replaced = hook(out)
                    if replaced is not None:
                        out = replaced
        return out

    to_static_state_dict = state_dict

    def register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(state_dict)`` at the end of :meth:`state_dict`; a returned dict replaces it."""
        return RemovableHandle(self._state_dict_hooks, hook)

    def set_state_dict(self, state_dict: dict, use_structured_name: bool = True) -> tuple:
        """Copy values from ``state_dict`` into this layer's parameters and buffers, in place.

        Keys are dotted names (or, with ``use_structured_name=False``, the tensors' own names).
        Every value is checked before anything is written: a shape mismatch or a value that is
        not numeric raises ValueError and loads nothing. Missing and unexpected keys are
        reported with a warning and returned as ``(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"set_state_dict expects a dict, got {type(state_dict).__name__}")
        own = self.state_dict(use_hook=False)
        matched, missing = [], []
        used = {}
        for key, target in own.items():
            lookup = key if use_structured_name else target.name
            if lookup not in state_dict:
                missing.append(key)
                continue
            used[lookup] = True
            value = state_dict[lookup]
            array = value._data if isinstance(value, Tensor) else value
            if not hasattr(array, "shape"):
                array = backend.get_array_module(target._data).asarray(array)
            shape = list(getattr(array, "shape", ()))
            if shape != target.shape:
                raise ValueError(
                    f"set_state_dict: {key!r} has shape {target.shape} in "
                    f"{self._full_name} but the state dict holds shape {shape}; nothing "
                    "was loaded"
                )
            kind = getattr(getattr(array, "dtype", None), "kind", None)
            if kind not in ("b", "i", "u", "f"):
                raise ValueError(
                    f"set_state_dict: {key!r} must hold numbers, but the state dict holds "
                    f"{type(value).__name__} of dtype {getattr(array, 'dtype', None)}; "
                    "nothing was loaded"
                )
            matched.append((target, array))
        unexpected = [key for key in state_dict if key not in used]
        if missing:
            warnings.warn(
                f"set_state_dict: {self._full_name} kept its current values for keys missing "
                f"from the state dict: {missing}",
                stacklevel=2,
            )
        if unexpected:
            warnings.warn(
                f"set_state_dict: ignored keys that {self._full_name} does not have: {unexpected}", stacklevel=2
            )
        for target, array in matched:
            target.set_value(array)
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False) -> tuple:
        """:meth:`set_state_dict`, but with ``strict`` missing or unexpected keys raise RuntimeError
        (after the matching ones were loaded, as in Paddle). Returns (missing_keys, unexpected_keys)."""
        with warnings.catch_warnings():
            if strict:
                warnings.simplefilter("ignore")
            missing, unexpected = self.set_state_dict(state_dict)
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"load_state_dict: {type(self).__name__} is missing keys {missing} and got "
                f"unexpected keys {unexpected}; pass strict=False to load the rest only"
            )
        return missing, unexpected

    # --- description --------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The constructor arguments worth showing in ``repr`` (layers override this)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(layer).replace("\n", "\n  ") for name, layer in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
