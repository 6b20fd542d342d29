"""In-place `_` forms (``minidp/ops/inplace.py``): Paddle's rules for leaves, buffers shared with views,
and graphs; the forms of the index, scatter and diagonal ops, their gradients, and ``copy_``; and
``inplace_version``, through which backward sees updates made after an op read its inputs."""

import gc
import weakref

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from gradcheck import check_grad
from minidp.ops.inplace import INPLACE_ALIASES, INPLACE_OPS


def data(values, dtype="float64"):
    return minidp.to_tensor(np.asarray(values, dtype=dtype))


def leaf(values):
    return minidp.to_tensor(np.asarray(values, dtype="float64"), stop_gradient=False)


UNARY_NAMES = [
    n
    for n in (
        "abs",
        "acos",
        "asin",
        "atan",
        "ceil",
        "cos",
        "cosh",
        "erf",
        "erfinv",
        "exp",
        "expm1",
        "floor",
        "frac",
        "log",
        "log10",
        "log1p",
        "log2",
        "logit",
        "neg",
        "reciprocal",
        "round",
        "rsqrt",
        "sigmoid",
        "sin",
        "sinh",
        "sqrt",
        "square",
        "tan",
        "tanh",
        "trunc",
        "asinh",
        "atanh",
        "cumsum",
        "cumprod",
        "flatten",
        "squeeze",
    )
]
BINARY_NAMES = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "pow",
    "remainder",
    "mod",
    "floor_mod",
    "floor_divide",
    "hypot",
    "copysign",
    "equal",
    "not_equal",
    "less_than",
    "less_equal",
    "greater_than",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
]


@pytest.mark.parametrize("name", UNARY_NAMES)
def test_unary_inplace_matches_the_op_and_writes_the_same_buffer(name):
    values = np.array([[0.3, 0.45], [0.6, 0.75]])
    x = data(values)
    view = x[0]
    expected = getattr(minidp, name)(data(values)).numpy()
    assert getattr(x, f"{name}_")() is x
    np.testing.assert_allclose(x.numpy(), expected)
    if expected.shape == values.shape:
        np.testing.assert_allclose(view.numpy(), expected[0])
    np.testing.assert_allclose(getattr(minidp, f"{name}_")(data(values)).numpy(), expected)


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_binary_inplace_matches_the_op(name):
    a, b = np.array([0.5, 1.5, 2.5]), np.array([1.5, 1.5, 0.5])
    expected = getattr(minidp, name)(data(a), data(b))
    x = data(a)
    assert getattr(x, f"{name}_")(data(b)) is x
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    assert x.dtype == expected.dtype


def test_every_listed_op_and_alias_has_its_inplace_form_as_function_and_method():
    for name in list(INPLACE_OPS) + list(INPLACE_ALIASES):
        assert callable(getattr(minidp, f"{name}_")) and callable(getattr(minidp.Tensor, f"{name}_"))
    assert minidp.sub_ is minidp.subtract_ and minidp.Tensor.clamp_ is minidp.Tensor.clip_


def test_arguments_pass_through():
    x = data([-2.0, 0.5, 3.0])
    x.clip_(-1.0, 1.0)
    np.testing.assert_array_equal(x.numpy(), [-1.0, 0.5, 1.0])
    x.scale_(2.0, bias=1.0)
    np.testing.assert_array_equal(x.numpy(), [-1.0, 2.0, 3.0])
    x.lerp_(data([1.0, 2.0, 5.0]), 0.5)
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0, 4.0])
    x.reshape_([3, 1])
    assert x.shape == [3, 1]
    x.cast_("int64")
    assert x.dtype == np.int64


def test_leaf_that_requires_grad_refuses_inplace_updates_unless_gradients_are_off():
    p = minidp.nn.Parameter(np.ones(3, np.float32))
    for update in (
        lambda: p.add_(minidp.ones([3])),
        lambda: p.exp_(),
        lambda: p.zero_(),
        lambda: p.fill_(2.0),
        lambda: p.uniform_(),
        lambda: minidp.tanh_(p),
        lambda: F.relu_(p),
    ):
        with pytest.raises(ValueError, match="no_grad"):
            update()
    with minidp.no_grad():
        p.scale_(3.0)
        p.add_(minidp.ones([3]))
    np.testing.assert_array_equal(p.numpy(), [4.0, 4.0, 4.0])
    assert not p.stop_gradient and p.is_leaf


