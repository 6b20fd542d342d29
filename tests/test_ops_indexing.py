"""Gather/scatter family: values against NumPy, gradients against finite differences, bad input."""

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(5)
T = minidp.to_tensor


def r(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def idx(values):
    return T(np.array(values, dtype=np.int64))


MASK = T(np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]]))

# (name, function of the float64 inputs, input shapes); repeated indices check that gradients add up
GRAD_CASES = [
    ("gather_rows", lambda x: minidp.gather(x, idx([2, 0, 2])), [(3, 4)]),
    ("gather_axis1", lambda x: minidp.gather(x, idx([[3], [1]]), axis=1), [(3, 4)]),
    ("gather_scalar_index", lambda x: minidp.gather(x, idx(1)), [(3, 4)]),
    ("gather_nd", lambda x: minidp.gather_nd(x, idx([[0, 1], [2, 3], [0, 1]])), [(3, 4, 2)]),
    ("gather_nd_rows", lambda x: minidp.gather_nd(x, idx([[1], [0]])), [(3, 4)]),
    ("index_select", lambda x: minidp.index_select(x, idx([1, 1, 0]), axis=1), [(2, 3)]),
    ("take_along_axis", lambda x: minidp.take_along_axis(x, idx([[0, 2], [1, 1], [3, 0]]), 1), [(3, 4)]),
    ("take_along_axis_broadcast", lambda x: minidp.take_along_axis(x, idx([[0, 2, 1, 0]]), 0), [(3, 4)]),
    ("index_sample", lambda x: minidp.index_sample(x, idx([[0, 0], [3, 1], [2, 1]])), [(3, 4)]),
    ("take", lambda x: minidp.take(x, idx([[0, 11], [-1, 5]])), [(3, 4)]),
    ("take_wrap", lambda x: minidp.take(x, idx([13, -14]), mode="wrap"), [(3, 4)]),
    ("scatter_overwrite", lambda x, u: minidp.scatter(x, idx([2, 0]), u), [(3, 4), (2, 4)]),
    ("scatter_add", lambda x, u: minidp.scatter(x, idx([1, 1, 0]), u, overwrite=False), [(3, 4), (3, 4)]),
    ("scatter_nd_add", lambda x, u: minidp.scatter_nd_add(x, idx([[1], [1], [0]]), u), [(3, 4), (3, 4)]),
    ("scatter_nd_add_elements", lambda x, u: minidp.scatter_nd_add(x, idx([[1, 2], [1, 2]]), u), [(3, 4), (2,)]),
    ("scatter_nd", lambda u: minidp.scatter_nd(idx([[1], [1], [3]]), u, [4, 2]), [(3, 2)]),
    ("index_add", lambda x, v: minidp.index_add(x, idx([0, 2, 0]), 1, v, alpha=2.0), [(2, 3), (2, 3)]),
    ("index_put", lambda x, v: minidp.index_put(x, (idx([0, 2]), idx([1, 3])), v), [(3, 4), (2,)]),
    (
        "index_put_broadcast_accumulate",
        lambda x, v: minidp.index_put(x, (idx([0, 0]), idx([1, 1])), v, accumulate=True),
        [(3, 4), ()],
    ),
    ("index_fill", lambda x: minidp.index_fill(x, idx([1]), 0, 9.0), [(3, 4)]),
    ("masked_fill_tensor_value", lambda x, v: minidp.masked_fill(x, MASK, v), [(3, 4), ()]),
    ("masked_fill_scalar", lambda x: minidp.masked_fill(x, MASK, -1.0), [(3, 4)]),
    ("masked_scatter", lambda x, v: minidp.masked_scatter(x, MASK, v), [(3, 4), (8,)]),
    ("take_along_dim", lambda x: minidp.take_along_dim(x, idx([[1], [0], [3]]), 1), [(3, 4)]),
    (
        "scatter_reduce_sum_partial_src",
        lambda x, s: minidp.scatter_reduce(x, 1, idx([[0, 0], [3, 1]]), s, "sum"),
        [(2, 4), (3, 3)],
    ),
    ("scatter_reduce_prod", lambda x, s: minidp.scatter_reduce(x, 0, idx([[1, 0, 1]]), s, "prod"), [(2, 3), (1, 3)]),
    (
        "scatter_reduce_amax_exclusive",
        lambda x, s: minidp.scatter_reduce(x, 1, idx([[2, 2]]), s, "amax", include_self=False),
        [(1, 3), (1, 2)],
    ),
    ("scatter_add", lambda x, s: minidp.scatter_add(x, 0, idx([[1, 1], [1, 0]]), s), [(2, 2), (2, 2)]),
    ("select_scatter", lambda x, v: minidp.select_scatter(x, v, 1, -1), [(3, 4), (3,)]),
    ("slice_scatter", lambda x, v: minidp.slice_scatter(x, v, [1], [0], [4], [2]), [(3, 4), (3, 2)]),
    ("slice_scatter_broadcast", lambda x, v: minidp.slice_scatter(x, v, [0, 1], [1, 1], [3, 3], [1, 1]), [(3, 4), ()]),
    (
        "multiplex",
        lambda a, b: minidp.multiplex([a, b], T(np.array([[1], [0], [1]], dtype=np.int32))),
        [(3, 2), (3, 2)],
    ),
]
for _reduce in ["assign", "add", "mean", "mul", "amax", "amin"]:
    for _include in [True, False]:
        GRAD_CASES.append(
            (
                f"put_along_axis_{_reduce}_{_include}",
                lambda x, v, _r=_reduce, _i=_include: minidp.put_along_axis(
                    x, idx([[0, 2], [1, 3], [3, 3]]), v, 1, reduce=_r, include_self=_i
                ),
                [(3, 4), (3, 2)],
            )
        )


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, shapes):
    check_grad(fn, *[r(*s) for s in shapes])


