"""Linear-algebra ops: values against NumPy, gradients against finite differences, bad input."""
import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(13)
T = minidp.to_tensor


def r(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def well_conditioned(n, batch=()):
    """Matrices near the identity, so inverses and determinants are far from singular."""
    return np.eye(n) * 3.0 + rng.uniform(-0.5, 0.5, batch + (n, n))


def spd(a):
    """A symmetric positive-definite matrix built from a (differentiable in a)."""
    n = a.shape[-1]
    return minidp.matmul(a, a, transpose_y=True) + T(np.eye(n) * n)


GRAD_CASES = [
    ("bmm", minidp.bmm, [r(2, 3, 4), r(2, 4, 5)]),
    ("mv", minidp.mv, [r(3, 4), r(4)]),
    ("dot_1d", minidp.dot, [r(5), r(5)]),
    ("dot_2d", minidp.dot, [r(3, 5), r(3, 5)]),
    ("outer", minidp.outer, [r(3), r(2, 2)]),
    ("inner", minidp.inner, [r(2, 3, 4), r(5, 4)]),
    ("t", lambda x: minidp.t(x), [r(3, 4)]),
    ("tensor_t", lambda x: x.t(), [r(3, 4)]),
    ("tril", lambda x: minidp.tril(x, -1), [r(2, 4, 4)]),
    ("triu", lambda x: minidp.triu(x, 1), [r(3, 5)]),
    ("cross_default_axis", minidp.cross, [r(3, 2), r(3, 2)]),
    ("cross_last_axis", lambda x, y: minidp.cross(x, y, axis=-1), [r(4, 3), r(4, 3)]),
    ("kron", minidp.kron, [r(2, 3), r(3, 2)]),
    ("kron_mixed_ndim", minidp.kron, [r(2), r(2, 3)]),
    ("trace", lambda x: minidp.trace(x, 1), [r(3, 4)]),
    ("diagonal", lambda x: minidp.diagonal(x, -1, 0, 2), [r(4, 2, 3)]),
    ("diag_embed", lambda x: minidp.diag_embed(x, 1), [r(2, 3)]),
    ("diag_embed_dims", lambda x: minidp.diag_embed(x, -1, 0, 2), [r(2, 3)]),
    ("norm_default", lambda x: minidp.norm(x), [r(3, 4)]),
    ("norm_p1_axis", lambda x: minidp.norm(x, 1, axis=1), [r(3, 4)]),
    ("norm_p3", lambda x: minidp.norm(x, 3, axis=0, keepdim=True), [r(3, 4)]),
    ("norm_inf", lambda x: minidp.norm(x, float("inf")), [r(3, 4)]),
    ("norm_matrix_fro", lambda x: minidp.norm(x, "fro", axis=[0, 2]), [r(2, 3, 2)]),
    ("norm_matrix_1", lambda x: minidp.norm(x, 1, axis=[0, 1]), [r(3, 4)]),
    ("norm_matrix_inf", lambda x: minidp.linalg.matrix_norm(x, float("inf")), [r(2, 3, 4)]),
    ("vector_norm", lambda x: minidp.linalg.vector_norm(x, 2, axis=[0, 1]), [r(2, 3, 2)]),
    ("dist", minidp.dist, [r(3, 4), r(4)]),
    ("dist_p1", lambda x, y: minidp.dist(x, y, 1), [r(3, 4), r(3, 4)]),
    ("cdist", minidp.cdist, [r(3, 4), r(5, 4)]),
    ("cdist_p1_batched", lambda x, y: minidp.cdist(x, y, 1.0), [r(2, 3, 4), r(2, 2, 4)]),
    ("addmm", lambda i, x, y: minidp.addmm(i, x, y, beta=0.5, alpha=2.0), [r(3, 1), r(3, 4), r(4, 2)]),
    ("baddbmm", lambda i, x, y: minidp.baddbmm(i, x, y, 2.0, -1.0), [r(2, 3, 2), r(2, 3, 4), r(2, 4, 2)]),
    ("einsum_matmul", lambda x, y: minidp.einsum("ij,jk->ik", x, y), [r(3, 4), r(4, 2)]),
    ("einsum_implicit", lambda x, y: minidp.einsum("ba,ca", x, y), [r(2, 3), r(4, 3)]),
    ("einsum_batch_ellipsis", lambda x, y: minidp.einsum("...ij,...jk", x, y), [r(2, 3, 4), r(4, 2)]),
    ("einsum_broadcast_size1", lambda x, y: minidp.einsum("ab,ab->ab", x, y), [r(1, 3), r(2, 3)]),
    ("einsum_trace", lambda x: minidp.einsum("ii", x), [r(3, 3)]),
    ("einsum_diagonal_rows", lambda x: minidp.einsum("iij->ij", x), [r(3, 3, 2)]),
    ("einsum_sum_out", lambda x, y: minidp.einsum("ij,k->k", x, y), [r(2, 3), r(4)]),
    ("einsum_three", lambda x, y, z: minidp.einsum("ab,bc,cd->ad", x, y, z), [r(2, 3), r(3, 4), r(4, 2)]),
    ("inverse", lambda x: minidp.inverse(x), [well_conditioned(3, (2,))]),
    ("det", lambda x: minidp.linalg.det(x), [well_conditioned(3, (2,))]),
    ("slogdet", lambda x: minidp.linalg.slogdet(x), [well_conditioned(3)]),
    ("solve", minidp.linalg.solve, [well_conditioned(3), r(3, 2)]),
    ("solve_vector", minidp.linalg.solve, [well_conditioned(3), r(3)]),
    ("solve_right", lambda x, y: minidp.linalg.solve(x, y, left=False), [well_conditioned(3), r(2, 3)]),
    ("cholesky", lambda a: minidp.linalg.cholesky(spd(a)), [r(3, 3)]),
    ("cholesky_upper_batched", lambda a: minidp.cholesky(spd(a), upper=True), [r(2, 3, 3)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, inputs):
    check_grad(fn, *inputs)


def test_values_match_numpy():
    a, b = r(3, 4), r(4, 5)
    np.testing.assert_allclose(minidp.einsum("ij,jk->ik", T(a), T(b)).numpy(), a @ b)
    np.testing.assert_allclose(minidp.einsum("ij->", T(a)).numpy(), a.sum())
    np.testing.assert_allclose(minidp.dot(T(a), T(a)).numpy(), (a * a).sum(-1))
    np.testing.assert_allclose(minidp.outer(T(a[0]), T(b[0])).numpy(), np.outer(a[0], b[0]))
    np.testing.assert_allclose(minidp.inner(T(a), T(a)).numpy(), np.inner(a, a))
    np.testing.assert_allclose(minidp.kron(T(a), T(b)).numpy(), np.kron(a, b))
    np.testing.assert_allclose(minidp.trace(T(a), -1).numpy(), np.trace(a, -1))
    np.testing.assert_allclose(minidp.diagonal(T(a), 2).numpy(), np.diagonal(a, 2))
    np.testing.assert_allclose(minidp.diag_embed(T(a)).numpy()[1], np.diag(a[1]))
    np.testing.assert_allclose(minidp.tril(T(a), 1).numpy(), np.tril(a, 1))
    np.testing.assert_allclose(minidp.cross(T(a[:3]), T(b[:3, :4])).numpy(), np.cross(a[:3], b[:3, :4], axis=0))
    x = T([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    np.testing.assert_allclose(minidp.norm(x).numpy(), 8.0)
    np.testing.assert_allclose(minidp.norm(x, p=1).numpy(), 16.0)
    np.testing.assert_allclose(minidp.norm(x, p=1, axis=[0, 1]).numpy(), 7.0)
    np.testing.assert_allclose(minidp.norm(x, p="fro", axis=1).numpy(), np.linalg.norm(x.numpy(), axis=1), rtol=1e-6)
    np.testing.assert_allclose(minidp.norm(x, p=0).numpy(), 5.0)
    np.testing.assert_allclose(minidp.cdist(T(a), T(b.T)).numpy(),
                               np.linalg.norm(a[:, None] - b.T[None], axis=-1))
    m = well_conditioned(3)
    np.testing.assert_allclose(minidp.linalg.inv(T(m)).numpy(), np.linalg.inv(m))
    np.testing.assert_allclose(minidp.linalg.det(T(m)).numpy(), np.linalg.det(m))
    np.testing.assert_allclose(minidp.linalg.slogdet(T(-m)).numpy(), np.stack(np.linalg.slogdet(-m)))
    assert minidp.t(T(a[0])).shape == [4]


def test_norm_gradient_is_zero_at_zero():
    x = T(np.zeros((2, 3)))
    x.stop_gradient = False
    minidp.cdist(x, x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


def test_bad_inputs():
    x = T(np.ones((3, 4)))
    with pytest.raises(ValueError, match="expects 3-D"):
        minidp.bmm(x, x)
    with pytest.raises(ValueError, match="1-D or 2-D of one shape"):
        minidp.dot(x, T(np.ones(4)))
    with pytest.raises(ValueError, match="at most 2 axes"):
        minidp.t(T(np.ones((2, 2, 2))))
    with pytest.raises(ValueError, match="no axis of length 3"):
        minidp.cross(T(np.ones((2, 2))), T(np.ones((2, 2))))
    with pytest.raises(ValueError, match="does not fit shapes"):
        minidp.einsum("ij,jk->ik", x, x)
    with pytest.raises(ValueError, match="names 2 operands"):
        minidp.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="spectral and nuclear"):
        minidp.norm(x, 2, axis=[0, 1])
    with pytest.raises(ValueError, match="square matrices"):
        minidp.linalg.inv(x)
    with pytest.raises(ValueError, match="not positive definite"):
        minidp.linalg.cholesky(T(-np.eye(2)))
    with pytest.raises(ValueError, match="axis1 and axis2 must differ"):
        minidp.diagonal(x, 0, 1, -1)


def test_inf_norm_gives_every_tied_extreme_the_full_gradient_as_paddle_does():
    x = T([3.0, -1.0, -3.0, 0.0])
    x.stop_gradient = False
    minidp.norm(x, float("inf")).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, -1.0, 0.0])
