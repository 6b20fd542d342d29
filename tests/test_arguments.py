"""Argument checks at the op and layer boundary (the checks of ``minidp/core/op_util.py`` that every
op and layer calls).

Bad operands and arguments raise TypeError/ValueError naming what was given and what was
expected; a Hypothesis sweep over random (often invalid) arguments checks that every call either
returns NumPy's result or raises one of those two, never an AttributeError/IndexError from inside.

Then every public op refuses a non-Tensor where it needs a Tensor, with TypeError/ValueError.
That sweep walks ``minidp.ops.__all__``. Each function whose first parameter is annotated as a
Tensor (or a sequence of Tensors) is called with a nested list, None and a string in that place,
and, when its second parameter is a Tensor operand too, in that place as well; the ops that take
their tensors as ``*args`` get the same treatment through explicit calls. Every other public
function must be in ``TAKES_PYTHON_DATA`` with the reason it takes Python data first, so a new op
is either swept or explicitly excused. The error must be a TypeError or ValueError, never an
AttributeError, IndexError or KeyError from inside the op.
"""

import collections
import json
import inspect
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minidp
from minidp import nn, ops

T = minidp.to_tensor


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: minidp.reshape([1, 2, 3], [3]), TypeError, "reshape: x must be a Tensor, got list"),
        (
            lambda: minidp.matmul(T(np.ones((2, 2))), [[1.0, 0.0], [0.0, 1.0]]),
            TypeError,
            "matmul: y must be a Tensor, got list",
        ),
        (lambda: minidp.sum((1, 2)), TypeError, "sum: x must be a Tensor, got tuple"),
        (lambda: minidp.transpose(np.ones((2, 3)), [1, 0]), TypeError, "transpose: x must be a Tensor, got ndarray"),
        (lambda: minidp.concat([T(np.ones(2)), [1.0]]), TypeError, r"concat: x\[1\] must be a Tensor, got list"),
        (lambda: minidp.exp([1.0]), TypeError, "exp: x must be a Tensor, got list"),
        (lambda: nn.Linear(3, 2.5), TypeError, r"Linear: out_features must be a positive int, got 2.5 \(float\)"),
        (lambda: nn.Linear(True, 2), TypeError, r"Linear: in_features must be a positive int, got True \(bool\)"),
        (lambda: nn.Linear(0, 2), ValueError, "Linear: in_features must be a positive int, got 0"),
        (lambda: nn.Embedding(10, "4"), TypeError, "Embedding: embedding_dim must be a positive int, got '4'"),
        (lambda: nn.Conv2D(3.0, 4, 3), TypeError, "Conv2D: in_channels must be a positive int, got 3.0"),
        (lambda: nn.Conv2D(3, 4, True), ValueError, "Conv2D: kernel_size must be a positive int"),
        (lambda: nn.BatchNorm1D(2.0), TypeError, "BatchNorm1D: num_features must be a positive int, got 2.0"),
        (lambda: nn.LayerNorm([4, True]), TypeError, "LayerNorm: each normalized_shape entry must be a positive int"),
        (lambda: minidp.reshape(T(np.ones(3)), [1.5]), TypeError, r"shape entry must be an int, got 1.5 \(float\)"),
        (lambda: minidp.reshape(T(np.ones(3)), ["3"]), TypeError, r"shape entry must be an int, got '3' \(str\)"),
        (lambda: minidp.reshape(T(np.ones(3)), [True, 3]), TypeError, r"must be an int, got True \(bool\)"),
        (lambda: minidp.reshape(T(np.ones(3)), T(np.array([3.0]))), TypeError, "integer dtype, got float64"),
        (lambda: minidp.reshape(T(np.arange(3)), [0, 0, 0]), ValueError, "x has only 1 axes; got shape"),
        (lambda: T(np.ones((2, 3))).sum(axis=True), TypeError, r"axis must be an int, got True \(bool\)"),
        (lambda: T(np.ones((2, 3))).sum(axis=[0, 1.0]), TypeError, r"axis must be an int, got 1.0 \(float\)"),
        (lambda: minidp.stack([T(np.ones(2))] * 2, axis=True), TypeError, "axis must be an int, got True"),
        (lambda: minidp.stack([T(np.ones(2))] * 2, axis=3), ValueError, "axis 3 is out of range"),
        (lambda: minidp.unsqueeze(T(np.ones((2, 3))), 10), ValueError, r"expected an int in \[-3, 2\]"),
        (lambda: minidp.unsqueeze(T(np.ones((2, 3))), True), TypeError, "each axis must be an int, got True"),
        (
            lambda: nn.functional.batch_norm(T(np.ones((2, 3, 4), "complex64")), minidp.zeros([3]), minidp.ones([3])),
            TypeError,
            r"batch_norm: x must be a floating tensor, got complex64; cast it with .astype\('float32'\)",
        ),
        (
            lambda: nn.functional.batch_norm(minidp.ones([2, 3]), minidp.zeros([3], "int64"), minidp.ones([3])),
            TypeError,
            "batch_norm: running_mean must be a floating tensor, got int64",
        ),
        (
            lambda: nn.functional.upsample(minidp.ones([1, 1, 2, 2]), scale_factor=2, mode=T([1])),
            TypeError,
            "interpolate: mode must be a string such as 'nearest' or 'bilinear', got Tensor",
        ),
        (
            lambda: minidp.zeros([3]).uniform_(min=float("nan")),
            ValueError,
            "uniform_: min must be less than max, got min=nan and max=1.0",
        ),
        (lambda: minidp.zeros([3]).uniform_(max="1"), TypeError, r"uniform_: max must be a number, got '1' \(str\)"),
        (lambda: minidp.zeros([3], "int32").uniform_(), TypeError, "uniform_: x must be a floating tensor, got int32"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_bad_arguments_raise_naming_given_and_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_uniform_takes_any_bounds_as_paddle_does():
    """paddle.uniform draws ``min + (max - min) * u`` for any bounds (NumPy refuses infinite ones);
    Tensor.uniform_ needs min < max but takes infinite bounds."""
    assert np.isnan(minidp.uniform([4], min=float("nan")).numpy()).all()
    assert np.isnan(minidp.zeros([4]).uniform_(min=float("-inf")).numpy()).all()
    assert (minidp.zeros([4], "float64").uniform_(max=float("inf")).numpy() == np.inf).all()
    reversed_bounds = minidp.uniform([1000], "float64", min=2.0, max=1.0).numpy()
    assert (reversed_bounds > 1.0).all() and (reversed_bounds <= 2.0).all()
    minidp.seed(7)
    drawn = minidp.uniform([5], "float64", min=-0.5, max=3.0).numpy()
    minidp.seed(7)
    np.testing.assert_array_equal(minidp.zeros([5], "float64").uniform_(min=-0.5, max=3.0).numpy(), drawn)


def test_integer_like_arguments_are_still_accepted():
    x = T(np.arange(6.0).reshape(2, 3))
    assert minidp.reshape(x, [np.int64(3), T(np.array(2))]).shape == [3, 2]
    assert minidp.reshape(x, T(np.array([6]))).shape == [6]
    assert minidp.reshape(x, [0, -1]).shape == [2, 3]
    np.testing.assert_array_equal(x.sum(axis=np.int64(1)).numpy(), [3.0, 12.0])
    assert minidp.unsqueeze(x, [0, -1]).shape == [1, 2, 3, 1]
    assert nn.Linear(np.int64(3), 2).weight.shape == [3, 2]


# --- the sweep: every call returns NumPy's result or raises TypeError/ValueError ---------------

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)
JUNK = st.sampled_from([True, False, 1.5, "2", None, [1.5], [True], (), object()])
outcomes = collections.Counter()


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def arrays(max_dims=3, min_dims=0):
    return hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=3),
        elements=st.floats(-4, 4),
    )


