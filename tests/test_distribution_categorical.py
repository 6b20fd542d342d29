"""minidp.distribution.Categorical against Paddle 3.3.1, finite differences and sample frequencies."""

import numpy as np
import pytest

import minidp
from minidp.distribution import Categorical
from distribution_cases import cases_of, compare_with_paddle
from gradcheck import check_grad, t

LOGITS = [[1.0, 2.0, 3.0], [0.5, 1.0, 4.0]]


@pytest.mark.parametrize("case", cases_of("Categorical"), ids=lambda c: c[0])
def test_matches_paddle(case):
    compare_with_paddle(minidp.distribution, minidp.to_tensor, case)


def test_gradients_match_finite_differences():
    index = minidp.to_tensor([0, 2])
    check_grad(lambda x: Categorical(x).entropy(), LOGITS)
    check_grad(lambda x: Categorical(x).log_prob(index), LOGITS)
    check_grad(lambda x, y: Categorical(x).kl_divergence(Categorical(y)), LOGITS, [[1.0, 1.0, 2.0], [3.0, 1.0, 1.0]])


def test_sample_follows_softmax_of_the_logits():
    minidp.seed(5)
    draws = Categorical(t(LOGITS)).sample([20000])
    assert draws.shape == [20000, 2] and draws.dtype == minidp.int64
    expected = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
    for row in range(2):
        frequencies = np.bincount(draws.numpy()[:, row], minlength=3) / 20000
        np.testing.assert_allclose(frequencies, expected[row], atol=0.015)
    assert Categorical(t([1.0, 2.0])).sample([]).shape == []
    assert Categorical(t([1.0, 2.0])).sample([2, 3]).shape == [2, 3]
    assert Categorical(t(LOGITS)).batch_shape == (2,)


def test_probs_needs_integer_indices():
    with pytest.raises(TypeError, match="integer Tensor"):
        Categorical(t(LOGITS)).probs(t([0.0, 1.0]))
    with pytest.raises(TypeError, match="other must be a Categorical"):
        Categorical(t(LOGITS)).kl_divergence(minidp.distribution.Normal(0.0, 1.0))
