"""minidp.distribution.Beta against Paddle 3.3.1, finite differences and sample statistics."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Beta, kl_divergence
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t

ALPHA, BETA = [0.5, 2.0], [1.5, 3.0]


@pytest.mark.parametrize("case", cases_of("Beta"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    value = t([0.3, 0.6])
    check_grad(lambda a, b: Beta(a, b).log_prob(value), ALPHA, BETA)
    check_grad(lambda a, b: Beta(a, b).entropy(), ALPHA, BETA)
    check_grad(lambda a, b: kl_divergence(Beta(a, b), Beta(b, a + 1)), ALPHA, BETA)


def test_sample_statistics_and_shapes():
    minidp.seed(7)
    draws = Beta(t(ALPHA), t(BETA)).sample([20000])
    assert draws.shape == [20000, 2] and draws.dtype == minidp.float64
    a, b = np.array(ALPHA), np.array(BETA)
    np.testing.assert_allclose(draws.numpy().mean(0), a / (a + b), atol=0.01)
    np.testing.assert_allclose(draws.numpy().var(0), a * b / ((a + b) ** 2 * (a + b + 1)), rtol=0.05)
    assert Beta(0.5, 2.0).sample([1]).shape == []  # Paddle squeezes a trailing axis of size 1
    assert Beta(0.5, 2.0).sample([3]).shape == [3]


def test_bad_arguments_and_missing_methods():
    with pytest.raises(TypeError, match="alpha must be a real number or a Tensor"):
        Beta([1.0], 2.0)
    with pytest.raises(NotImplementedError, match="rsample"):
        Beta(1.0, 2.0).rsample([2])
    with pytest.raises(NotImplementedError, match="kl_divergence"):
        Beta(1.0, 2.0).kl_divergence(Beta(2.0, 2.0))
