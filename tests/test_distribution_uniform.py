"""minidp.distribution.Uniform against Paddle 3.3.1, finite differences and sample statistics."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Uniform
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t


@pytest.mark.parametrize("case", cases_of("Uniform"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    low, high, value = [-1.0, 0.2], [2.0, 0.9], [0.5, 0.3]
    check_grad(lambda lo, hi, v: Uniform(lo, hi).log_prob(v), low, high, value, wrt=[0, 1])
    check_grad(lambda lo, hi, v: Uniform(lo, hi).prob(v), low, high, value, wrt=[0, 1])
    check_grad(lambda lo, hi: Uniform(lo, hi).entropy(), low, high)


def test_sample_is_differentiable_and_has_the_right_statistics():
    minidp.seed(4)
    low, high = t([-1.0, 2.0]), t([1.0, 2.5])
    low.stop_gradient = high.stop_gradient = False
    draws = Uniform(low, high).sample([20000])
    values = draws.numpy()
    assert draws.shape == [20000, 2] and draws.dtype == minidp.float64
    assert (values >= [-1.0, 2.0]).all() and (values < [1.0, 2.5]).all()
    np.testing.assert_allclose(values.mean(0), [0.0, 2.25], atol=0.02)
    np.testing.assert_allclose(values.var(0), [4 / 12, 0.25 / 12], rtol=0.03)
    draws.sum().backward()
    u = (values - [-1.0, 2.0]) / [2.0, 0.5]
    np.testing.assert_allclose(high.grad.numpy(), u.sum(0))
    np.testing.assert_allclose(low.grad.numpy(), (1 - u).sum(0))


def test_what_paddle_leaves_undefined_raises():
    for attempt in (lambda d: d.rsample([2]), lambda d: d.mean, lambda d: d.variance):
        with pytest.raises(NotImplementedError, match="Uniform"):
            attempt(Uniform(0.0, 1.0))
    assert Uniform(0.0, 1.0).sample([3]).shape == [3]