def test_gather_family_values():
    a = r(4, 3)
    np.testing.assert_allclose(minidp.gather(T(a), idx([3, 0])).numpy(), a[[3, 0]])
    np.testing.assert_allclose(minidp.gather(T(a), idx([2, 0]), axis=1).numpy(), a[:, [2, 0]])
    np.testing.assert_allclose(minidp.gather(T(a), idx(2)).numpy(), a[2])
    np.testing.assert_allclose(minidp.gather_nd(T(a), idx([[1, 2], [3, 0]])).numpy(), a[[1, 3], [2, 0]])
    np.testing.assert_allclose(T(a).index_select(idx([0, 0]), axis=1).numpy(), a[:, [0, 0]])
    index = np.array([[2], [0], [1], [1]])
    np.testing.assert_allclose(minidp.take_along_axis(T(a), T(index), 1).numpy(), np.take_along_axis(a, index, 1))
    np.testing.assert_allclose(minidp.take(T(a), idx([11, -12])).numpy(), a.reshape(-1)[[11, 0]])
    np.testing.assert_allclose(minidp.take(T(a), idx([15, -13]), mode="clip").numpy(), a.reshape(-1)[[11, 0]])


def test_scatter_family_values():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    updates = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    np.testing.assert_allclose(minidp.scatter(T(x), idx([1, 1]), T(updates)).numpy(), [[3, 1, 2], [2, 2, 2]])
    np.testing.assert_allclose(
        minidp.scatter(T(x), idx([1, 1]), T(updates), overwrite=False).numpy(), [[3, 1, 2], [3, 3, 3]]
    )
    np.testing.assert_allclose(minidp.scatter_nd(idx([[1], [1]]), T([1.0, 2.0]), [3]).numpy(), [0, 3, 0])
    np.testing.assert_allclose(
        minidp.index_add(T(x), idx([0, 0]), 1, T(np.ones((2, 2)))).numpy(), [[5, 1, 2], [2, 5, 5]]
    )
    put = minidp.index_put(T(x), (idx([0, 0]), idx([1, 1])), T(2.0), accumulate=True)
    np.testing.assert_allclose(put.numpy(), [[3, 5, 2], [0, 5, 5]])
    np.testing.assert_allclose(minidp.index_fill(T(x), idx([0, 2]), 1, -1.0).numpy(), [[-1, 1, -1], [-1, 5, -1]])
    np.testing.assert_allclose(minidp.masked_fill(T(x), T(x > 2), 0.5).numpy(), np.where(x > 2, 0.5, x))
    np.testing.assert_allclose(
        minidp.masked_scatter(T(x), T(x > 1), T(np.arange(10.0))).numpy(), [[0, 1, 1], [0, 2, 3]]
    )


