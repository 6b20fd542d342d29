"""minidp.distribution's base class and shared argument rules."""

import warnings

import numpy as np
import pytest

import minidp
from minidp.distribution import Distribution, Normal


def test_base_class_shapes_and_undefined_methods():
    dist = Distribution([2, 3], [4])
    assert (dist.batch_shape, dist.event_shape) == ((2, 3), (4,))
    for attempt in (lambda: dist.mean, lambda: dist.sample(), lambda: dist.entropy(), lambda: dist.log_prob(0.0)):
        with pytest.raises(NotImplementedError):
            attempt()


def test_values_are_cast_to_the_parameters_dtype():
    dist = Normal(minidp.to_tensor([0.0]), minidp.to_tensor([1.0]))
    with pytest.warns(UserWarning, match="value is cast"):
        out = dist.log_prob(minidp.to_tensor([0.5], dtype="float64"))
    assert out.dtype == minidp.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(dist.log_prob(0.5).numpy(), [-1.0439385], rtol=1e-6)


def test_package_namespace_and_top_level():
    assert minidp.distribution.Normal is Normal
    assert {"Normal", "Uniform", "Categorical", "Bernoulli", "Beta", "Dirichlet", "Multinomial"} <= set(
        minidp.distribution.__all__
    )
