"""Argument checks at the op and layer boundary.

Bad operands and arguments raise TypeError/ValueError naming what was given and what was
expected; a Hypothesis sweep over random (often invalid) arguments checks that every call either
returns NumPy's result or raises one of those two, never an AttributeError/IndexError from inside.
"""
import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minidp
from minidp import nn

T = minidp.to_tensor


@pytest.mark.parametrize("call, error, message", [
    (lambda: minidp.reshape([1, 2, 3], [3]), TypeError, "reshape: x must be a Tensor, got list"),
    (lambda: minidp.matmul(T(np.ones((2, 2))), [[1.0, 0.0], [0.0, 1.0]]), TypeError,
     "matmul: y must be a Tensor, got list"),
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
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_arguments_raise_naming_given_and_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


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
    return hnp.arrays(np.float64, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=3),
                      elements=st.floats(-4, 4))


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
    shape = data.draw(st.one_of(st.lists(int_or_junk(-2, 4), max_size=4),
                                st.sampled_from([[-1], [x.size], list(x.shape[::-1]), [0] * x.ndim + [1]])))
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
    perm = data.draw(st.one_of(st.lists(int_or_junk(-3, 3), max_size=4), JUNK,
                               st.permutations(range(x.ndim)).map(list)))
    xs = data.draw(operand(x))
    check("transpose", lambda: minidp.transpose(xs, perm),
          lambda: np.transpose(x, _axes_tuple(perm, max(x.ndim, 1)) if x.ndim else None))


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
        return x.reshape(x.shape[:a] + (int(np.prod(x.shape[a:b + 1])),) + x.shape[b + 1:])

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
