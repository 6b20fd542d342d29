"""Every public op refuses a non-Tensor where it needs a Tensor, with TypeError/ValueError.

The sweep walks ``minidp.ops.__all__``. Each function whose first parameter is annotated as a
Tensor (or a sequence of Tensors) is called with a nested list, None and a string in that place,
and, when its second parameter is a Tensor operand too, in that place as well; the ops that take
their tensors as ``*args`` get the same treatment through explicit calls. Every other public
function must be in ``TAKES_PYTHON_DATA`` with the reason it takes Python data first, so a new op
is either swept or explicitly excused. The error must be a TypeError or ValueError, never an
AttributeError, IndexError or KeyError from inside the op.
"""
import inspect

import numpy as np
import pytest

import minidp
from minidp import ops

TENSOR_ANNOTATIONS = {"Tensor", "Sequence[Tensor]"}
BAD_OPERANDS = [[[1.0, 2.0]], None, "abc"]

_LIFTS = "lifts Python numbers and arrays into tensors, as the operator it backs does (x * 0.5, 1 - x)"
_BUILDS = "builds a tensor from Python data or a NumPy array: that is its job"
_SIZES = "takes shapes, sizes or scalars, not tensors"
TAKES_PYTHON_DATA = {
    **dict.fromkeys(["add", "subtract", "multiply", "divide", "sub", "mul", "div", "true_divide",
                     "floor_divide", "remainder", "mod", "floor_mod", "pow", "maximum", "minimum", "fmax",
                     "fmin", "atan2", "copysign", "heaviside", "hypot", "logaddexp", "ldexp", "nextafter",
                     "equal", "not_equal", "greater_than", "greater_equal", "less_than", "less_equal",
                     "eq", "ne", "gt", "ge", "lt", "le", "greater", "less", "where", "lerp", "gcd", "lcm",
                     "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"],
                    _LIFTS),
    "add_n": _LIFTS,
    **dict.fromkeys(["to_tensor", "as_tensor", "asarray", "assign", "from_numpy"], _BUILDS),
    **dict.fromkeys(["zeros", "ones", "empty", "full", "rand", "randn", "standard_normal", "uniform", "normal",
                     "log_normal", "randint", "randperm", "eye", "arange", "linspace", "logspace",
                     "tril_indices", "triu_indices", "seed", "broadcast_shape", "broadcast_shapes"], _SIZES),
    "is_tensor": "answers whether its argument is a Tensor, so any object is a valid argument",
    "scatter_nd": "its first argument is an index (a list is fine); updates is swept in VARARG_CALLS",
}

_T = minidp.to_tensor(np.ones((2, 2)))
_I = minidp.to_tensor(np.array([[0]]))
# Ops whose Tensor operands are not in the first two positional places, each with the bad value in a Tensor's place.
VARARG_CALLS = {
    "atleast_1d": lambda bad: ops.atleast_1d(_T, bad),
    "atleast_2d": lambda bad: ops.atleast_2d(bad),
    "atleast_3d": lambda bad: ops.atleast_3d(_T, bad),
    "einsum": lambda bad: ops.einsum("ij,ij->", _T, bad),
    "einsum (list)": lambda bad: ops.einsum("ij,ij->", [_T, bad]),
    "meshgrid": lambda bad: ops.meshgrid(_T[0], bad),
    "scatter_nd": lambda bad: ops.scatter_nd(_I, bad, [3]),
}


def _operand_places(fn):
    """The positions (0 and/or 1) of ``fn``'s leading Tensor operands; empty when it takes none first."""
    params = list(inspect.signature(fn).parameters.values())
    places = []
    for position, param in enumerate(params[:2]):
        positional = param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
        if not positional or str(param.annotation) not in TENSOR_ANNOTATIONS:
            break
        places.append(position)
    return places


def _required_positionals(fn):
    params = inspect.signature(fn).parameters.values()
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is inspect.Parameter.empty)


PUBLIC = sorted(name for name in ops.__all__ if callable(getattr(ops, name)))
SWEPT = [name for name in PUBLIC if _operand_places(getattr(ops, name))]


def _raises_type_or_value_error(what, call):
    try:
        call()
    except (TypeError, ValueError):
        return
    except Exception as error:  # noqa: BLE001 -- any other error type is the failure to report
        pytest.fail(f"{what} raised {type(error).__name__}: {error}")
    pytest.fail(f"{what} was accepted")


def test_every_public_function_is_swept_or_excused_with_a_reason():
    unaccounted = [name for name in PUBLIC if name not in SWEPT and name not in TAKES_PYTHON_DATA
                   and name not in VARARG_CALLS]
    assert unaccounted == []
    assert set(TAKES_PYTHON_DATA) & set(SWEPT) == {"lerp"}  # lerp is annotated Tensor but lifts like the rest
    assert set(TAKES_PYTHON_DATA) <= set(PUBLIC)
    assert len(SWEPT) >= 250


