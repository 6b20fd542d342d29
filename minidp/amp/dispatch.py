"""How auto_cast reaches the ops: casting stand-ins swapped in for the listed op functions.

minidp's ops are plain functions, referenced from many places: the modules that define and
re-export them, the Tensor methods they are bound as, the layer classes built on them. Outside
``auto_cast`` nothing is changed, so ops cost exactly what they cost without AMP. When the first
enabled ``auto_cast`` of the process is entered, :func:`install` replaces every reference to an
op of :data:`OPS` (module attributes and class attributes of minidp's modules, the Tensor
methods among them) by a stand-in that casts the op's floating inputs and calls the original;
when the last one exits, :func:`uninstall` puts the originals back. The stand-in asks the
calling thread's AMP state (:mod:`minidp.amp.state`) what to do, so a thread outside
``auto_cast`` passes straight through while another thread is inside one.

What it does not reach: a reference held somewhere other than a module or class attribute (a
closure, a list, a reflected-operator lambda such as ``Tensor.__rmatmul__``); such calls run
uncast.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from typing import Any, Callable, Dict, List, Tuple

from ..core.ops import astype
from ..core.tensor import Tensor
from . import state

# Paddle op name -> the minidp namespace and attribute that implement it
OPS: Dict[str, Tuple[str, str]] = {
    "matmul": ("minidp.ops", "matmul"),
    "matmul_v2": ("minidp.ops", "matmul"),
    "linear_v2": ("minidp.nn.functional", "linear"),
    "conv2d": ("minidp.nn.functional", "conv2d"),
    "einsum": ("minidp.ops", "einsum"),
    "tan": ("minidp.ops", "tan"),
    "acos": ("minidp.ops", "acos"),
    "asin": ("minidp.ops", "asin"),
    "sinh": ("minidp.ops", "sinh"),
    "cosh": ("minidp.ops", "cosh"),
    "atanh": ("minidp.ops", "atanh"),
    "erfinv": ("minidp.ops", "erfinv"),
    "exp": ("minidp.ops", "exp"),
    "expm1": ("minidp.ops", "expm1"),
    "log": ("minidp.ops", "log"),
    "log10": ("minidp.ops", "log10"),
    "log2": ("minidp.ops", "log2"),
    "reciprocal": ("minidp.ops", "reciprocal"),
    "rsqrt": ("minidp.ops", "rsqrt"),
    "pow": ("minidp.ops", "pow"),
    "square": ("minidp.ops", "square"),
    "reduce_sum": ("minidp.ops", "sum"),
    "mean": ("minidp.ops", "mean"),
    "reduce_mean": ("minidp.ops", "mean"),
    "reduce_prod": ("minidp.ops", "prod"),
    "cumsum": ("minidp.ops", "cumsum"),
    "cumprod": ("minidp.ops", "cumprod"),
    "dist": ("minidp.ops", "dist"),
    "group_norm": ("minidp.nn.functional", "group_norm"),
    "layer_norm": ("minidp.nn.functional", "layer_norm"),
    "softmax": ("minidp.nn.functional", "softmax"),
    "log_softmax": ("minidp.nn.functional", "log_softmax"),
    "softplus": ("minidp.nn.functional", "softplus"),
    "softmax_with_cross_entropy": ("minidp.nn.functional", "softmax_with_cross_entropy"),
    "cross_entropy": ("minidp.nn.functional", "cross_entropy"),
    "sigmoid_cross_entropy_with_logits": ("minidp.nn.functional", "binary_cross_entropy_with_logits"),
    "nll_loss": ("minidp.nn.functional", "nll_loss"),
    "lookup_table_v2": ("minidp.nn.functional", "embedding"),
    "bilinear_interp_v2": ("minidp.nn.functional", "interpolate"),
    # ops on no list by default, listed so custom lists can move them
    "relu": ("minidp.nn.functional", "relu"),
    "tanh": ("minidp.ops", "tanh"),
    "sigmoid": ("minidp.ops", "sigmoid"),
    "gelu": ("minidp.nn.functional", "gelu"),
    "elementwise_add": ("minidp.ops", "add"),
    "elementwise_mul": ("minidp.ops", "multiply"),
}

_LOCK = threading.Lock()
_active = 0  # enabled auto_cast contexts open in the process, all threads together
_installed: List[Tuple[Any, str, Any]] = []  # (owner, attribute, original value) to put back


def resolve(op_name: str) -> Callable:
    """The minidp function that implements Paddle op ``op_name``."""
    namespace, attribute = OPS[op_name]
    return getattr(importlib.import_module(namespace), attribute)


def _cast_value(value: Any, target: Any, castable: tuple) -> Any:
    if isinstance(value, Tensor):
        dtype = value._data.dtype
        return astype(value, target) if dtype != target and dtype in castable else value
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], Tensor):
        return type(value)(_cast_value(item, target, castable) for item in value)
    return value


def _stand_in(names: frozenset, original: Callable) -> Callable:
    """A function that casts its floating inputs as the thread's AMP state asks for an op known to
    Paddle under ``names``, then calls ``original``."""

    @functools.wraps(original)
    def amp_op(*args: Any, **kwargs: Any) -> Any:
        rule = state.cast_rule(names)
        if rule is None:
            return original(*args, **kwargs)
        target, castable = rule
        args = tuple(_cast_value(arg, target, castable) for arg in args)
        kwargs = {key: _cast_value(value, target, castable) for key, value in kwargs.items()}
        return original(*args, **kwargs)

    amp_op.__wrapped_by_amp__ = True
    return amp_op


def _references(targets: Dict[int, Any]) -> List[Tuple[Any, str, Any]]:
    """Every (owner, attribute, value) of minidp's modules and classes whose value is one of
    ``targets`` (by identity), directly or as a staticmethod."""
    found = []
    seen_classes = set()
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("minidp"):
            continue
        for key, value in list(vars(module).items()):
            if id(value) in targets:
                found.append((module, key, value))
            elif isinstance(value, type) and value.__module__.startswith("minidp") and id(value) not in seen_classes:
                seen_classes.add(id(value))
                for name, member in list(vars(value).items()):
                    inner = member.__func__ if isinstance(member, staticmethod) else member
                    if id(inner) in targets:
                        found.append((value, name, member))
    return found


def install() -> None:
    """Swap the stand-ins in (the first enabled auto_cast of the process)."""
    global _active
    with _LOCK:
        _active += 1
        if _active > 1:
            return
        names_of: Dict[int, set] = {}
        functions: Dict[int, Any] = {}
        for op_name in OPS:
            function = resolve(op_name)
            functions[id(function)] = function
            names_of.setdefault(id(function), set()).add(op_name)
        stand_ins = {key: _stand_in(frozenset(names_of[key]), functions[key]) for key in functions}
        for owner, attribute, value in _references(functions):
            inner = value.__func__ if isinstance(value, staticmethod) else value
            replacement = stand_ins[id(inner)]
            setattr(owner, attribute, staticmethod(replacement) if isinstance(value, staticmethod) else replacement)
            _installed.append((owner, attribute, value))


def uninstall() -> None:
    """Put the originals back (the last enabled auto_cast of the process has exited)."""
    global _active
    with _LOCK:
        _active -= 1
        if _active > 0:
            return
        while _installed:
            owner, attribute, value = _installed.pop()
            setattr(owner, attribute, value)