def int_or_junk(lo, hi):
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), JUNK)


def axes_or_junk(lo=-4, hi=4):
    return st.one_of(st.none(), int_or_junk(lo, hi), st.lists(int_or_junk(lo, hi), max_size=3))


def operand(array):
    """Mostly the Tensor of ``array``, sometimes something that is not a Tensor."""
    return st.one_of(st.just(T(array)), st.just(T(array)), st.just(T(array)), JUNK, st.just(array.tolist()))


def check(op, call, reference):
    """Run ``call``; it must raise TypeError/ValueError or agree with ``reference()``.

    A reference that raises means the arguments are invalid, so the call must have raised too.
    """
    try:
        got = call()
    except (TypeError, ValueError):
        outcomes[op, "rejected"] += 1
        return
    outcomes[op, "returned"] += 1
    expected = reference()
    got = got.numpy() if isinstance(got, minidp.Tensor) else got
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def _axes_tuple(axis, ndim):
    """Paddle's axis rules in NumPy terms: ints only, a 0-d tensor takes axis 0 or -1."""
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    assert all(_is_int(a) for a in axes), f"accepted a non-int axis {axis!r}"
    if ndim == 0:
        assert all(a in (0, -1) for a in axes)
        return ()
    return tuple(axes)


def _reshape_reference(x, shape):
    assert all(_is_int(s) for s in shape), f"accepted a non-int shape entry in {shape!r}"
    return x.reshape([x.shape[i] if s == 0 else s for i, s in enumerate(shape)])


