"""Every differentiable op against finite differences, in float64, over assorted shapes.

The fixed cases name the shapes someone thought of; the hypothesis tests let hypothesis draw
others (broadcasting pairs, size-1 axes, reduction axes; kept small, so finite differences stay
cheap). The last tests check the checker, ``tests/gradcheck.py``: it must perturb the array the
function reads whatever its memory layout, or every check on a view passes or fails for nothing.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minidp
from gradcheck import check_grad, numeric_grad

rng = np.random.default_rng(0)


def r(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def away_from_zero(*shape):
    """Values with |x| >= 0.2 so kinks (relu, abs, clip) are not hit by finite differences."""
    v = rng.uniform(0.2, 2.0, shape)
    return v * rng.choice([-1.0, 1.0], shape)


BROADCAST_PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((1,), (2, 3)),
    ((), (2, 2)),
]


@pytest.mark.parametrize("xs,ys", BROADCAST_PAIRS)
@pytest.mark.parametrize("op", [minidp.add, minidp.subtract, minidp.multiply, minidp.maximum, minidp.minimum])
def test_binary_ops(op, xs, ys):
    check_grad(op, r(*xs), r(*ys))


@pytest.mark.parametrize("xs,ys", BROADCAST_PAIRS)
def test_divide(xs, ys):
    check_grad(minidp.divide, r(*xs), away_from_zero(*ys))


@pytest.mark.parametrize("xs,ys", [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((2, 3), ())])
def test_pow_tensor_exponent(xs, ys):
    check_grad(minidp.pow, positive(*xs), r(*ys))


def test_pow_scalar_and_operators():
    check_grad(lambda x: x**3 + 2 * x - x / 4 + 1 - (3 - x) * 0.5 + 2 / (x * x + 1), r(3, 5))
    check_grad(lambda x: 2.0**x, r(4))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 1, 3)])
@pytest.mark.parametrize(
    "op,make",
    [
        (minidp.neg, r),
        (minidp.abs, away_from_zero),
        (minidp.exp, r),
        (minidp.log, positive),
        (minidp.sqrt, positive),
        (minidp.square, r),
        (minidp.tanh, r),
        (minidp.sigmoid, r),
        (minidp.relu, away_from_zero),
        (minidp.gelu, r),
        (lambda x: minidp.gelu(x, approximate=True), r),
        (lambda x: minidp.clip(x, -0.5, 0.7), away_from_zero),
        (lambda x: minidp.scale(x, 3.0, 1.0), r),
    ],
)
def test_unary_ops(op, make, shape):
    values = make(*shape)
    if op is not minidp.relu and make is away_from_zero:
        values = values[np.abs(np.abs(values) - 0.5) > 1e-3] if values.ndim == 1 else values
    check_grad(op, values)


def test_where():
    cond = minidp.to_tensor(rng.uniform(size=(3, 4)) > 0.5)
    check_grad(lambda x, y: minidp.where(cond, x, y), r(3, 4), r(1, 4))


@pytest.mark.parametrize(
    "xs,ys,tx,ty",
    [
        ((3, 4), (4, 5), False, False),
        ((4, 3), (4, 5), True, False),
        ((3, 4), (5, 4), False, True),
        ((2, 3, 4), (2, 4, 5), False, False),
        ((2, 3, 4), (4, 5), False, False),
        ((3, 4), (2, 4, 5), False, False),
        ((4,), (4, 5), False, False),
        ((3, 4), (4,), False, False),
        ((2, 1, 3, 4), (5, 4, 2), False, False),
    ],
)
def test_matmul(xs, ys, tx, ty):
    check_grad(lambda x, y: minidp.matmul(x, y, transpose_x=tx, transpose_y=ty), r(*xs), r(*ys))


@pytest.mark.parametrize(
    "axis,keepdim", [(None, False), (0, False), (1, True), ([0, 2], False), (-1, True), ([1], False)]
)
@pytest.mark.parametrize("op", [minidp.sum, minidp.mean, minidp.max, minidp.min, minidp.logsumexp])
def test_reductions(op, axis, keepdim):
    check_grad(lambda x: op(x, axis=axis, keepdim=keepdim), r(2, 3, 4))


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("op", [minidp.softmax, minidp.log_softmax])
def test_softmax_family(op, axis):
    check_grad(lambda x: op(x, axis=axis), r(3, 4) * 3)


def test_shape_ops():
    check_grad(lambda x: minidp.reshape(x, [4, -1]), r(2, 3, 2))
    check_grad(lambda x: minidp.transpose(x, [2, 0, 1]), r(2, 3, 4))
    check_grad(lambda x: minidp.flatten(x, 1), r(2, 3, 4))
    check_grad(lambda x: minidp.squeeze(x, 1), r(2, 1, 3))
    check_grad(lambda x: minidp.unsqueeze(x, [0, 2]), r(2, 3))
    check_grad(lambda x: minidp.expand(x, [2, 3, 4]), r(3, 1))
    check_grad(lambda x: x.T, r(2, 3))


def test_concat_stack_split():
    check_grad(lambda x, y: minidp.concat([x, y, x], axis=1), r(2, 3), r(2, 1))
    check_grad(lambda x, y: minidp.stack([x, y], axis=1), r(2, 3), r(2, 3))
    check_grad(lambda x: minidp.split(x, 2, axis=1)[1] * 2 + minidp.split(x, [1, -1], axis=1)[1][:, :2], r(3, 4))


@pytest.mark.parametrize(
    "index",
    [
        (slice(1, 3),),
        (slice(None), 1),
        (Ellipsis, slice(None, None, -1)),
        (np.array([0, 2, 0, 0]),),  # repeated indices scatter-add
        (np.array([1, 0]), np.array([2, 2])),
    ],
)
def test_indexing(index):
    check_grad(lambda x: x[index if len(index) > 1 else index[0]], r(3, 4))


def test_boolean_mask_indexing():
    mask = rng.uniform(size=(3, 4)) > 0.4
    check_grad(lambda x: x[minidp.to_tensor(mask)], r(3, 4))


def test_astype_passes_gradient_back_in_the_input_dtype():
    # finite differences cannot see through float32 rounding, so the gradient is checked exactly
    x = minidp.to_tensor(r(3), stop_gradient=False)
    w = r(3)
    (x.astype("float32") * minidp.to_tensor(w, "float32")).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.numpy(), w.astype(np.float32), rtol=0)
    assert x.astype("int64").stop_gradient


def test_pylayer_single_and_multi_output():
    class CubeAndSquare(minidp.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x, x * x

        @staticmethod
        def backward(ctx, g_cube, g_square):
            (x,) = ctx.saved_tensor()
            return g_cube * 3 * x * x + g_square * 2 * x

    class Tanh(minidp.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            y = minidp.tanh(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensor()
            return dy * (1 - minidp.square(y))

    check_grad(lambda x: Tanh.apply(x) * 2, r(3, 2))
    check_grad(lambda x: CubeAndSquare.apply(x)[0] + CubeAndSquare.apply(x)[1] * 2, r(4))
    check_grad(lambda x: CubeAndSquare.apply(x)[1], r(4))


# --- randomly drawn shapes ---------------------------------------------------------------------

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)
BINARY_OPS = [
    minidp.add,
    minidp.subtract,
    minidp.multiply,
    minidp.divide,
    minidp.maximum,
    minidp.minimum,
    minidp.logaddexp,
    minidp.hypot,
    minidp.fmax,
    minidp.fmin,
    minidp.atan2,
]
NEEDS_NONZERO_Y = (minidp.divide, minidp.atan2)


def values(shape, seed, avoid_zero=False):
    v = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    if avoid_zero:
        v = np.where(np.abs(v) < 0.3, 0.3 + np.abs(v), v)
    return v


@SETTINGS
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    op=st.sampled_from(BINARY_OPS),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_binary_ops(shapes, op, seed):
    x_shape, y_shape = shapes.input_shapes
    check_grad(op, values(x_shape, seed), values(y_shape, seed + 1, avoid_zero=op in NEEDS_NONZERO_Y))


@SETTINGS
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3),
    data=st.data(),
    op=st.sampled_from(
        [minidp.sum, minidp.mean, minidp.max, minidp.logsumexp, minidp.prod, minidp.amin, minidp.nansum]
    ),
    keepdim=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_reductions_over_drawn_axes(shape, data, op, keepdim, seed):
    axes = data.draw(
        st.lists(
            st.integers(-len(shape), len(shape) - 1),
            min_size=1,
            max_size=len(shape),
            unique_by=lambda a: a % len(shape),
        )
    )
    axis = axes[0] if len(axes) == 1 else axes
    check_grad(lambda x: op(x, axis=axis, keepdim=keepdim), values(shape, seed))


# --- the finite-difference helper itself ---------------------------------------------------------
def test_numeric_grad_of_a_transposed_view_perturbs_the_view():
    base = np.arange(1.0, 7.0).reshape(2, 3)
    x = minidp.Tensor(base.T)
    scale = minidp.Tensor(np.arange(3.0, 9.0).reshape(3, 2))
    assert not x._data.flags.c_contiguous
    grad = numeric_grad(lambda: x * x * scale, x)
    np.testing.assert_allclose(grad, 2 * base.T * scale.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), base.T)


def test_numeric_grad_of_a_strided_slice_perturbs_only_the_slice():
    base = np.arange(1.0, 13.0).reshape(3, 4)
    x = minidp.Tensor(base[::2, 1::2])
    grad = numeric_grad(lambda: x * x, x)
    np.testing.assert_allclose(grad, 2 * base[::2, 1::2], rtol=1e-6)
    np.testing.assert_array_equal(base, np.arange(1.0, 13.0).reshape(3, 4))


def test_check_grad_accepts_a_transposed_input():
    rng = np.random.default_rng(0)
    check_grad(lambda a, b: minidp.matmul(a, b), rng.normal(size=(4, 3)).T, rng.normal(size=(4, 2)))


def test_check_grad_catches_a_wrong_gradient_on_a_transposed_input():
    class Wrong(minidp.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    with pytest.raises(AssertionError, match="differs from finite differences"):
        check_grad(Wrong.apply, np.ones((3, 2)).T)


def test_numeric_grad_refuses_a_read_only_array():
    x = minidp.Tensor(np.broadcast_to(np.ones(3), (2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        numeric_grad(lambda: x * 2, x)