def test_inplace_in_a_graph_rebinds_so_saved_arrays_keep_their_old_values():
    w = leaf([1.0, 2.0])
    h = w * 2
    y = h * h  # multiply saved h's array for its backward
    h.add_(1.0)
    np.testing.assert_array_equal(h.numpy(), [3.0, 5.0])
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * np.array([1.0, 2.0]))
    w.clear_grad()
    g = w * 3
    g.exp_()
    g.multiply_(g)  # the operand is the tensor being updated
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * np.exp(6 * np.array([1.0, 2.0])))


def test_a_data_tensor_updated_with_a_tensor_that_needs_grad_joins_the_graph():
    w = leaf([3.0, 4.0])
    x = data([1.0, 2.0])
    assert x.multiply_(w) is x
    assert not x.stop_gradient and not x.is_leaf
    x.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])


def test_fill_style_updates():
    x = data(np.ones((200, 50)), "float32")
    view = x[0]
    x.zero_()
    assert not view.numpy().any()
    x.fill_(2.5)
    assert (view.numpy() == 2.5).all()
    minidp.seed(1)
    x.uniform_(-2.0, -1.0)
    assert x.dtype == np.float32 and -2.0 <= x.numpy().min() and x.numpy().max() < -1.0
    x.normal_(5.0, 0.5)
    assert abs(x.numpy().mean() - 5.0) < 0.05 and abs(x.numpy().std() - 0.5) < 0.05
    assert x.dtype == np.float32


def test_functional_inplace_activations():
    for function, expected in [
        (F.relu_, [0.0, 2.0]),
        (F.leaky_relu_, [-0.01, 2.0]),
        (F.hardtanh_, [-1.0, 1.0]),
        (F.thresholded_relu_, [0.0, 2.0]),
        (F.elu_, [np.expm1(-1.0), 2.0]),
        (F.tanh_, np.tanh([-1.0, 2.0])),
        (F.softmax_, np.exp([-1, 2]) / np.exp([-1, 2]).sum()),
        (lambda t: F.silu(t, inplace=True), [-1 / (1 + np.e), 2 / (1 + np.exp(-2))]),
    ]:
        x = data([-1.0, 2.0])
        assert function(x) is x
        np.testing.assert_allclose(x.numpy(), expected)


def test_non_tensor_target_is_a_type_error():
    with pytest.raises(TypeError, match="Tensor"):
        minidp.exp_(np.ones(2))


def test_a_graph_result_updated_under_no_grad_keeps_its_node_and_saved_arrays():
    w = leaf([1.0, 2.0])
    h = w * 2
    y = h * h
    with minidp.no_grad():
        h.add_(10.0)
    np.testing.assert_array_equal(h.numpy(), [12.0, 14.0])
    assert not h.stop_gradient and not h.is_leaf
    z = h * 3  # a reader after the update: it and y back-propagate through h's one node, once
    (y + z).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * np.array([1.0, 2.0]) + 6)


def _arange(*shape):
    return np.arange(np.prod(shape), dtype="float64").reshape(shape)


INPLACE_CASES = [
    ("tril_", lambda x: x.tril_(), lambda a: np.tril(a)),
    ("triu_", lambda x: x.triu_(1), lambda a: np.triu(a, 1)),
    ("t_", lambda x: x.t_(), lambda a: a.T),
    (
        "masked_fill_",
        lambda x: x.masked_fill_(minidp.to_tensor([[True, False, True]] * 2), -1.0),
        lambda a: np.where([[True, False, True]] * 2, -1.0, a),
    ),
    (
        "index_fill_",
        lambda x: x.index_fill_(minidp.to_tensor([0]), 0, -1.0),
        lambda a: np.concatenate([np.full((1, 3), -1.0), a[1:]]),
    ),
    (
        "index_add_",
        lambda x: x.index_add_(minidp.to_tensor([1]), 0, minidp.ones([1, 3], "float64")),
        lambda a: a + np.array([[0.0], [1.0]]),
    ),
    (
        "index_put_",
        lambda x: x.index_put_((minidp.to_tensor([0]), minidp.to_tensor([2])), minidp.to_tensor(9.0)),
        lambda a: np.where(np.arange(6).reshape(2, 3) == 2, 9.0, a),
    ),
    (
        "scatter_",
        lambda x: x.scatter_(minidp.to_tensor([1]), minidp.to_tensor([[7.0, 8.0, 9.0]], dtype="float64")),
        lambda a: np.array([a[0], [7.0, 8.0, 9.0]]),
    ),
    (
        "scatter_add_",
        lambda x: x.scatter_add_(0, minidp.to_tensor([[0, 1, 0]]), minidp.ones([1, 3], "float64")),
        lambda a: a + np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]),
    ),
    (
        "put_along_axis_",
        lambda x: x.put_along_axis_(minidp.to_tensor([[2], [0]]), 5.0, 1),
        lambda a: np.array([[a[0, 0], a[0, 1], 5.0], [5.0, a[1, 1], a[1, 2]]]),
    ),
    (
        "masked_scatter_",
        lambda x: x.masked_scatter_(
            minidp.to_tensor([[True, False, False]] * 2), minidp.to_tensor([10.0, 20.0], dtype="float64")
        ),
        lambda a: np.array([[10.0, a[0, 1], a[0, 2]], [20.0, a[1, 1], a[1, 2]]]),
    ),
    (
        "renorm_",
        lambda x: x.renorm_(2.0, 0, 1.0),
        lambda a: a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1.0),
    ),
    (
        "fill_diagonal_tensor_",
        lambda x: x.fill_diagonal_tensor_(minidp.to_tensor([7.0, 8.0], dtype="float64")),
        lambda a: np.where(np.eye(2, 3, dtype=bool), np.array([[7.0], [8.0]]), a),
    ),
]


