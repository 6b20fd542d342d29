"""Random sampling (``minidp/ops/sampling.py``): bernoulli, binomial, multinomial, poisson,
log_normal, standard_normal, the *_like creators and range; and the in-place random refills of
``minidp/ops/inplace.py`` (``bernoulli_``, ``exponential_``, ...), checked here by the same
distribution bounds as the samplers they refill with.

Distribution checks use many draws and loose bounds (several standard errors), and a fixed seed,
so they are deterministic and not flaky.
"""

from __future__ import annotations

import numpy as np
import pytest

import minidp

N = 20000


@pytest.fixture(autouse=True)
def _seeded():
    minidp.seed(2024)


def test_draws_repeat_after_seeding():
    first = [
        minidp.bernoulli(minidp.full([50], 0.5)).numpy(),
        minidp.poisson(minidp.full([50], 3.0)).numpy(),
        minidp.multinomial(minidp.to_tensor([0.2, 0.8]), 5, True).numpy(),
    ]
    minidp.manual_seed(2024)
    second = [
        minidp.bernoulli(minidp.full([50], 0.5)).numpy(),
        minidp.poisson(minidp.full([50], 3.0)).numpy(),
        minidp.multinomial(minidp.to_tensor([0.2, 0.8]), 5, True).numpy(),
    ]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_bernoulli():
    probs = minidp.to_tensor(np.repeat([[0.0], [0.3], [1.0]], N, axis=1), dtype="float32")
    out = minidp.bernoulli(probs)
    assert out.dtype == np.float32 and out.stop_gradient
    values = out.numpy()
    assert set(np.unique(values)) <= {0.0, 1.0}
    assert values[0].sum() == 0 and values[2].sum() == N and abs(values[1].mean() - 0.3) < 0.02
    assert abs(minidp.bernoulli(minidp.zeros([N]), p=0.9).numpy().mean() - 0.9) < 0.02
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        minidp.bernoulli(minidp.to_tensor([1.5]))


def test_binomial():
    out = minidp.binomial(minidp.full([N], 10, "int64"), minidp.full([N], 0.3))
    assert out.dtype == np.int64
    values = out.numpy()
    assert values.min() >= 0 and values.max() <= 10 and abs(values.mean() - 3.0) < 0.1


def test_multinomial():
    weights = minidp.to_tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
    out = minidp.multinomial(weights, N, replacement=True)
    assert out.dtype == np.int64 and out.shape == [2, N]
    first, second = out.numpy()
    assert abs((first == 1).mean() - 0.75) < 0.02 and not (first == 2).any() and (second == 2).all()
    drawn = minidp.to_tensor([1.0, 1.0, 1.0, 1.0]).multinomial(4)
    assert sorted(drawn.numpy().tolist()) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="without replacement"):
        minidp.multinomial(weights, 2)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        minidp.multinomial(minidp.ones([2, 2, 2]))
    with pytest.raises(ValueError, match="negative"):
        minidp.multinomial(minidp.to_tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="positive"):
        minidp.multinomial(minidp.zeros([2, 3]), replacement=True)


def test_poisson():
    out = minidp.poisson(minidp.full([N], 4.0, "float64"))
    assert out.dtype == np.float64
    values = out.numpy()
    assert np.array_equal(values, np.round(values)) and abs(values.mean() - 4.0) < 0.1 and abs(values.var() - 4) < 0.3
    with pytest.raises(ValueError, match="negative"):
        minidp.poisson(minidp.to_tensor([-1.0]))


def test_log_normal_and_standard_normal():
    out = minidp.log_normal(0.5, 0.25, [N])
    assert out.dtype == np.float32 and out.shape == [N]
    logs = np.log(out.numpy())
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.25) < 0.01
    assert minidp.log_normal(minidp.zeros([3, 2]), 1.0).shape == [3, 2]
    normal = minidp.standard_normal([N], "float64")
    assert normal.dtype == np.float64 and abs(normal.numpy().mean()) < 0.03 and abs(normal.numpy().std() - 1) < 0.03


def test_like_creators_follow_paddle_dtypes():
    x = minidp.ones([4, 5], "float64")
    assert minidp.rand_like(x).dtype == np.float64 and minidp.rand_like(x, dtype="float32").dtype == np.float32
    uniform = minidp.rand_like(minidp.ones([N])).numpy()
    assert uniform.min() >= 0 and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.01
    assert minidp.randn_like(x).shape == [4, 5] and minidp.randn_like(x, "float16").dtype == np.float16
    assert not minidp.randn_like(x, requires_grad=True).stop_gradient
    assert minidp.rand_like(x, device="cpu").place == "cpu"
    with pytest.raises(ValueError, match="unknown place"):
        minidp.rand_like(x, device="tpu")
    ints = minidp.randint_like(minidp.ones([N]), 3)
    assert ints.dtype == np.float32 and set(np.unique(ints.numpy())) == {0.0, 1.0, 2.0}
    bounded = minidp.randint_like(x, -2, 2, "int32")
    assert bounded.dtype == np.int32 and bounded.numpy().min() >= -2 and bounded.numpy().max() < 2
    with pytest.raises(ValueError, match="below high"):
        minidp.randint_like(x, 3, 3)


def test_range_includes_the_end_like_paddle():
    np.testing.assert_array_equal(minidp.range(0, 3).numpy(), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(minidp.range(1, 2, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75, 2.0])
    np.testing.assert_array_equal(minidp.range(5, 1, -2).numpy(), [5.0, 3.0, 1.0])
    np.testing.assert_array_equal(minidp.range(3).numpy(), [0.0, 1.0, 2.0, 3.0])
    assert minidp.range(0, 3).dtype == np.float32 and minidp.range(0, 3, dtype="int64").dtype == np.int64
    with pytest.raises(ValueError, match="step"):
        minidp.range(0, 3, 0)


def test_in_place_random_refills():
    x = minidp.zeros([N])
    assert x.bernoulli_(0.25) is x and abs(x.numpy().mean() - 0.25) < 0.02
    assert minidp.bernoulli_(x, minidp.full([N], 1.0)) is x and x.numpy().min() == 1.0
    assert x.exponential_(2.0) is x and abs(x.numpy().mean() - 0.5) < 0.02 and x.numpy().min() >= 0
    assert x.cauchy_(1.0, 2.0) is x and abs(np.median(x.numpy()) - 1.0) < 0.1
    assert x.log_normal_(0.0, 0.5) is x and abs(np.log(x.numpy()).std() - 0.5) < 0.02
    assert x.geometric_(0.5) is x and x.numpy().min() >= 0 and abs(x.numpy().mean() - 1 / np.log(2)) < 0.05
    assert minidp.geometric_(x, 0.5) is x and minidp.cauchy_(x) is x and minidp.log_normal_(x) is x
    ints = minidp.zeros([N], "int32")
    assert ints.random_(5) is ints and set(np.unique(ints.numpy())) == {0, 1, 2, 3, 4}
    assert set(np.unique(ints.random_(-2, 0).numpy())) == {-2, -1}
    floats = minidp.zeros([N]).random_()
    assert np.array_equal(floats.numpy(), np.round(floats.numpy())) and floats.numpy().max() > 2**20
    with pytest.raises(ValueError, match="below to"):
        ints.random_(3, 3)


def test_in_place_refill_refuses_a_leaf_that_needs_a_gradient():
    x = minidp.zeros([3])
    x.stop_gradient = False
    with pytest.raises(ValueError, match="leaf tensor"):
        x.bernoulli_()
    with minidp.no_grad():
        assert x.bernoulli_(1.0).numpy().tolist() == [1.0, 1.0, 1.0]
