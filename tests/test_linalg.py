"""``minidp.linalg`` (``minidp/linalg.py``, Paddle's ``paddle.linalg``): lstsq, what each driver
fills as Paddle 3.3.1 on the CPU does, batches and argument checks."""
import numpy as np
import pytest

import minidp


def test_lstsq_matches_paddle_per_driver():
    x = minidp.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    y = minidp.to_tensor([[1.0], [2.0], [4.0]])
    expected_solution = np.linalg.lstsq(x.numpy().astype("float64"), y.numpy().astype("float64"), rcond=None)[0]
    # Paddle 3.3.1 on the CPU: which of residuals, rank, singular values each driver fills
    filled = {None: (0, "int32", 0), "gelsy": (0, "int32", 0), "gelss": (1, "int32", 2), "gelsd": (1, "int32", 2),
              "gels": (1, "int64", 0)}
    for driver, (n_residuals, rank_dtype, n_singular) in filled.items():
        solution, residuals, rank, singular = minidp.linalg.lstsq(x, y, driver=driver)
        np.testing.assert_allclose(solution.numpy(), expected_solution, rtol=1e-5)
        assert residuals.shape == [n_residuals] and rank.dtype.name == rank_dtype and singular.shape == [n_singular]
        assert solution.stop_gradient
    _, residuals, rank, singular = x.lstsq(y, driver="gelsd")
    np.testing.assert_allclose(residuals.numpy(), [0.0714285746216774], rtol=1e-5)
    assert rank.item() == 2
    np.testing.assert_allclose(singular.numpy(), [10.191428184509277, 0.3671378791332245], rtol=1e-5)
    wide = minidp.linalg.lstsq(x.T, y[:2], driver="gelsd")
    np.testing.assert_allclose(wide[0].numpy().ravel(), [0.92857027, -0.21428463, 0.14285696], rtol=1e-5)
    assert wide[1].shape == [0]


def test_lstsq_batches_and_validates():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2))
    solution, residuals, rank, singular = minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="gelss")
    for i in range(2):
        np.testing.assert_allclose(solution.numpy()[i], np.linalg.lstsq(a[i], b[i], rcond=None)[0], rtol=1e-10)
    assert residuals.shape == [2, 2] and rank.shape == [2] and singular.shape == [2, 3]
    with pytest.raises(ValueError, match="driver"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="svd")
    with pytest.raises(ValueError, match="leading shape"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b[:, :3]))
