"""minidp.distribution.Normal against Paddle 3.3.1, finite differences and sample statistics."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Normal
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t


@pytest.mark.parametrize("case", cases_of("Normal"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


@pytest.mark.parametrize(
    "method",
    [
        lambda d, v: d.log_prob(v),
        lambda d, v: d.entropy() + v * 0,
        lambda d, v: d.kl_divergence(Normal(v, v * v + 0.5)),
    ],
    ids=["log_prob", "entropy", "kl_divergence"],
)
def test_gradients_match_finite_differences(method):
    loc, scale, value = [0.3, -1.2], [0.5, 1.5], [0.1, 0.7]
    check_grad(lambda m, s, v: method(Normal(m, s), v), loc, scale, value)


def test_rsample_is_differentiable_and_has_the_right_statistics():
    minidp.seed(3)
    loc, scale = t([1.0, -2.0]), t([0.5, 3.0])
    loc.stop_gradient = scale.stop_gradient = False
    draws = Normal(loc, scale).rsample([20000])
    assert draws.shape == [20000, 2] and draws.dtype == minidp.float64
    np.testing.assert_allclose(draws.numpy().mean(0), [1.0, -2.0], atol=0.06)
    np.testing.assert_allclose(draws.numpy().std(0), [0.5, 3.0], rtol=0.03)
    draws.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [20000, 20000])
    eps = (draws.numpy() - [1.0, -2.0]) / [0.5, 3.0]
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0))


def test_sample_shapes_and_dtypes():
    assert Normal(0.0, 1.0).sample([3]).shape == [3]
    assert Normal(0.0, 1.0).sample().shape == []
    assert Normal([0.0, 1.0], [1.0, 2.0]).sample([4, 2]).shape == [4, 2, 2]
    assert Normal(np.zeros(2), np.ones(2)).sample([1]).dtype == minidp.float64
    assert Normal(1, 2).loc.dtype == minidp.float32
    assert Normal([[0.0, 1.0]], [1.0, 2.0]).batch_shape == (1, 2)


def test_bad_arguments_name_the_fix():
    with pytest.raises(TypeError, match="loc must be"):
        Normal("a", 1.0)
    with pytest.raises(ValueError, match="all must be"):
        Normal(minidp.to_tensor([0.0]), 1.0)
    with pytest.raises(TypeError, match="shape must be a list or tuple"):
        Normal(0.0, 1.0).sample(3)
    with pytest.raises(TypeError, match="other must be a Normal"):
        Normal(0.0, 1.0).kl_divergence(minidp.distribution.Uniform(0.0, 1.0))
