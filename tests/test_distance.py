"""Distances (``minidp/nn/functional/distance.py``): cosine similarity, pairwise distance and
pdist, their layers and gradients."""

import numpy as np
import pytest

import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)


def test_cosine_similarity_and_pairwise_distance():
    a, b = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 3, 2))
    cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    np.testing.assert_allclose(F.cosine_similarity(t(a), t(b)).numpy(), cos)
    np.testing.assert_allclose(nn.CosineSimilarity(axis=1)(t(a), t(b)).numpy(), cos)
    check_grad(F.cosine_similarity, a, b)
    x = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
    y = np.cos(np.arange(12.0)).reshape(3, 4)
    np.testing.assert_allclose(
        F.cosine_similarity(t(x), t(y)).numpy(), [-0.3659107, 0.90745805, -0.71707172], rtol=1e-7
    )  # Paddle 3.3.1
    np.testing.assert_allclose(
        F.pairwise_distance(t(x), t(y)).numpy(), [3.10057275, 0.72342437, 4.1146268], rtol=1e-7
    )  # Paddle 3.3.1
    for p in (1.0, 3.0):
        np.testing.assert_allclose(
            nn.PairwiseDistance(p, keepdim=True)(t(x), t(y)).numpy(),
            ((np.abs(x - y + 1e-6) ** p).sum(1, keepdims=True)) ** (1 / p),
        )
        check_grad(lambda u, v: F.pairwise_distance(u, v, p), x, y)
    np.testing.assert_allclose(F.pairwise_distance(t(x), t(y), float("inf")).numpy(), np.abs(x - y + 1e-6).max(1))
    with pytest.raises(TypeError, match="p must be a number"):
        F.pairwise_distance(t(x), t(y), "2")


def test_pdist():
    x = np.arange(6.0).reshape(3, 2) ** 2
    np.testing.assert_allclose(F.pdist(t(x)).numpy(), [8.94427191, 28.8444102, 20.0])  # Paddle 3.3.1
    y = rng.normal(size=(4, 3))
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    np.testing.assert_allclose(F.pdist(t(y), p=1.0).numpy(), [np.abs(y[i] - y[j]).sum() for i, j in pairs])
    check_grad(F.pdist, y)
    with pytest.raises(ValueError, match="2-D"):
        F.pdist(t(y[0]))
