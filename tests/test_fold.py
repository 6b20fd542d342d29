"""unfold and fold (``minidp/nn/functional/fold.py``) and their layers, against a NumPy
im2col."""

import numpy as np
import pytest

import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)


def np_unfold(x, kernel, stride, pads, dilation):
    top, left, bottom, right = pads
    x = np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)])
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    blocks = [
        x[:, :, i * sh : i * sh + (kh - 1) * dh + 1 : dh, j * sw : j * sw + (kw - 1) * dw + 1 : dw].reshape(n, -1)
        for i in range(ho)
        for j in range(wo)
    ]
    return np.stack(blocks, -1)


def test_unfold_and_fold():
    x = rng.normal(size=(2, 3, 5, 6))
    out = F.unfold(t(x), [2, 3], strides=[1, 2], paddings=[1, 0, 0, 1], dilations=[2, 1])
    np.testing.assert_array_equal(out.numpy(), np_unfold(x, (2, 3), (1, 2), (1, 0, 0, 1), (2, 1)))
    check_grad(lambda a: F.unfold(a, 2, strides=2, paddings=1), x)
    image = np.arange(9.0).reshape(1, 1, 3, 3) + 1
    cols = F.unfold(t(image), [2, 2])
    np.testing.assert_array_equal(
        F.fold(cols, [3, 3], [2, 2]).numpy(), [[[[1, 4, 3], [8, 20, 12], [7, 16, 9]]]]
    )  # Paddle 3.3.1
    blocks = rng.normal(size=(2, 18, 9))
    check_grad(lambda a: F.fold(a, [5, 5], 3, strides=2, paddings=1), blocks)
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    x5 = rng.normal(size=(2, 3, 5, 5))
    unfolded = F.unfold(t(x5), 3, strides=2, paddings=1).numpy()
    y = rng.normal(size=unfolded.shape)
    folded = F.fold(t(y), [5, 5], 3, strides=2, paddings=1).numpy()
    np.testing.assert_allclose((unfolded * y).sum(), (x5 * folded).sum())
    assert nn.Unfold([2, 2])(t(image)).shape == [1, 4, 4]
    assert nn.Fold([3, 3], [2, 2])(cols).shape == [1, 1, 3, 3]
    with pytest.raises(ValueError, match="fold: input must be"):
        F.fold(t(blocks), [4, 4], 3)
    with pytest.raises(ValueError, match="paddings"):
        F.unfold(t(x), 2, paddings=[1, 2, 3])