@SETTINGS
@given(x=arrays(), data=st.data())
def test_reshape_sweep(x, data):
    shape = data.draw(
        st.one_of(
            st.lists(int_or_junk(-2, 4), max_size=4),
            st.sampled_from([[-1], [x.size], list(x.shape[::-1]), [0] * x.ndim + [1]]),
        )
    )
    check("reshape", lambda: minidp.reshape(data.draw(operand(x)), shape), lambda: _reshape_reference(x, shape))


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
@SETTINGS
@given(x=arrays(), data=st.data())
def test_reduction_sweep(op, x, data):
    axis = data.draw(axes_or_junk())
    xs = data.draw(operand(x))

    def reference():
        if axis is None or axis == [] or axis == ():
            return getattr(np, op)(x)
        axes = _axes_tuple(axis, x.ndim)
        return getattr(np, op)(x, axis=axes) if axes else x

    check(op, lambda: getattr(minidp, op)(xs, axis=axis), reference)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_transpose_sweep(x, data):
    perm = data.draw(
        st.one_of(st.lists(int_or_junk(-3, 3), max_size=4), JUNK, st.permutations(range(x.ndim)).map(list))
    )
    xs = data.draw(operand(x))
    check(
        "transpose",
        lambda: minidp.transpose(xs, perm),
        lambda: np.transpose(x, _axes_tuple(perm, max(x.ndim, 1)) if x.ndim else None),
    )


@SETTINGS
@given(x=arrays(max_dims=2), data=st.data())
def test_matmul_sweep(x, data):
    y = data.draw(st.one_of(arrays(max_dims=2), hnp.arrays(np.float64, x.shape[::-1], elements=st.floats(-4, 4))))
    xs, ys = data.draw(operand(x)), data.draw(operand(y))
    check("matmul", lambda: minidp.matmul(xs, ys), lambda: np.matmul(x, y))


@pytest.mark.parametrize("op", ["concat", "stack"])
@SETTINGS
@given(x=arrays(max_dims=2), data=st.data())
def test_join_sweep(op, x, data):
    others = data.draw(st.lists(st.one_of(st.just(x), arrays(max_dims=2)), max_size=2))
    parts = [x] + others
    inputs = [data.draw(operand(p)) for p in parts]
    axis = data.draw(int_or_junk(-3, 3))

    def reference():
        assert _is_int(axis)
        return getattr(np, "concatenate" if op == "concat" else op)(parts, axis=axis)

    check(op, lambda: getattr(minidp, op)(inputs, axis=axis), reference)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_unsqueeze_sweep(x, data):
    axis = data.draw(st.one_of(int_or_junk(-5, 5), st.lists(int_or_junk(-5, 5), max_size=2)))
    xs = data.draw(operand(x))

    def reference():
        out = x
        for a in axis if isinstance(axis, (list, tuple)) else [axis]:
            assert _is_int(a)
            out = np.expand_dims(out, a)
        return out

    check("unsqueeze", lambda: minidp.unsqueeze(xs, axis), reference)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_flatten_sweep(x, data):
    start, stop = data.draw(int_or_junk(-4, 4)), data.draw(int_or_junk(-4, 4))
    xs = data.draw(operand(x))

    def reference():
        if x.ndim == 0:
            return x.reshape(1)
        a, b = (v % x.ndim for v in _axes_tuple([start, stop], x.ndim))
        assert -x.ndim <= min(start, stop) and max(start, stop) < x.ndim and a <= b
        return x.reshape(x.shape[:a] + (int(np.prod(x.shape[a : b + 1])),) + x.shape[b + 1 :])

    check("flatten", lambda: minidp.flatten(xs, start, stop), reference)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_exp_and_add_sweep(x, data):
    xs = data.draw(operand(x))
    check("exp", lambda: minidp.exp(xs), lambda: np.exp(x))
    y = data.draw(st.one_of(st.floats(-4, 4), arrays()))
    check("add", lambda: minidp.add(T(x), T(y) if isinstance(y, np.ndarray) else y), lambda: x + y)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_squeeze_sweep(x, data):
    axis = data.draw(st.one_of(st.none(), int_or_junk(-4, 4), st.lists(int_or_junk(-4, 4), min_size=1, max_size=3)))
    xs = data.draw(operand(x))

    def reference():
        if axis is None:
            return np.squeeze(x)
        axes = _axes_tuple(axis, x.ndim)
        assert all(-max(x.ndim, 1) <= a < max(x.ndim, 1) for a in axes)
        return np.squeeze(x, tuple({a % x.ndim for a in axes if x.shape[a] == 1}))

    check("squeeze", lambda: minidp.squeeze(xs, axis), reference)


