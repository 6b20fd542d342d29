"""Linear-algebra ops (``minidp/ops/linalg.py``, also reached as ``minidp.linalg``): values
against NumPy, gradients against finite differences, bad input; lstsq, what each driver fills as
Paddle 3.3.1 on the CPU does, batches and argument checks."""

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
    ("matrix_exp", minidp.linalg.matrix_exp, [r(2, 3, 3)]),
    ("matrix_exp_squared", minidp.linalg.matrix_exp, [r(4, 4) * 4]),
    ("solve_vector", minidp.linalg.solve, [well_conditioned(3), r(3)]),
    ("solve_right", lambda x, y: minidp.linalg.solve(x, y, left=False), [well_conditioned(3), r(2, 3)]),
    ("cholesky", lambda a: minidp.linalg.cholesky(spd(a)), [r(3, 3)]),
    ("cholesky_upper_batched", lambda a: minidp.cholesky(spd(a), upper=True), [r(2, 3, 3)]),
    ("diagonal_scatter", lambda x, y: minidp.diagonal_scatter(x, y, 1), [r(3, 4), r(3)]),
    ("svdvals", minidp.linalg.svdvals, [r(2, 4, 3)]),
    ("svd_tall", lambda x: svd_invariants(*minidp.linalg.svd(x)), [r(4, 3)]),
    ("svd_wide_batched", lambda x: svd_invariants(*minidp.linalg.svd(x)), [r(2, 2, 3)]),
    ("eigvalsh", lambda a: minidp.linalg.eigvalsh(a + minidp.t(a)), [r(3, 3)]),
    ("eigh", lambda a: eigh_invariants(*minidp.linalg.eigh(a + minidp.t(a))), [r(3, 3)]),
    ("eigh_upper", lambda a: eigh_invariants(*minidp.linalg.eigh(a + minidp.t(a), UPLO="U")), [r(4, 4)]),
    ("qr", lambda x: qr_invariants(*minidp.linalg.qr(x)), [r(4, 3)]),
    ("qr_square_batched", lambda x: qr_invariants(*minidp.linalg.qr(x)), [r(2, 3, 3)]),
    ("qr_r_only", lambda x: minidp.linalg.qr(x, mode="r"), [r(4, 2)]),
    ("norm_nuc", lambda x: minidp.norm(x, "nuc"), [r(3, 4)]),
    ("norm_spectral_keepdim", lambda x: minidp.norm(x, 2, axis=[0, 2], keepdim=True), [r(3, 2, 4)]),
    ("norm_min_singular", lambda x: minidp.linalg.matrix_norm(x, -2), [r(3, 4)]),
    ("cond", lambda x: minidp.linalg.cond(x), [well_conditioned(3)]),
    ("cond_fro", lambda x: minidp.linalg.cond(x, "fro"), [well_conditioned(3)]),
    ("pinv", lambda x: minidp.linalg.pinv(x), [r(4, 3)]),
    ("matrix_power", lambda x: minidp.linalg.matrix_power(x, 5), [r(3, 3) * 0.5]),
    ("matrix_power_negative", lambda x: minidp.linalg.matrix_power(x, -2), [well_conditioned(3)]),
    ("multi_dot", lambda a, b, c: minidp.linalg.multi_dot([a, b, c]), [r(4), r(4, 3), r(3, 2)]),
    ("matrix_transpose", minidp.matrix_transpose, [r(2, 3, 4)]),
    ("vecdot", minidp.vecdot, [r(3, 4), r(4)]),
    ("cov", lambda x: minidp.linalg.cov(x), [r(3, 5)]),
    (
        "cov_weighted_columns",
        lambda x: minidp.linalg.cov(
            x, rowvar=False, fweights=T(np.array([1, 2, 1, 3])), aweights=T(np.array([0.5, 1.0, 2.0, 1.0]))
        ),
        [r(4, 2)],
    ),
    ("corrcoef", lambda x: minidp.linalg.corrcoef(x) * T(1 - np.eye(3)), [r(3, 5)]),
    ("ger", minidp.ger, [r(3), r(2)]),
    ("mm", minidp.mm, [r(3, 4), r(4, 2)]),
    ("tensordot_int", minidp.tensordot, [r(2, 3, 4), r(3, 4, 2)]),
    ("tensordot_pairs", lambda x, y: minidp.tensordot(x, y, [[1, 2], [1, 0]]), [r(2, 3, 4), r(4, 3)]),
    ("tensordot_shared_list", lambda x, y: minidp.tensordot(x, y, [0]), [r(3, 2), r(3, 4)]),
    ("pdist", minidp.pdist, [r(4, 3)]),
    ("pdist_p1", lambda x: minidp.pdist(x, 1.0), [r(3, 2)]),
    ("renorm", lambda x: minidp.renorm(x, 2.0, 0, 1.5), [r(3, 4)]),
    ("vander", lambda x: minidp.vander(x, 4), [r(3)]),
    ("vander_increasing", lambda x: x.vander(increasing=True), [r(3)]),
    ("triangular_solve", minidp.linalg.triangular_solve, [well_conditioned(3), r(3, 2)]),
    (
        "triangular_solve_lower_unit_transposed",
        lambda x, y: minidp.linalg.triangular_solve(x, y, upper=False, transpose=True, unitriangular=True),
        [well_conditioned(3), r(3, 2)],
    ),
    ("cholesky_solve", lambda b, f: minidp.linalg.cholesky_solve(b, f), [r(3, 2), well_conditioned(3)]),
    (
        "cholesky_solve_upper",
        lambda b, f: minidp.linalg.cholesky_solve(b, f, upper=True),
        [r(3, 2), well_conditioned(3)],
    ),
    ("cholesky_inverse", lambda f: minidp.linalg.cholesky_inverse(f), [well_conditioned(3)]),
    ("tensor_fill_diagonal_tensor", lambda x, y: x.fill_diagonal_tensor(y, -1), [r(3, 3), r(2)]),
    ("tensor_cholesky_solve", lambda b, f: b.cholesky_solve(f), [r(3, 2), well_conditioned(3)]),
]


