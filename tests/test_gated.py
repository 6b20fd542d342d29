"""minidp/nn/functional/gated.py: swiglu against the values Paddle 3.3.1 gives, and its gradients."""

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from gradcheck import check_grad


def test_swiglu_matches_paddle():
    x = minidp.to_tensor([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(F.swiglu(x).numpy(), [[2.19317579, 7.04637623]], rtol=1e-6)
    np.testing.assert_allclose(
        F.swiglu(x, minidp.full([1, 4], 2.0)).numpy(), [[1.46211720, 3.52318811, 5.71544504, 7.85611010]], rtol=1e-6
    )
    check_grad(lambda a: F.swiglu(a), np.array([[0.5, -1.0, 2.0, 0.3]]))
    check_grad(lambda a, b: F.swiglu(a, b), np.array([0.5, -1.0]), np.array([2.0, 0.3]))
    with pytest.raises(ValueError, match="even length"):
        F.swiglu(minidp.ones([1, 3]))
