"""minidp.distribution.Dirichlet against Paddle 3.3.1, finite differences and sample statistics."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Dirichlet, kl_divergence
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t

CONCENTRATION = [[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]]


@pytest.mark.parametrize("case", cases_of("Dirichlet"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    value = t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    check_grad(lambda c: Dirichlet(c).log_prob(value), CONCENTRATION)
    check_grad(lambda c: Dirichlet(c).entropy(), CONCENTRATION)
    check_grad(
        lambda c, d: kl_divergence(Dirichlet(c), Dirichlet(d)), CONCENTRATION, [[1.0, 1.0, 1.0], [2.0, 3.0, 0.5]]
    )


def test_sample_statistics_and_shapes():
    minidp.seed(8)
    dist = Dirichlet(t(CONCENTRATION))
    draws = dist.sample([20000])
    assert draws.shape == [20000, 2, 3] and draws.dtype == minidp.float64
    np.testing.assert_allclose(draws.numpy().sum(-1), 1.0)
    np.testing.assert_allclose(draws.numpy().mean(0), dist.mean.numpy(), atol=0.01)
    np.testing.assert_allclose(draws.numpy().var(0), dist.variance.numpy(), rtol=0.06)
    assert (dist.batch_shape, dist.event_shape) == ((2,), (3,))


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one dimension"):
        Dirichlet(minidp.to_tensor(1.0))
    with pytest.raises(TypeError, match="concentration must be a Tensor"):
        Dirichlet([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="rsample"):
        Dirichlet(t([1.0, 2.0])).rsample([2])