def svd_invariants(u, s, vh):
    """Functions of U, S, Vh that do not depend on the sign each singular pair is given."""
    return minidp.concat(
        [
            minidp.reshape(u * u, [-1]),
            minidp.reshape(s, [-1]),
            minidp.reshape(vh * vh, [-1]),
            minidp.reshape(minidp.matmul(u * minidp.unsqueeze(s * s, -2), vh), [-1]),
        ]
    )


def eigh_invariants(w, v):
    return minidp.concat([w, minidp.reshape(v * v, [-1]), minidp.reshape(v[:, :1] * v[:, 1:2], [-1])])


def qr_invariants(q, r):
    return minidp.concat([minidp.reshape(q, [-1]), minidp.reshape(r, [-1])])


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
    np.testing.assert_allclose(minidp.cdist(T(a), T(b.T)).numpy(), np.linalg.norm(a[:, None] - b.T[None], axis=-1))
    m = well_conditioned(3)
    np.testing.assert_allclose(minidp.linalg.inv(T(m)).numpy(), np.linalg.inv(m))
    np.testing.assert_allclose(minidp.linalg.det(T(m)).numpy(), np.linalg.det(m))
    np.testing.assert_allclose(minidp.linalg.slogdet(T(-m)).numpy(), np.stack(np.linalg.slogdet(-m)))
    assert minidp.t(T(a[0])).shape == [4]
    u, s, vh = minidp.linalg.svd(T(a))
    np.testing.assert_allclose((u.numpy() * s.numpy()[None]) @ vh.numpy(), a, atol=1e-12)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False))
    assert [t.shape for t in minidp.linalg.svd(T(a), full_matrices=True)] == [[3, 3], [3], [4, 4]]
    sym = a[:, :3] + a[:, :3].T
    w, v = minidp.linalg.eigh(T(sym))
    np.testing.assert_allclose(v.numpy() @ np.diag(w.numpy()) @ v.numpy().T, sym, atol=1e-12)
    q, rr = minidp.linalg.qr(T(a.T))
    np.testing.assert_allclose(q.numpy() @ rr.numpy(), a.T, atol=1e-12)
    assert minidp.linalg.qr(T(a), mode="complete")[0].shape == [3, 3]
    np.testing.assert_allclose(minidp.norm(T(a), "nuc").numpy(), np.linalg.norm(a, "nuc"))
    np.testing.assert_allclose(minidp.norm(T(a), 2, axis=[0, 1]).numpy(), np.linalg.norm(a, 2))
    np.testing.assert_allclose(minidp.linalg.cond(T(m)).numpy(), np.linalg.cond(m))
    np.testing.assert_allclose(minidp.linalg.cond(T(m), float("inf")).numpy(), np.linalg.cond(m, np.inf))
    np.testing.assert_allclose(minidp.linalg.pinv(T(a)).numpy(), np.linalg.pinv(a), atol=1e-12)
    np.testing.assert_allclose(minidp.linalg.matrix_power(T(m), -3).numpy(), np.linalg.matrix_power(m, -3))
    np.testing.assert_allclose(minidp.linalg.matrix_power(T(m), 0).numpy(), np.eye(3))
    assert int(minidp.linalg.matrix_rank(T(np.outer(a[0], a[1])))) == 1
    assert minidp.linalg.matrix_rank(T(np.stack([m, np.zeros((3, 3))]))).numpy().tolist() == [3, 0]
    assert int(minidp.linalg.matrix_rank(T(m), tol=10.0)) < 3
    np.testing.assert_allclose(minidp.linalg.cov(T(a)).numpy(), np.cov(a))
    np.testing.assert_allclose(
        minidp.linalg.cov(T(a), rowvar=False, ddof=False).numpy(), np.cov(a, rowvar=False, ddof=0)
    )
    fw, aw = np.array([1, 2, 1]), np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(
        minidp.linalg.cov(T(a), rowvar=False, fweights=T(fw), aweights=T(aw)).numpy(),
        np.cov(a, rowvar=False, fweights=fw, aweights=aw),
    )
    np.testing.assert_allclose(minidp.linalg.corrcoef(T(a)).numpy(), np.corrcoef(a))
    np.testing.assert_allclose(
        minidp.diagonal_scatter(T(a), T(np.zeros(3))).numpy(), np.where(np.eye(3, 4, dtype=bool), 0, a)
    )
    np.testing.assert_allclose(minidp.linalg.multi_dot([T(a), T(b), T(b.T)]).numpy(), a @ b @ b.T)
    assert minidp.swapaxes(T(np.ones((2, 3, 4))), 0, 2).shape == [4, 3, 2]
    np.testing.assert_allclose(minidp.tensordot(T(a), T(b), 1).numpy(), np.tensordot(a, b, 1))
    np.testing.assert_allclose(minidp.tensordot(T(a), T(a), [[0, 1], [0, 1]]).numpy(), np.tensordot(a, a, 2))
    points = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    np.testing.assert_allclose(minidp.pdist(T(points)).numpy(), [5.0, 10.0, 5.0])
    np.testing.assert_allclose(minidp.vander(T(np.array([1.0, 2.0, 3.0])), 4).numpy(), np.vander([1.0, 2.0, 3.0], 4))
    upper = np.triu(m)
    np.testing.assert_allclose(minidp.linalg.triangular_solve(T(m), T(b[:3])).numpy(), np.linalg.solve(upper, b[:3]))
    lower = np.tril(m)
    np.testing.assert_allclose(
        minidp.linalg.cholesky_solve(T(b[:3]), T(lower)).numpy(), np.linalg.solve(lower @ lower.T, b[:3])
    )
    np.testing.assert_allclose(minidp.linalg.cholesky_inverse(T(lower)).numpy(), np.linalg.inv(lower @ lower.T))
    big = np.array([[3.0, 4.0], [0.1, 0.2]])
    np.testing.assert_allclose(minidp.renorm(T(big), 2.0, 0, 1.0).numpy(), [[0.6, 0.8], [0.1, 0.2]], rtol=1e-6)
    assert minidp.swapdims(T(np.ones((2, 3, 4))), [1, 2, 0]).shape == [3, 4, 2]


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
    with pytest.raises(ValueError, match="matrix norms take"):
        minidp.norm(x, 3, axis=[0, 1])
    with pytest.raises(ValueError, match="'fro' or 'nuc'"):
        minidp.norm(x, "max")
    with pytest.raises(ValueError, match="UPLO must be"):
        minidp.linalg.eigh(T(np.eye(2)), UPLO="X")
    with pytest.raises(ValueError, match="diagonal's shape"):
        minidp.diagonal_scatter(x, T(np.ones(4)))
    with pytest.raises(ValueError, match="differ in length"):
        minidp.tensordot(x, x, [[0], [1]])
    with pytest.raises(ValueError, match="cannot pair"):
        minidp.tensordot(x, x, [[0, 1], [1]])
    needs_grad = T(np.ones((2, 3)))
    needs_grad.stop_gradient = False
    with pytest.raises(ValueError, match="has no gradient here"):
        minidp.linalg.qr(needs_grad)
    with pytest.raises(ValueError, match="has no gradient here"):
        minidp.linalg.svd(needs_grad, full_matrices=True)
    with pytest.raises(ValueError, match="at least two tensors"):
        minidp.linalg.multi_dot([x])
    with pytest.raises(ValueError, match="square matrices"):
        minidp.linalg.inv(x)
    with pytest.raises(ValueError, match="not positive definite"):
        minidp.linalg.cholesky(T(-np.eye(2)))
    with pytest.raises(ValueError, match="axis1 and axis2 must differ"):
        minidp.diagonal(x, 0, 1, -1)