@pytest.mark.parametrize("name, update, expected", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_forms_update_the_tensor(name, update, expected):
    values = _arange(2, 3) + 1.0
    x = minidp.to_tensor(values)
    out = update(x)
    assert out is x
    np.testing.assert_allclose(x.numpy(), expected(values), rtol=1e-6)  # renorm divides by norm + 1e-7


def test_inplace_forms_are_top_level_functions_too():
    for name in (
        "baddbmm_",
        "index_add_",
        "index_fill_",
        "index_put_",
        "masked_fill_",
        "masked_scatter_",
        "renorm_",
        "scatter_",
        "scatter_add_",
        "t_",
        "tril_",
        "triu_",
        "where_",
    ):
        assert getattr(minidp, name) is getattr(minidp.Tensor, name), name
    x = minidp.to_tensor(_arange(2, 2))
    assert minidp.tril_(x) is x
    np.testing.assert_array_equal(x.numpy(), [[0.0, 0.0], [2.0, 3.0]])


@pytest.mark.parametrize("name, update, expected", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_forms_pass_gradients(name, update, expected):
    check_grad(lambda x: update(x * 1.0), _arange(2, 3) + 1.0)


def test_baddbmm_in_place():
    rng = np.random.default_rng(0)
    inp, a, b = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 3, 2))
    x = minidp.to_tensor(inp)
    assert minidp.baddbmm_(x, minidp.to_tensor(a), minidp.to_tensor(b), beta=0.5, alpha=2.0) is x
    np.testing.assert_allclose(x.numpy(), 0.5 * inp + 2.0 * a @ b, rtol=1e-12)
    check_grad(lambda i, p, q: minidp.baddbmm_(i * 1.0, p, q, 0.5, 2.0), inp, a, b)


def test_where_in_place_writes_into_x():
    cond = minidp.to_tensor([True, False, True])
    x, y = minidp.to_tensor([1.0, 2.0, 3.0]), minidp.to_tensor([9.0, 9.0, 9.0])
    assert minidp.where_(cond, x, y) is x
    np.testing.assert_allclose(x.numpy(), [1.0, 9.0, 3.0])
    assert minidp.Tensor.where_(cond, x, 0.0) is x
    check_grad(lambda a, b: minidp.where_(cond, a * 1.0, b), np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))


def test_fill_diagonal_in_place_matches_paddle():
    x = minidp.zeros([3, 3])
    assert x.fill_diagonal_(5, offset=1) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 5, 0], [0, 0, 5], [0, 0, 0]])
    np.testing.assert_array_equal(
        minidp.zeros([5, 2]).fill_diagonal_(5, wrap=True).numpy(), [[5, 0], [0, 5], [0, 0], [5, 0], [0, 5]]
    )
    np.testing.assert_array_equal(
        minidp.zeros([3, 4]).fill_diagonal_(3, offset=-1).numpy(), [[0, 0, 0, 0], [3, 0, 0, 0], [0, 3, 0, 0]]
    )
    np.testing.assert_array_equal(
        minidp.zeros([2, 2, 2]).fill_diagonal_(3).numpy(), [[[3, 0], [0, 0]], [[0, 0], [0, 3]]]
    )
    with pytest.raises(ValueError, match="equal sides"):
        minidp.zeros([2, 3, 2]).fill_diagonal_(1)
    check_grad(lambda a: (a * 1.0).fill_diagonal_(2.0, offset=1), _arange(3, 4))


