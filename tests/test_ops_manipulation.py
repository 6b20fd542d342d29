"""Shape ops: values against NumPy, gradients against finite differences, bad input."""

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(11)
T = minidp.to_tensor


def r(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def concat_all(parts):
    """One tensor from a list of outputs, so a single gradient check covers all of them."""
    return minidp.concat([minidp.reshape(p, [-1]) for p in parts])


GRAD_CASES = [
    ("tile", lambda x: minidp.tile(x, [2, 1, 3]), (2, 3)),
    ("tile_shorter_repeats", lambda x: x.tile([2]), (2, 3)),
    ("repeat_interleave_int", lambda x: minidp.repeat_interleave(x, 2, axis=1), (2, 3)),
    ("repeat_interleave_counts", lambda x: minidp.repeat_interleave(x, T(np.array([1, 0, 3])), axis=1), (2, 3)),
    ("repeat_interleave_flat", lambda x: minidp.repeat_interleave(x, 2), (2, 3)),
    ("flip", lambda x: minidp.flip(x, [0, 2]), (2, 3, 2)),
    ("rot90", lambda x: minidp.rot90(x, 1, [0, 1]), (2, 3)),
    ("rot90_k3", lambda x: minidp.rot90(x, 3, [1, 2]), (2, 3, 4)),
    ("roll_axes", lambda x: minidp.roll(x, [1, -2], [0, 1]), (3, 4)),
    ("roll_flat", lambda x: minidp.roll(x, 5), (3, 4)),
    ("chunk", lambda x: concat_all(minidp.chunk(x, 2, axis=1)), (3, 4)),
    ("unbind", lambda x: concat_all(minidp.unbind(x, axis=1)), (3, 4)),
    ("unstack", lambda x: concat_all(x.unstack()), (3, 4)),
    ("tensor_split_sections", lambda x: concat_all(minidp.tensor_split(x, 3, axis=1)), (2, 7)),
    ("tensor_split_indices", lambda x: concat_all(minidp.tensor_split(x, [1, 3])), (5, 2)),
    ("hsplit", lambda x: concat_all(minidp.hsplit(x, [1])), (2, 3)),
    ("vsplit", lambda x: concat_all(minidp.vsplit(x, 2)), (4, 3)),
    ("dsplit", lambda x: concat_all(minidp.dsplit(x, 2)), (2, 2, 4)),
    ("moveaxis", lambda x: minidp.moveaxis(x, [0, 1], [2, 0]), (2, 3, 4)),
    ("broadcast_to", lambda x: minidp.broadcast_to(x, [2, 3, 4]), (3, 1)),
    ("broadcast_tensors", lambda x: concat_all(minidp.broadcast_tensors([x, T(np.ones((2, 1, 1)))])), (3, 1)),
    ("expand_as", lambda x: x.expand_as(T(np.ones((2, 3, 4)))), (1, 4)),
    ("view", lambda x: x.view([4, 3]), (2, 6)),
    ("view_as", lambda x: minidp.view_as(x, T(np.ones((3, 4)))), (2, 6)),
    ("unflatten", lambda x: minidp.unflatten(x, 1, [2, -1]), (3, 6)),
    ("atleast_3d", lambda x: minidp.atleast_3d(x), (3,)),
    ("slice", lambda x: minidp.slice(x, [0, 2], [1, 0], [3, 10]), (4, 2, 3)),
    ("strided_slice", lambda x: minidp.strided_slice(x, [1], [4], [0], [-2]), (2, 5)),
    ("crop", lambda x: minidp.crop(x, [2, -1], [1, 1]), (4, 3)),
    ("swapaxes", lambda x: minidp.swapaxes(x, 0, -1), (2, 3, 4)),
    ("permute", lambda x: x.permute([2, 0, 1]), (2, 3, 4)),
    ("ravel", minidp.ravel, (2, 3)),
    ("narrow", lambda x: minidp.narrow(x, 1, -3, 2), (2, 4)),
    ("hstack", lambda x: minidp.hstack([x, x * 2]), (2, 3)),
    ("vstack_1d", lambda x: minidp.vstack([x, x * 2]), (3,)),
    ("dstack", lambda x: minidp.dstack([x, x]), (2, 3)),
    ("column_stack", lambda x: minidp.column_stack([x, minidp.reshape(x * 3, [3, 1])]), (3,)),
    ("block_diag", lambda x: minidp.block_diag([x, x[0], x[0, 0]]), (2, 3)),
    ("cartesian_prod", lambda x: minidp.cartesian_prod([x, x * 2]), (3,)),
    ("combinations", lambda x: minidp.combinations(x, 2), (4,)),
    ("combinations_with_replacement", lambda x: minidp.combinations(x, 3, True), (3,)),
    ("unfold", lambda x: x.unfold(1, 2, 2), (2, 5)),
    ("unfold_overlapping", lambda x: minidp.unfold(x, 0, 3, 1), (5, 2)),
    ("tensor_repeat", lambda x: x.repeat(2, 1, 3), (2, 3)),
    ("tensor_split_with_sizes", lambda x: concat_all(x.split_with_sizes([1, 2], 1)), (2, 3)),
    ("tensor_mT", lambda x: x.mT, (2, 3, 4)),
]


@pytest.mark.parametrize("name,fn,shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, shape):
    check_grad(fn, r(*shape))


def test_values_match_numpy():
    a = r(2, 3, 4)
    np.testing.assert_allclose(minidp.tile(T(a), [2, 1, 1, 2]).numpy(), np.tile(a, [2, 1, 1, 2]))
    np.testing.assert_allclose(
        minidp.repeat_interleave(T(a), T(np.array([2, 1])), axis=0).numpy(), np.repeat(a, [2, 1], axis=0)
    )
    np.testing.assert_allclose(minidp.flip(T(a), 1).numpy(), np.flip(a, 1))
    np.testing.assert_allclose(minidp.rot90(T(a), -1, [2, 0]).numpy(), np.rot90(a, -1, (2, 0)))
    np.testing.assert_allclose(minidp.roll(T(a), 2, 2).numpy(), np.roll(a, 2, 2))
    np.testing.assert_allclose(minidp.moveaxis(T(a), 0, -1).numpy(), np.moveaxis(a, 0, -1))
    for got, want in zip(minidp.tensor_split(T(np.arange(7.0)), [5, 2]), np.array_split(np.arange(7.0), [5, 2])):
        np.testing.assert_allclose(got.numpy(), want)
    assert [p.shape for p in minidp.hsplit(T(np.ones((2, 5))), 2)] == [[2, 3], [2, 2]]
    assert [p.shape for p in minidp.unbind(T(a), 2)] == [[2, 3]] * 4
    assert [t.shape for t in minidp.atleast_2d(T(1.0), T(np.ones(2)), T(a))] == [[1, 1], [1, 2], [2, 3, 4]]
    assert minidp.atleast_3d(T(np.ones((2, 3)))).shape == [2, 3, 1]
    assert minidp.atleast_1d(T(1.0)).shape == [1]
    assert minidp.broadcast_shape([2, 1], [3]) == [2, 3]
    np.testing.assert_allclose(minidp.slice(T(a), [1, 2], [-2, 1], [10, 3]).numpy(), a[:, -2:, 1:3])
    np.testing.assert_allclose(minidp.crop(T(a), [1, 2, 2], [1, 0, 1]).numpy(), a[1:2, 0:2, 1:3])
    bits = minidp.view(T(np.ones(2, dtype=np.float32)), "int32")
    np.testing.assert_array_equal(bits.numpy(), np.ones(2, dtype=np.float32).view(np.int32))


def test_stacking_and_windows_values():
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    np.testing.assert_allclose(minidp.hstack([T(a), T(b)]).numpy(), np.hstack([a, b]))
    np.testing.assert_allclose(minidp.vstack([T(a), T(b)]).numpy(), np.vstack([a, b]))
    np.testing.assert_allclose(minidp.row_stack([T(a), T(b)]).numpy(), np.vstack([a, b]))
    np.testing.assert_allclose(minidp.dstack([T(a), T(b)]).numpy(), np.dstack([a, b]))
    np.testing.assert_allclose(minidp.column_stack([T(a), T(b)]).numpy(), np.column_stack([a, b]))
    np.testing.assert_allclose(minidp.cat([T(a), T(b)]).numpy(), np.concatenate([a, b]))
    np.testing.assert_allclose(minidp.concatenate([T(a), T(b)]).numpy(), np.concatenate([a, b]))
    np.testing.assert_allclose(minidp.reverse(T(a), 0).numpy(), a[::-1])
    np.testing.assert_allclose(
        minidp.block_diag([T([[1.0, 2.0]]), T(3.0), T([4.0, 5.0])]).numpy(),
        [[1, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 4, 5]],
    )
    np.testing.assert_allclose(minidp.cartesian_prod([T(a[:2]), T(b)]).numpy(), [[p, q] for p in a[:2] for q in b])
    assert minidp.cartesian_prod([T(a)]).shape == [3]
    np.testing.assert_allclose(minidp.combinations(T(a), 2).numpy(), [[0, 1], [0, 2], [1, 2]])
    assert minidp.combinations(T(a[:2]), 3).shape == [0, 3]
    # overlapping windows: each element's gradient adds up over the windows holding it (Paddle 3.3.1
    # keeps only one window's share; finite differences in test_gradients side with the sum)
    windows = minidp.unfold(T(np.arange(10.0).reshape(2, 5)), 1, 2, 2)
    np.testing.assert_allclose(windows.numpy(), [[[0, 1], [2, 3]], [[5, 6], [7, 8]]])
    assert minidp.broadcast_shapes([2, 1], [1, 3], [4, 1, 1]) == [4, 2, 3]
    np.testing.assert_allclose(minidp.narrow(T(a), 0, 1, 2).numpy(), a[1:3])


def test_tensor_only_methods():
    x = T(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(x.repeat([2, 1]).numpy(), np.tile(x.numpy(), [2, 1]))
    np.testing.assert_allclose(x.mT.numpy(), x.numpy().T)
    assert x.is_same_shape(T(np.zeros((2, 3)))) and not x.is_same_shape(T(np.zeros(3)))
    full = x.new_full([2], 3.0)
    np.testing.assert_allclose(full.numpy(), [3.0, 3.0])
    assert full.dtype == np.float64 and full.stop_gradient
    zeros = x.new_zeros([3], dtype="int32", requires_grad=True)
    assert zeros.dtype == np.int32 and not zeros.stop_gradient and not zeros.numpy().any()
    assert x.new_ones((1, 2)).numpy().tolist() == [[1.0, 1.0]] and x.new_empty([4]).shape == [4]
    filled = minidp.ones([2, 3]).fill_diagonal_tensor(T(np.array([7.0, 8.0], dtype=np.float32)), offset=1)
    np.testing.assert_allclose(filled.numpy(), [[1, 7, 1], [1, 1, 8]])


def test_bad_inputs():
    x = T(np.ones((3, 4)))
    with pytest.raises(ValueError, match="leave axis"):
        minidp.narrow(x, 1, 3, 2)
    with pytest.raises(ValueError, match="size"):
        minidp.unfold(x, 1, 5, 1)
    with pytest.raises(ValueError, match="combinations: x must be 1-D"):
        minidp.combinations(x)
    with pytest.raises(ValueError, match="at most 2 axes"):
        minidp.block_diag([T(np.ones((2, 2, 2)))])
    with pytest.raises(ValueError, match="cannot divide evenly"):
        minidp.chunk(x, 3, axis=1)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        minidp.flip(x, 2)
    with pytest.raises(ValueError, match="two different axes"):
        minidp.rot90(x, 1, [0, 0])
    with pytest.raises(ValueError, match="same length"):
        minidp.roll(x, [1, 2], [0])
    with pytest.raises(ValueError, match="do not broadcast"):
        minidp.broadcast_shape([2, 3], [4])
    with pytest.raises(ValueError, match="cannot broadcast"):
        minidp.broadcast_to(x, [2, 4])
    with pytest.raises(ValueError, match="at least 3 axes"):
        minidp.dsplit(x, 2)
    with pytest.raises(ValueError, match="one count per slice"):
        minidp.repeat_interleave(x, T(np.array([1, 2])), axis=0)
    with pytest.raises(ValueError, match="leaves x's shape"):
        minidp.crop(x, [2, 2], [2, 0])
    with pytest.raises(ValueError, match="cannot view"):
        x.view([5, 2])


def _flat(value):
    parts = value if isinstance(value, (list, tuple)) else [value]
    return [p.numpy() for p in parts]


I = T(np.array([[1, 0], [0, 1]], dtype=np.int64))
METHOD_CASES = [
    ("topk", (2,)),
    ("sort", ()),
    ("argsort", ()),
    ("nonzero", ()),
    ("masked_select", (T(np.eye(2, dtype=bool)),)),
    ("bucketize", (T([0.0, 1.0]),)),
    ("unique", ()),
    ("unique_consecutive", ()),
    ("kthvalue", (1,)),
    ("mode", ()),
    ("index_sample", (I,)),
    ("gather", (I[0],)),
    ("gather_nd", (I,)),
    ("scatter", (I[0], T(np.ones((2, 2))))),
    ("scatter_nd_add", (I, T(np.ones(2)))),
    ("index_select", (I[0], 1)),
    ("index_add", (I[0], 0, T(np.ones((2, 2))))),
    ("index_put", ((I[0], I[1]), T(1.0))),
    ("index_fill", (I[0], 1, 3.0)),
    ("take_along_axis", (I, 1)),
    ("put_along_axis", (I, 2.0, 1)),
    ("masked_fill", (T(np.eye(2, dtype=bool)), 5.0)),
    ("masked_scatter", (T(np.eye(2, dtype=bool)), T(np.ones(2)))),
    ("take", (I,)),
    ("tile", ([2],)),
    ("repeat_interleave", (2,)),
    ("flip", (0,)),
    ("rot90", ()),
    ("roll", (1,)),
    ("chunk", (2,)),
    ("unbind", ()),
    ("tensor_split", (2,)),
    ("hsplit", (2,)),
    ("vsplit", (2,)),
    ("moveaxis", (0, 1)),
    ("broadcast_to", ([3, 2, 2],)),
    ("expand_as", (T(np.ones((3, 2, 2))),)),
    ("view", ([4],)),
    ("view_as", (T(np.ones(4)),)),
    ("unflatten", (1, [2, 1])),
    ("unstack", ()),
    ("strided_slice", ([0], [0], [2], [2])),
    ("bmm", (T(np.ones((1, 2, 3))),), T(np.ones((1, 2, 2)))),
    ("dot", (T(np.ones((2, 2))),)),
    ("mv", (T(np.ones(2)),)),
    ("outer", (T(np.ones(3)),)),
    ("inner", (T(np.ones((3, 2))),)),
    ("t", ()),
    ("tril", ()),
    ("triu", (1,)),
    ("cross", (T(np.ones((3, 2))),), T(np.arange(6.0).reshape(3, 2))),
    ("kron", (T(np.ones((2, 1))),)),
    ("trace", ()),
    ("diagonal", ()),
    ("diag_embed", ()),
    ("norm", ()),
    ("dist", (T(np.ones(2)),)),
    ("cdist", (T(np.ones((3, 2))),)),
    ("addmm", (T(np.ones((2, 2))), T(np.ones((2, 2))))),
    ("cholesky", ()),
    ("inverse", ()),
    ("clone", ()),
    ("numel", ()),
    ("diag", ()),
    ("diagflat", ()),
]


@pytest.mark.parametrize("case", METHOD_CASES, ids=[c[0] for c in METHOD_CASES])
def test_tensor_methods_match_the_functions(case):
    name, args = case[:2]
    x = case[2] if len(case) > 2 else T(np.array([[4.0, 1.0], [1.0, 3.0]]))
    for got, want in zip(_flat(getattr(x, name)(*args)), _flat(getattr(minidp, name)(x, *args))):
        np.testing.assert_array_equal(got, want)