def test_lstsq_matches_paddle_per_driver():
    x = minidp.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    y = minidp.to_tensor([[1.0], [2.0], [4.0]])
    expected_solution = np.linalg.lstsq(x.numpy().astype("float64"), y.numpy().astype("float64"), rcond=None)[0]
    # Paddle 3.3.1 on the CPU: which of residuals, rank, singular values each driver fills
    filled = {
        None: (0, "int32", 0),
        "gelsy": (0, "int32", 0),
        "gelss": (1, "int32", 2),
        "gelsd": (1, "int32", 2),
        "gels": (1, "int64", 0),
    }
    for driver, (n_residuals, rank_dtype, n_singular) in filled.items():
        solution, residuals, rank, singular = minidp.linalg.lstsq(x, y, driver=driver)
        np.testing.assert_allclose(solution.numpy(), expected_solution, rtol=1e-5)
        assert residuals.shape == [n_residuals] and rank.dtype.name == rank_dtype and singular.shape == [n_singular]
        assert solution.stop_gradient
    _, residuals, rank, singular = x.lstsq(y, driver="gelsd")
    np.testing.assert_allclose(residuals.numpy(), [0.0714285746216774], rtol=1e-5)
    assert rank.item() == 2
    np.testing.assert_allclose(singular.numpy(), [10.191428184509277, 0.3671378791332245], rtol=1e-5)
    wide = minidp.linalg.lstsq(x.T, y[:2], driver="gelsd")
    np.testing.assert_allclose(wide[0].numpy().ravel(), [0.92857027, -0.21428463, 0.14285696], rtol=1e-5)
    assert wide[1].shape == [0]