def test_copy_in_place_broadcasts_casts_and_passes_gradient():
    x = minidp.zeros([2, 2])
    assert x.copy_(minidp.to_tensor([5, 6])) is x
    np.testing.assert_array_equal(x.numpy(), [[5.0, 6.0], [5.0, 6.0]])
    assert x.dtype == np.float32
    check_grad(lambda dst, src: (dst * 1.0).copy_(src) * dst, _arange(2, 2), np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="src must be a Tensor"):
        x.copy_([1.0, 2.0])


def test_inplace_form_refuses_a_leaf_that_needs_a_gradient():
    x = minidp.ones([2, 2])
    x.stop_gradient = False
    with pytest.raises(ValueError, match="leaf tensor"):
        x.tril_()


# --- inplace_version: ops recorded before an update read the old value ------------------------


def test_every_update_autograd_sees_counts_in_inplace_version():
    x = data([1.0, 2.0])
    assert x.inplace_version == 0
    x.add_(1.0)
    x.scale_(2.0)
    x.zero_()
    assert x.inplace_version == 3
    assert minidp.exp(x).inplace_version == 0


def test_ops_that_read_a_graph_result_before_its_update_get_the_exact_gradient():
    # Paddle 3.3.1 gives these gradients too (add and scale keep nothing of x for backward)
    a = leaf([1.0, 2.0, 3.0])
    x = a * 2
    y = x + 1
    z = x * 3
    x.exp_()
    (y.sum() + z.sum() + x.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 + 6 + 2 * np.exp(2 * a.numpy()))


def test_an_op_that_saved_the_old_value_uses_it_where_paddle_would_refuse():
    # Paddle raises here (multiply saved x); minidp's update rebinds x, so the saved array is intact
    a = leaf([1.0, 2.0, 3.0])
    x = a * 2
    y = x * x
    x.exp_()
    (y.sum() + x.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), 8 * a.numpy() + 2 * np.exp(2 * a.numpy()))


def test_each_reader_gets_the_version_it_read_across_several_updates():
    a = leaf([1.0, 2.0])
    x = a * 2
    y0 = x + 0
    x.scale_(3.0)
    y1 = x + 0
    x.scale_(5.0)
    assert x.inplace_version == 2
    (y0.sum() + 10 * y1.sum() + 100 * x.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [2 + 60 + 3000] * 2)


def test_an_update_before_any_use_needs_no_history():
    a = leaf([1.0, 2.0])
    x = a * 2
    x.exp_()
    (x * x).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 4 * np.exp(4 * a.numpy()))


def test_a_data_tensor_that_joins_the_graph_sends_nothing_back_through_its_earlier_readers():
    w = leaf([1.0, 2.0, 3.0])
    x = data([1.0, 1.0, 1.0])
    y = x * 3 + w
    x.multiply_(w)
    (y.sum() + x.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    "update", [lambda x: x.add_(1.0), lambda x: x.zero_(), lambda x: x.uniform_(), lambda x: x.copy_(data([5.0, 5.0]))]
)
def test_overwriting_a_tensor_a_recorded_op_saved_raises_at_backward(update):
    w = leaf([1.0, 2.0])
    x = data([1.0, 1.0])
    y = minidp.matmul(x, w)
    z = w * x
    update(x)
    with pytest.raises(RuntimeError, match=r"multiply read .* inplace_version 0, .*now version 1.*out-of-place"):
        z.sum().backward()
    assert w.grad is None
    with pytest.raises(RuntimeError, match="matmul read"):
        y.backward()


def test_a_parameter_updated_under_no_grad_after_use_raises_at_backward():
    w = minidp.nn.Parameter(np.array([1.0, 2.0]))
    x = leaf([1.0, 1.0])
    y = w * x
    with minidp.no_grad():
        w.add_(minidp.ones([2], "float64"))
    with pytest.raises(RuntimeError, match="multiply read"):
        y.sum().backward()
    z = w * x  # recorded after the update: reads version 1
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0])


def test_fill_cuts_the_gradient_and_earlier_readers_keep_theirs():
    a = leaf([1.0, 2.0, 3.0])
    y = a.exp()
    z = y * 2
    y.fill_(3.0)
    assert not y.stop_gradient
    (y * a).sum().backward(retain_graph=True)  # z's backward runs through exp again
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0, 3.0])
    a.clear_grad()
    z.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.exp(a.numpy()))


def test_assign_into_an_output_keeps_earlier_readers_on_the_old_value():
    a = leaf([1.0, 2.0, 3.0])
    b = leaf([5.0, 5.0, 5.0])
    x = a * 2
    y = x * 3
    minidp.assign(b * 1, output=x)
    (y.sum() + (x * a).sum()).backward()
    np.testing.assert_array_equal(a.grad.numpy(), [11.0, 11.0, 11.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0, 3.0])