@SETTINGS
@given(x=arrays(min_dims=1), data=st.data())
def test_cumsum_sweep(x, data):
    axis = data.draw(st.one_of(st.none(), int_or_junk(-4, 4)))
    xs = data.draw(operand(x))

    def reference():
        assert axis is None or _is_int(axis)
        return np.cumsum(x, axis=axis)

    check("cumsum", lambda: minidp.cumsum(xs, axis=axis), reference)


@SETTINGS
@given(num=int_or_junk(-1, 4), dim=int_or_junk(-1, 4), ids=st.lists(st.integers(-1, 4), max_size=4))
def test_embedding_sweep(num, dim, ids):
    try:
        layer = nn.Embedding(num, dim)
    except (TypeError, ValueError):
        outcomes["Embedding", "rejected"] += 1
        return
    assert _is_int(num) and _is_int(dim) and min(num, dim) > 0
    index = np.array(ids, dtype=np.int64)

    def reference():
        assert ((0 <= index) & (index < num)).all()
        return layer.weight.numpy()[index]

    check("Embedding", lambda: layer(T(index)), reference)


@SETTINGS
@given(in_features=int_or_junk(-1, 4), out_features=int_or_junk(-1, 4), batch=st.integers(0, 3))
def test_linear_sweep(in_features, out_features, batch):
    try:
        layer = nn.Linear(in_features, out_features)
    except (TypeError, ValueError):
        outcomes["Linear", "rejected"] += 1
        return
    assert _is_int(in_features) and _is_int(out_features) and min(in_features, out_features) > 0
    x = np.linspace(-1, 1, batch * in_features, dtype=np.float32).reshape(batch, in_features)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    check("Linear", lambda: layer(T(x)), lambda: x @ w + b)


def test_sweep_exercised_both_outcomes():
    """Runs after the sweeps (pytest keeps file order): each op both returned and rejected."""
    ops = {op for op, _ in outcomes}
    assert ops, "run this test together with the sweeps above it"
    for op in sorted(ops):
        print(f"{op}: returned {outcomes[op, 'returned']}, rejected {outcomes[op, 'rejected']}")
        assert outcomes[op, "returned"] > 0 and outcomes[op, "rejected"] > 0, op


# --- every public op: a non-Tensor operand raises TypeError/ValueError -------------------------

TENSOR_ANNOTATIONS = {"Tensor", "Sequence[Tensor]"}
BAD_OPERANDS = [[[1.0, 2.0]], None, "abc"]

