"""minidp.distribution.Multinomial against Paddle 3.3.1, finite differences and sample statistics."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Multinomial
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t

PROBS = [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]


@pytest.mark.parametrize("case", cases_of("Multinomial"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    counts = t([[1.0, 1.0, 2.0], [0.0, 4.0, 0.0]])
    check_grad(lambda p: Multinomial(4, p).log_prob(counts), PROBS)
    check_grad(lambda p: Multinomial(4, p).entropy(), PROBS)


def test_sample_statistics_and_shapes():
    minidp.seed(9)
    dist = Multinomial(5, t(PROBS))
    draws = dist.sample([5000])
    assert draws.shape == [5000, 2, 3] and draws.dtype == minidp.float64
    np.testing.assert_allclose(draws.numpy().sum(-1), 5.0)
    np.testing.assert_allclose(draws.numpy().mean(0), dist.mean.numpy(), atol=0.06)
    np.testing.assert_allclose(draws.numpy().var(0), dist.variance.numpy(), rtol=0.08)


def test_bad_arguments():
    for count in (0, 2.0, True):
        with pytest.raises(ValueError, match="total_count must be an int"):
            Multinomial(count, t([0.5, 0.5]))
    with pytest.raises(TypeError, match="probs must be a Tensor"):
        Multinomial(2, [0.5, 0.5])