# --- x[index] = value ---------------------------------------------------------------------------


def test_setitem_on_a_data_tensor_writes_its_buffer_casting_and_broadcasting_the_value():
    x = data(np.zeros((2, 3)))
    row = x[0]
    x[:, 1] = minidp.to_tensor([4.0, 5.0], dtype="float64")
    x[x > 4] = -1
    x[minidp.to_tensor([0])] = 9
    np.testing.assert_array_equal(x.numpy(), [[9, 9, 9], [0, -1, 0]])
    np.testing.assert_array_equal(row.numpy(), [9, 9, 9])
    assert x.inplace_version == 3
    ints = minidp.to_tensor([1, 2, 3])
    ints[0] = 2.7
    ints[1:] = np.array([7, 8])
    assert ints.tolist() == [2, 7, 8] and ints.dtype == np.int64


def test_setitem_in_a_graph_sends_the_gradient_around_the_index_and_into_the_value():
    # Paddle 3.3.1: a.grad [2, 0, 2], v.grad 3
    a, v = leaf([1.0, 2.0, 3.0]), leaf(10.0)
    x = a * 2
    x[1] = v * 3
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 0.0, 2.0])
    assert v.grad.item() == 3.0

    def written(base, values):
        out = base * 1
        out[1:, ::2] = values
        return out

    check_grad(written, np.arange(12.0).reshape(3, 4), np.array([0.5, -1.5]))


def test_setitem_after_an_op_read_the_tensor():
    # Paddle 3.3.1 gives [2, 18, 26]: add kept nothing of x
    a = leaf([1.0, 2.0, 3.0])
    x = a * 2
    y = x + 1
    x[0] = 7.0
    (y.sum() + (x * x).sum()).backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 18.0, 26.0])
    w, d = leaf([1.0, 2.0, 3.0]), data([1.0, 1.0, 1.0])
    z = w * d
    d[0] = 7.0
    with pytest.raises(RuntimeError, match="multiply read"):
        z.sum().backward()


def test_setitem_refuses_leaves_that_need_a_gradient_and_bad_values():
    p = minidp.nn.Parameter(np.ones(3))
    with pytest.raises(ValueError, match="no_grad"):
        p[0] = 5.0
    with minidp.no_grad():
        p[1] = 7.0
    np.testing.assert_array_equal(p.numpy(), [1.0, 7.0, 1.0])
    x = data(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"value of shape \[4\] does not fit the selected block of shape \[3\]"):
        x[0] = minidp.ones([4], "float64")
    with pytest.raises(IndexError, match="out of bounds"):
        x[5] = 1.0
    with pytest.raises(ValueError, match="does not fit"):
        (x + leaf(np.zeros(3)))[0] = np.ones(4)


def test_an_update_outside_the_graph_keeps_no_reference_to_the_old_array():
    x = data([1.0, 2.0])
    old = weakref.ref(x._data)
    x.cast_("float32")  # a new dtype: x is rebound to a new array
    assert old() is None and x.inplace_version == 1
    w, z = leaf([1.0, 2.0]), data([1.0, 2.0])
    y = w + z
    z.cast_("float32")
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


def test_a_state_updated_in_graph_and_detached_each_step_does_not_keep_old_graphs_alive():
    # truncated backprop: the snapshot taken by the second update of a step belongs to a graph
    # that step's backward freed, so the next update drops it instead of keeping it for good
    w = leaf([1.0, 2.0])
    h = data([0.0, 0.0])
    old_arrays = []
    for _ in range(3):
        h.add_(w * 2)
        old_arrays.append(weakref.ref(h._data))
        h.scale_(0.5)
        h.sum().backward()
        h.detach_()
    gc.collect()
    assert [ref() is None for ref in old_arrays] == [True, True, False]
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("retain", [True, False])
def test_an_update_drops_an_earlier_value_only_once_a_backward_freed_its_graph(retain):
    a = leaf([1.0, 2.0])
    x = a * 2
    y = x * 3
    x.exp_()
    # retained, y's reader still finds the value it read after the next update; freed (by a
    # backward through exp and a * 2), the value is dropped, and backward says the graph is freed
    (y if retain else x).sum().backward(retain_graph=retain)
    x.scale_(2.0)
    if retain:
        y.sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), [12.0, 12.0])
    else:
        with pytest.raises(RuntimeError, match="already freed"):
            y.sum().backward()