def test_lstsq_batches_and_validates():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2))
    solution, residuals, rank, singular = minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="gelss")
    for i in range(2):
        np.testing.assert_allclose(solution.numpy()[i], np.linalg.lstsq(a[i], b[i], rcond=None)[0], rtol=1e-10)
    assert residuals.shape == [2, 2] and rank.shape == [2] and singular.shape == [2, 3]
    with pytest.raises(ValueError, match="driver"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="svd")
    with pytest.raises(ValueError, match="leading shape"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b[:, :3]))


def test_inf_norm_gives_every_tied_extreme_the_full_gradient_as_paddle_does():
    x = T([3.0, -1.0, -3.0, 0.0])
    x.stop_gradient = False
    minidp.norm(x, float("inf")).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, -1.0, 0.0])


def test_matrix_exp_matches_paddle_and_its_series():
    generator = T(np.array([[0.0, 1.0], [-1.0, 0.0]]), stop_gradient=False)
    rotation = minidp.linalg.matrix_exp(generator)
    np.testing.assert_allclose(rotation.numpy(), [[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]], rtol=1e-14)
    rotation.sum().backward()
    paddle_grad = [[5.40302306e-01, 2.77555756e-17], [1.68294197e00, 5.40302306e-01]]  # Paddle 3.3.1
    np.testing.assert_allclose(generator.grad.numpy(), paddle_grad, rtol=1e-8, atol=1e-15)
    x = rng.uniform(-1.0, 1.0, (2, 3, 3)) * 6  # a norm that needs scaling and squaring
    series = sum(np.linalg.matrix_power(x / 64, k) / np.prod(np.arange(1, k + 1)) for k in range(30))
    for _ in range(6):
        series = series @ series
    np.testing.assert_allclose(minidp.linalg.matrix_exp(T(x)).numpy(), series, rtol=1e-10)
    single = minidp.linalg.matrix_exp(T(x.astype(np.float32)))
    assert single.dtype == np.float32 and single.shape == [2, 3, 3]
    with pytest.raises(ValueError, match="square"):
        minidp.linalg.matrix_exp(minidp.ones([2, 3]))
    with pytest.raises(TypeError, match="floating"):
        minidp.linalg.matrix_exp(T([[1, 2], [3, 4]]))


def test_matrix_exp_of_a_matrix_with_inf_or_nan_is_nan_and_leaves_the_others_exact():
    # Paddle 3.3.1 gives nan there (it raised OverflowError in minidp); the finite matrix of the
    # batch keeps its exact value (Paddle's one scaling for the whole batch makes it nan too)
    rotation = [[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]]
    for bad in (np.inf, np.nan):
        x = np.zeros((2, 2, 2))
        x[0] = [[0.0, 1.0], [-1.0, 0.0]]
        x[1, 0, 1] = bad
        with np.errstate(invalid="ignore"):
            out = minidp.linalg.matrix_exp(T(x)).numpy()
        np.testing.assert_allclose(out[0], rotation, rtol=1e-14)
        assert np.isnan(out[1]).all()