def test_the_sweep_covers_every_op_family():
    modules = {getattr(ops, name).__module__.rsplit(".", 1)[-1] for name in SWEPT}
    assert {"shape", "indexing", "linalg", "search", "manipulation", "reduction", "statistics",
            "cumulative", "creation", "compare", "math", "unary", "binary", "sampling", "inplace"} <= modules


@pytest.mark.parametrize("name", [name for name in SWEPT if name not in TAKES_PYTHON_DATA])
def test_non_tensor_operands_raise_type_or_value_error(name):
    fn = getattr(ops, name)
    places = _operand_places(fn)
    first = next(iter(inspect.signature(fn).parameters.values()))
    good = [_T, _T] if str(first.annotation) == "Sequence[Tensor]" else _T
    count = max(_required_positionals(fn), len(places))
    for place in places:
        for bad in BAD_OPERANDS:
            args = [good] * count
            args[place] = bad
            _raises_type_or_value_error(f"{name} with {bad!r} as operand {place}", lambda: fn(*args))


@pytest.mark.parametrize("name", sorted(VARARG_CALLS))
def test_non_tensor_operands_in_varargs_raise_type_or_value_error(name):
    for bad in BAD_OPERANDS:
        _raises_type_or_value_error(f"{name} with {bad!r}", lambda: VARARG_CALLS[name](bad))


def test_the_error_names_the_op_and_the_type_given():
    for call, message in [
        (lambda: ops.topk([[1.0, 2.0]], 1), "topk: x must be a Tensor, got list"),
        (lambda: ops.index_select(None, _I), "index_select: x must be a Tensor, got NoneType"),
        (lambda: ops.kron(_T, "abc"), "kron: y must be a Tensor, got str"),
        (lambda: ops.hstack([_T, np.ones((2, 2))]), r"hstack: x\[1\] must be a Tensor, got ndarray"),
        (lambda: ops.hstack(_T), "hstack: x must be a list or tuple of Tensors, got Tensor"),
        (lambda: ops.quantile((1.0, 2.0), 0.5), "quantile: x must be a Tensor, got tuple"),
        (lambda: ops.isnan([1.0]), "isnan: x must be a Tensor, got list"),
        (lambda: ops.astype([1.0], "float32"), "astype: x must be a Tensor, got list"),
        (lambda: ops.flip(_T, None), "flip: axis must be an int or a list of ints, got None"),
    ]:
        with pytest.raises(TypeError, match=message):
            call()


@pytest.mark.parametrize("call", [
    lambda v: ops.topk(_T, v), lambda v: ops.kthvalue(_T, v), lambda v: ops.chunk(_T, v),
    lambda v: ops.split(_T, v), lambda v: ops.split(_T, [v, 1]), lambda v: ops.repeat_interleave(_T, v),
    lambda v: ops.unfold(_T, 0, v, 1), lambda v: ops.unfold(_T, 0, 1, v), lambda v: ops.rot90(_T, v),
    lambda v: ops.diff(_T, v), lambda v: ops.vander(_T[0], v), lambda v: ops.histogram(_T, v),
    lambda v: ops.histogram_bin_edges(_T, v), lambda v: ops.unstack(_T, 0, v), lambda v: ops.tensor_split(_T, v),
    lambda v: ops.narrow(_T, 0, v, 1), lambda v: ops.narrow(_T, 0, 0, v), lambda v: ops.diagonal(_T, v),
    lambda v: ops.tril(_T, v), lambda v: ops.triu(_T, v), lambda v: ops.trace(_T, v),
    lambda v: ops.diag_embed(_T, v), lambda v: ops.matrix_power(_T, v), lambda v: ops.roll(_T, v),
    lambda v: ops.select_scatter(_T, _T[0], 0, v), lambda v: ops.gather(_T, _I[0], v),
    lambda v: ops.shard_index(_I, v, 2, 0), lambda v: ops.shard_index(_I, 4, v, 0),
    lambda v: ops.tensordot(_T, _T, v),
])
def test_integer_arguments_refuse_bools_floats_and_strings(call):
    for bad in (1.5, True, "2", 1.0):
        with pytest.raises(TypeError, match="must be an int"):
            call(bad)


# ``x == None`` must answer, not raise (Python calls it, e.g. for ``x in [None]``), so these take None.
COMPARE_WITH_ANYTHING = {"eq", "equal", "ne", "not_equal"}


@pytest.mark.parametrize("name", sorted(name for name, reason in TAKES_PYTHON_DATA.items()
                                        if reason == _LIFTS and name not in COMPARE_WITH_ANYTHING))
def test_lifting_ops_still_refuse_none_and_strings(name):
    fn = getattr(ops, name)
    for bad in (None, "abc"):
        for args in ([([_T, bad],)] if name == "add_n" else [(bad, _T), (_T, bad)]):
            _raises_type_or_value_error(f"{name} with {bad!r}", lambda: fn(*args))