_LIFTS = "lifts Python numbers and arrays into tensors, as the operator it backs does (x * 0.5, 1 - x)"
_BUILDS = "builds a tensor from Python data or a NumPy array: that is its job"
_SIZES = "takes shapes, sizes or scalars, not tensors"
TAKES_PYTHON_DATA = {
    **dict.fromkeys(
        [
            "add",
            "subtract",
            "multiply",
            "divide",
            "sub",
            "mul",
            "div",
            "true_divide",
            "floor_divide",
            "remainder",
            "mod",
            "floor_mod",
            "pow",
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "atan2",
            "copysign",
            "heaviside",
            "hypot",
            "logaddexp",
            "ldexp",
            "nextafter",
            "equal",
            "not_equal",
            "greater_than",
            "greater_equal",
            "less_than",
            "less_equal",
            "eq",
            "ne",
            "gt",
            "ge",
            "lt",
            "le",
            "greater",
            "less",
            "where",
            "lerp",
            "gcd",
            "lcm",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
        ],
        _LIFTS,
    ),
    "add_n": _LIFTS,
    **dict.fromkeys(["to_tensor", "as_tensor", "asarray", "assign", "from_numpy"], _BUILDS),
    **dict.fromkeys(
        [
            "zeros",
            "ones",
            "empty",
            "full",
            "rand",
            "randn",
            "standard_normal",
            "uniform",
            "normal",
            "log_normal",
            "randint",
            "randperm",
            "eye",
            "arange",
            "linspace",
            "logspace",
            "tril_indices",
            "triu_indices",
            "seed",
            "broadcast_shape",
            "broadcast_shapes",
        ],
        _SIZES,
    ),
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
    return sum(
        1
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
    )


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
    unaccounted = [
        name for name in PUBLIC if name not in SWEPT and name not in TAKES_PYTHON_DATA and name not in VARARG_CALLS
    ]
    assert unaccounted == []
    assert set(TAKES_PYTHON_DATA) & set(SWEPT) == {"lerp"}  # lerp is annotated Tensor but lifts like the rest
    assert set(TAKES_PYTHON_DATA) <= set(PUBLIC)
    assert len(SWEPT) >= 250


def test_the_sweep_covers_every_op_family():
    modules = {getattr(ops, name).__module__.rsplit(".", 1)[-1] for name in SWEPT}
    assert {
        "shape",
        "indexing",
        "linalg",
        "search",
        "manipulation",
        "reduction",
        "statistics",
        "cumulative",
        "creation",
        "compare",
        "ops",
        "unary",
        "binary",
        "sampling",
        "inplace",
    } <= modules


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


@pytest.mark.parametrize(
    "call",
    [
        lambda v: ops.topk(_T, v),
        lambda v: ops.kthvalue(_T, v),
        lambda v: ops.chunk(_T, v),
        lambda v: ops.split(_T, v),
        lambda v: ops.split(_T, [v, 1]),
        lambda v: ops.repeat_interleave(_T, v),
        lambda v: ops.unfold(_T, 0, v, 1),
        lambda v: ops.unfold(_T, 0, 1, v),
        lambda v: ops.rot90(_T, v),
        lambda v: ops.diff(_T, v),
        lambda v: ops.vander(_T[0], v),
        lambda v: ops.histogram(_T, v),
        lambda v: ops.histogram_bin_edges(_T, v),
        lambda v: ops.unstack(_T, 0, v),
        lambda v: ops.tensor_split(_T, v),
        lambda v: ops.narrow(_T, 0, v, 1),
        lambda v: ops.narrow(_T, 0, 0, v),
        lambda v: ops.diagonal(_T, v),
        lambda v: ops.tril(_T, v),
        lambda v: ops.triu(_T, v),
        lambda v: ops.trace(_T, v),
        lambda v: ops.diag_embed(_T, v),
        lambda v: minidp.linalg.matrix_power(_T, v),
        lambda v: ops.roll(_T, v),
        lambda v: ops.select_scatter(_T, _T[0], 0, v),
        lambda v: ops.gather(_T, _I[0], v),
        lambda v: ops.shard_index(_I, v, 2, 0),
        lambda v: ops.shard_index(_I, 4, v, 0),
        lambda v: ops.tensordot(_T, _T, v),
    ],
)
def test_integer_arguments_refuse_bools_floats_and_strings(call):
    for bad in (1.5, True, "2", 1.0):
        with pytest.raises(TypeError, match="must be an int"):
            call(bad)


# ``x == None`` must answer, not raise (Python calls it, e.g. for ``x in [None]``), so these take None.
COMPARE_WITH_ANYTHING = {"eq", "equal", "ne", "not_equal"}


@pytest.mark.parametrize(
    "name",
    sorted(
        name for name, reason in TAKES_PYTHON_DATA.items() if reason == _LIFTS and name not in COMPARE_WITH_ANYTHING
    ),
)
def test_lifting_ops_still_refuse_none_and_strings(name):
    fn = getattr(ops, name)
    for bad in (None, "abc"):
        for args in [([_T, bad],)] if name == "add_n" else [(bad, _T), (_T, bad)]:
            _raises_type_or_value_error(f"{name} with {bad!r}", lambda: fn(*args))


# --- Paddle 3.3.1's verdicts (tests/fixtures/paddle_arguments.json, tools/record_paddle_arguments.py) ---

PADDLE_VERDICTS = json.loads((pathlib.Path(__file__).parent / "fixtures" / "paddle_arguments.json").read_text())


@pytest.mark.parametrize("line", sorted(PADDLE_VERDICTS["cases"]))
def test_ops_refuse_and_accept_what_paddle_does(line):
    """Where Paddle raises, minidp raises TypeError or ValueError (Paddle's class may differ: it
    reports a non-Tensor operand as ValueError, minidp as TypeError); where Paddle returns, minidp
    returns the same dtype and shape."""
    verdict = PADDLE_VERDICTS["cases"][line]
    scope = {"P": minidp, "F": nn.functional, "np": np}
    if "raises" in verdict:
        with pytest.raises((TypeError, ValueError)):
            eval(line, scope)  # noqa: S307 -- the fixed lines of the recorded fixture
        return
    out = eval(line, scope)  # noqa: S307
    assert (str(out.dtype), out.shape) == (verdict["dtype"], verdict["shape"])
