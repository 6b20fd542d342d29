"""Layers made from a table row: a functional op, Paddle's constructor parameters, a docstring.

Most layers only keep the options they were built with and pass them to one op of
:mod:`minidp.nn.functional`. Each such layer is one call of :func:`functional_layer` instead of
a hand-written class; layers with state or logic of their own (Linear, the convolutions, norms
with parameters, the RNNs ...) stay written out.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable, Dict, Optional, Sequence

from ...core.tensor import Tensor
from ...core.layer import Layer

REQUIRED = inspect.Parameter.empty
"""The default of a parameter that has none (the caller must pass it)."""

Check = Callable[[str, Dict[str, Any]], Dict[str, Any]]


class FunctionalLayer(Layer):
    """A layer that calls one functional op with the options it was built with.

    Each option is kept as an attribute of its own name and read at every call, so changing
    ``layer.p`` after construction changes what the next call does, as in a written-out layer.
    """

    _function: Callable
    _signature = inspect.Signature()
    _fixed: Dict[str, Any] = {}
    _shown: Sequence[str] = ()
    _passes_training = False
    _check: Optional[Check] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{type(self).__name__}: {error}") from None
        bound.apply_defaults()
        options = {key: value for key, value in bound.arguments.items() if key != "name"}
        if self._check is not None:
            options = self._check(type(self).__name__, options)
        options.update(self._fixed)
        for key, value in options.items():
            setattr(self, key, value)
        self._option_names = tuple(options)

    def _options(self) -> Dict[str, Any]:
        """The options the next call passes: the current attributes (and the training flag)."""
        options = {key: getattr(self, key) for key in self._option_names}
        if self._passes_training:
            options["training"] = self.training
        return options

    def forward(self, *inputs: Tensor, **named_inputs: Tensor) -> Any:
        """``function(*inputs, **named_inputs, **options)``: inputs go by position or by the
        function's own names (``loss(input=..., label=...)``). A layer without options (ReLU,
        Tanh ...) calls the function directly: layers run on every step."""
        if not self._option_names and not self._passes_training:
            return self._function(*inputs, **named_inputs)
        return self._function(*inputs, **named_inputs, **self._options())

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={getattr(self, key)}" for key in self._shown)


def functional_layer(
    name: str,
    function: Callable,
    params: Dict[str, Any],
    doc: str,
    *,
    base: type = FunctionalLayer,
    fixed: Optional[Dict[str, Any]] = None,
    shown: Optional[Sequence[str]] = None,
    check: Optional[Check] = None,
    training: bool = False,
    takes_name: bool = True,
) -> type:
    """A layer class ``name`` whose ``forward(*inputs)`` returns ``function(*inputs, **options)``.

    ``params`` are the constructor's parameters in Paddle's order, each with its default
    (``REQUIRED`` for none); ``name=None`` follows them unless ``takes_name`` is false, and is
    accepted but not used. ``fixed`` options are passed without being parameters (a padding
    layer's mode). ``shown`` lists the options ``repr`` shows (all parameters by default).
    ``check(layer_name, options)`` validates the options at construction and returns them, made
    canonical where needed. ``training`` passes the layer's training flag (the dropouts).
    ``base`` is the class to derive from, for ``isinstance`` relations such as a ZeroPad2D
    being a Pad2D.
    """
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter(key, kind, default=default) for key, default in params.items()]
    if takes_name:
        parameters.append(inspect.Parameter("name", kind, default=None))
    signature = inspect.Signature(parameters)

    def __init__(self: FunctionalLayer, *args: Any, **kwargs: Any) -> None:
        FunctionalLayer.__init__(self, *args, **kwargs)

    __init__.__qualname__ = f"{name}.__init__"
    __init__.__signature__ = signature.replace(parameters=[inspect.Parameter("self", kind)] + parameters)
    namespace = {
        "__doc__": doc,
        "__init__": __init__,
        # Like collections.namedtuple: the class belongs to the module whose table defines it.
        "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
        "_function": staticmethod(function),
        "_signature": signature,
        "_fixed": dict(fixed or {}),
        "_shown": tuple(params) if shown is None else tuple(shown),
        "_passes_training": training,
        "_check": None if check is None else staticmethod(check),
    }
    return type(name, (base,), namespace)
