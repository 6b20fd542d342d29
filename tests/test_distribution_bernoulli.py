"""minidp.distribution.Bernoulli against Paddle 3.3.1, finite differences and sample frequencies."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Bernoulli
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t

PROBS, OTHER, VALUE = [0.2, 0.7, 0.95], [0.5, 0.1, 0.9], [1.0, 0.0, 1.0]


@pytest.mark.parametrize("case", cases_of("Bernoulli"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    value = t(VALUE)
    check_grad(lambda p: Bernoulli(p).log_prob(value), PROBS)
    check_grad(lambda p: Bernoulli(p).entropy(), PROBS)
    check_grad(lambda p, q: Bernoulli(p).kl_divergence(Bernoulli(q)), PROBS, OTHER)


def test_samples_and_relaxed_samples():
    minidp.seed(6)
    probs = t(PROBS)
    probs.stop_gradient = False
    draws = Bernoulli(probs).sample([20000])
    assert draws.shape == [20000, 3] and draws.dtype == minidp.float64 and draws.stop_gradient
    np.testing.assert_allclose(draws.numpy().mean(0), PROBS, atol=0.015)
    relaxed = Bernoulli(probs).rsample([20000], temperature=0.5)
    np.testing.assert_allclose((relaxed.numpy() > 0).mean(0), PROBS, atol=0.015)
    relaxed.sum().backward()
    p = np.array(PROBS)
    np.testing.assert_allclose(probs.grad.numpy(), 20000 / (p * (1 - p)) / 0.5)
    cdf = Bernoulli(probs).cdf(t([-1.0, 0.5, 1.0])).numpy()
    np.testing.assert_allclose(cdf, [0.0, 0.3, 1.0])


def test_bad_arguments():
    with pytest.raises(TypeError, match="probs must be"):
        Bernoulli("0.3")
    with pytest.raises(ValueError, match="temperature"):
        Bernoulli(0.3).rsample([2], temperature=0.0)
    with pytest.raises(TypeError, match="other must be a Bernoulli"):
        Bernoulli(0.3).kl_divergence(minidp.distribution.Normal(0.0, 1.0))