@pytest.mark.parametrize(
    "reduce,include_self,expected",
    [
        ("assign", True, [[9, 1, 2], [9, 5, 5]]),
        ("add", True, [[12, 1, 2], [9, 5, 5]]),
        ("mean", True, [[6, 1, 2], [4.5, 5, 5]]),
        ("mul", True, [[27, 1, 2], [0, 5, 5]]),
        ("amax", True, [[9, 1, 2], [9, 5, 5]]),
        ("amin", True, [[3, 1, 2], [0, 5, 5]]),
        ("add", False, [[9, 1, 2], [9, 5, 5]]),
    ],
)
def test_put_along_axis_values(reduce, include_self, expected):
    x = T([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    out = minidp.put_along_axis(x, idx([[0], [0]]), 9.0, 1, reduce=reduce, include_self=include_self)
    np.testing.assert_allclose(out.numpy(), expected)


def test_put_along_axis_mean_of_repeated_positions():
    x = T([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    out = minidp.put_along_axis(
        x, idx([[0, 0], [0, 0]]), T([[4.0, 6.0], [1.0, 1.0]]), 1, reduce="mean", include_self=False
    )
    np.testing.assert_allclose(out.numpy(), [[5, 1, 2], [1, 5, 5]])


def test_scatter_reduce_and_friends_values():
    src = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = minidp.scatter_reduce(minidp.zeros([2, 3]), 1, idx([[0, 0]]), src, "sum")
    np.testing.assert_allclose(out.numpy(), [[3, 0, 0], [0, 0, 0]])
    out = minidp.scatter_reduce(T(np.ones((2, 3))), 0, idx([[1, 1, 0]]), src, "mean", include_self=False)
    np.testing.assert_allclose(out.numpy(), [[1, 1, 3], [1, 2, 1]])
    np.testing.assert_allclose(
        minidp.select_scatter(minidp.zeros([2, 3]), minidp.ones([2]), 1, 1).numpy(), [[0, 1, 0], [0, 1, 0]]
    )
    picked = minidp.multiplex([T([[1.0, 2.0], [3.0, 4.0]]), T([[5.0, 6.0], [7.0, 8.0]])], idx([[1], [0]]))
    np.testing.assert_allclose(picked.numpy(), [[5, 6], [3, 4]])


def test_bad_inputs():
    x = T(np.ones((3, 4)))
    with pytest.raises(ValueError, match="reduce must be one of"):
        minidp.scatter_reduce(x, 0, idx([[0]]), x, "max")
    with pytest.raises(ValueError, match="fit inside src"):
        minidp.scatter_reduce(x, 0, idx([[0, 0, 0, 0, 0]]), x, "sum")
    with pytest.raises(ValueError, match="out of range"):
        minidp.select_scatter(x, T(np.ones(3)), 1, 4)
    with pytest.raises(ValueError, match="does not fit"):
        minidp.slice_scatter(x, T(np.ones(3)), [1], [0], [2], [1])
    with pytest.raises(ValueError, match="out of range for 2 inputs"):
        minidp.multiplex([x, x], idx([[2], [0], [0]]))
    with pytest.raises(TypeError, match="must hold integers"):
        minidp.gather(x, T([1.0]))
    with pytest.raises(ValueError, match="out of range"):
        minidp.gather(x, idx([3]))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        minidp.index_select(x, idx([0]), axis=2)
    with pytest.raises(ValueError, match="updates must have shape"):
        minidp.scatter(x, idx([0]), T(np.ones((2, 4))))
    with pytest.raises(ValueError, match="out of range"):
        minidp.take_along_axis(x, idx([[4]]), 1)
    with pytest.raises(ValueError, match="reduce must be one of"):
        minidp.put_along_axis(x, idx([[0]]), 1.0, 1, reduce="max")
    with pytest.raises(TypeError, match="mask must be a bool"):
        minidp.masked_fill(x, idx([1]), 0.0)
    with pytest.raises(ValueError, match="only 2 elements"):
        minidp.masked_scatter(x, T(np.ones((3, 4), dtype=bool)), T([1.0, 2.0]))
    with pytest.raises(ValueError, match="out of range"):
        minidp.take(x, idx([12]))
    with pytest.raises(ValueError, match="last axis"):
        minidp.gather_nd(x, idx([[0, 1, 2]]))


def test_scatter_overwrite_gives_every_repeated_update_the_gradient_as_paddle_does():
    updates = T(np.array([[1.0, 2.0], [3.0, 4.0]]))
    updates.stop_gradient = False
    out = minidp.scatter(T(np.ones((3, 2))), idx([1, 1]), updates)
    (out * T(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))).sum().backward()
    np.testing.assert_allclose(updates.grad.numpy(), [[3, 4], [3, 4]])


def test_shard_index_matches_paddle():
    ids = minidp.to_tensor([[1], [6], [12], [19]])
    np.testing.assert_array_equal(minidp.shard_index(ids, 20, 2, 0).numpy(), [[1], [6], [-1], [-1]])
    np.testing.assert_array_equal(ids.shard_index(20, 2, 1, ignore_value=-5).numpy(), [[-5], [-5], [2], [9]])
    with pytest.raises(TypeError, match="integer"):
        minidp.shard_index(minidp.ones([2, 1]), 20, 2, 0)
    with pytest.raises(ValueError, match="shard_id"):
        minidp.shard_index(ids, 20, 2, 2)
