"""Losses: values against hand computation, gradients against finite differences, Paddle's reductions."""
import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad

rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def t(array):
    return minidp.to_tensor(np.asarray(array))


def log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def reduce(values, reduction):
    return {"mean": values.mean(), "sum": values.sum(), "none": values}[reduction]


# --- cross-entropy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_shape", ["flat", "column"])
def test_cross_entropy_hard_labels(reduction, label_shape):
    x = rng.normal(size=(6, 4))
    labels = np.array([0, 3, 1, 1, 2, 0])
    lab = labels if label_shape == "flat" else labels[:, None]
    expected = -log_softmax(x)[np.arange(6), labels]
    out = F.cross_entropy(t(x), t(lab), reduction=reduction)
    if reduction == "none":
        assert out.shape == list(lab.shape)
    else:
        assert out.shape == []
    np.testing.assert_allclose(out.numpy(), reduce(expected, reduction).reshape(out.shape), rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(lab), reduction=reduction), x)


def test_cross_entropy_weight_and_ignore_index_follow_paddle():
    x = rng.normal(size=(5, 3))
    labels = np.array([0, 2, -100, 1, 2])
    weight = np.array([0.2, 1.0, 3.0])
    valid = labels != -100
    nll = -log_softmax(x)[np.arange(5), np.where(valid, labels, 0)]
    w = weight[np.where(valid, labels, 0)] * valid
    out = F.cross_entropy(t(x), t(labels), weight=t(weight))
    np.testing.assert_allclose(out.numpy(), (w * nll).sum() / w.sum(), rtol=1e-12)
    unweighted = F.cross_entropy(t(x), t(labels))
    np.testing.assert_allclose(unweighted.numpy(), nll[valid].mean(), rtol=1e-12)
    per_sample = F.cross_entropy(t(x), t(labels), weight=t(weight), reduction="none")
    np.testing.assert_allclose(per_sample.numpy(), w * nll, rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(labels), weight=t(weight)), x)
    check_grad(lambda a: F.cross_entropy(a, t(np.where(valid, labels, 1)), ignore_index=2, reduction="sum"), x)
    everything_ignored = F.cross_entropy(t(x[:1]), t([-100]))
    assert everything_ignored.item() == 0.0


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_soft_labels(reduction):
    x = rng.normal(size=(4, 3))
    target = rng.dirichlet(np.ones(3), size=4)
    expected = -(target * log_softmax(x)).sum(axis=1, keepdims=True)
    out = F.cross_entropy(t(x), t(target), soft_label=True, reduction=reduction)
    np.testing.assert_allclose(out.numpy(), reduce(expected, reduction), rtol=1e-12)
    check_grad(lambda a, b: F.cross_entropy(a, b, soft_label=True, reduction=reduction), x, target)
    weight = np.array([1.0, 2.0, 0.5])
    check_grad(lambda a: F.cross_entropy(a, t(target), weight=t(weight), soft_label=True, reduction=reduction), x)


def test_cross_entropy_soft_label_weight_mean():
    x = rng.normal(size=(4, 3))
    target = rng.dirichlet(np.ones(3), size=4)
    weight = np.array([1.0, 2.0, 0.5])
    sample_weight = target @ weight
    losses = -(target * log_softmax(x)).sum(axis=1) * sample_weight
    out = F.cross_entropy(t(x), t(target), weight=t(weight), soft_label=True)
    np.testing.assert_allclose(out.numpy(), losses.sum() / sample_weight.sum(), rtol=1e-12)


def test_cross_entropy_other_axis_probabilities_and_layer():
    x = rng.normal(size=(2, 3, 4))
    labels = rng.integers(0, 3, size=(2, 4))
    expected = -np.take_along_axis(log_softmax(x, axis=1), labels[:, None], axis=1).mean()
    np.testing.assert_allclose(F.cross_entropy(t(x), t(labels), axis=1).numpy(), expected, rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(labels), axis=1), x)
    probs = rng.dirichlet(np.ones(4), size=3)
    labels = np.array([1, 0, 3])
    np.testing.assert_allclose(F.cross_entropy(t(probs), t(labels), use_softmax=False).numpy(),
                               -np.log(probs[np.arange(3), labels]).mean(), rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(labels), use_softmax=False), probs)
    layer = nn.CrossEntropyLoss(reduction="sum")
    np.testing.assert_allclose(layer(t(probs), t(labels)).numpy(),
                               F.cross_entropy(t(probs), t(labels), reduction="sum").numpy())


def test_cross_entropy_is_stable_for_large_logits():
    x = t(np.array([[1000.0, 0.0], [0.0, -1000.0]], np.float32))
    x.stop_gradient = False
    loss = F.cross_entropy(x, t([1, 0]))
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), 500.0)
    assert np.isfinite(x.grad.numpy()).all()


def test_cross_entropy_argument_errors():
    x = t(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="integers"):
        F.cross_entropy(x, t(np.array([0.0, 1.0], np.float32)))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        F.cross_entropy(x, t([0, 3]))
    with pytest.raises(ValueError, match="label shape"):
        F.cross_entropy(x, t([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, t([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="one value per class"):
        F.cross_entropy(x, t([0, 1]), weight=t(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="soft labels"):
        F.cross_entropy(x, t(np.ones((3, 3), np.float32)), soft_label=True)


# --- nll ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    logp = log_softmax(rng.normal(size=(4, 3, 2)), axis=1)
    labels = np.array([[0, 2], [1, 1], [2, -100], [0, 0]])
    weight = np.array([0.5, 1.0, 2.0])
    valid = labels != -100
    safe = np.where(valid, labels, 0)
    w = weight[safe] * valid
    picked = -np.take_along_axis(logp, safe[:, None], axis=1)[:, 0] * w
    expected = {"mean": picked.sum() / w.sum(), "sum": picked.sum(), "none": picked}[reduction]
    out = F.nll_loss(t(logp), t(labels), weight=t(weight), reduction=reduction)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    check_grad(lambda a: F.nll_loss(a, t(labels), weight=t(weight), reduction=reduction), logp)
    np.testing.assert_allclose(nn.NLLLoss(weight=t(weight), reduction=reduction)(t(logp), t(labels)).numpy(),
                               expected, rtol=1e-12)


def test_nll_of_log_softmax_equals_cross_entropy():
    x = t(rng.normal(size=(5, 4)))
    labels = t([0, 1, 2, 3, 0])
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(x), labels).numpy(),
                               F.cross_entropy(x, labels).numpy(), rtol=1e-12)


# --- regression and binary losses ------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_and_l1(reduction):
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(F.mse_loss(t(x), t(y), reduction).numpy(), reduce((x - y) ** 2, reduction))
    np.testing.assert_allclose(F.l1_loss(t(x), t(y), reduction).numpy(), reduce(np.abs(x - y), reduction))
    np.testing.assert_allclose(nn.MSELoss(reduction)(t(x), t(y)).numpy(), reduce((x - y) ** 2, reduction))
    np.testing.assert_allclose(nn.L1Loss(reduction)(t(x), t(y)).numpy(), reduce(np.abs(x - y), reduction))
    check_grad(lambda a, b: F.mse_loss(a, b, reduction), x, y)
    check_grad(lambda a, b: F.l1_loss(a, b, reduction), x, y)


def test_mse_broadcasting_and_dtype_rules():
    check_grad(F.mse_loss, rng.normal(size=(3, 4)), rng.normal(size=(4,)))
    out = F.mse_loss(t(np.ones(3, np.float32)), t(np.array([0, 1, 2])))
    assert out.dtype == np.float32 and out.item() == pytest.approx(2 / 3)
    with pytest.raises(TypeError, match="astype"):
        F.mse_loss(t(np.ones(3, np.float32)), t(np.ones(3)))
    with pytest.raises(TypeError, match="Tensor"):
        F.mse_loss(t(np.ones(3)), np.ones(3))


def naive_bce(x, y, weight=None, pos_weight=None):
    p = 1 / (1 + np.exp(-x))
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p))
    return loss if weight is None else loss * weight


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(reduction):
    x = rng.normal(size=(4, 3)) * 3
    y = rng.uniform(size=(4, 3))
    weight, pos_weight = rng.uniform(0.5, 2, size=3), rng.uniform(0.5, 2, size=3)
    out = F.binary_cross_entropy_with_logits(t(x), t(y), reduction=reduction)
    np.testing.assert_allclose(out.numpy(), reduce(naive_bce(x, y), reduction), rtol=1e-10)
    out = F.binary_cross_entropy_with_logits(t(x), t(y), t(weight), reduction, t(pos_weight))
    np.testing.assert_allclose(out.numpy(), reduce(naive_bce(x, y, weight, pos_weight), reduction), rtol=1e-10)
    check_grad(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction), x, y)
    check_grad(lambda a, b: F.binary_cross_entropy_with_logits(a, b, t(weight), reduction, t(pos_weight)), x, y)
    layer = nn.BCEWithLogitsLoss(t(weight), reduction, t(pos_weight))
    np.testing.assert_allclose(layer(t(x), t(y)).numpy(), reduce(naive_bce(x, y, weight, pos_weight), reduction),
                               rtol=1e-10)


def test_bce_with_logits_is_stable():
    out = F.binary_cross_entropy_with_logits(t(np.array([800.0, -800.0])), t(np.array([0.0, 1.0])), reduction="none")
    np.testing.assert_allclose(out.numpy(), [800.0, 800.0])


def test_loss_layers_validate_reduction():
    for cls in (nn.MSELoss, nn.L1Loss, nn.CrossEntropyLoss, nn.NLLLoss, nn.BCEWithLogitsLoss):
        with pytest.raises(ValueError, match="reduction"):
            cls(reduction="avg")


def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.normal(size=(6, 4))
    labels = np.array([0, 3, -100, 1, 2, 3])
    weight = rng.uniform(0.5, 2.0, size=4)
    for reduction in REDUCTIONS:
        ours = F.cross_entropy(t(x), t(labels), weight=t(weight), reduction=reduction)
        theirs = tf.cross_entropy(torch.tensor(x), torch.tensor(labels), weight=torch.tensor(weight),
                                  reduction=reduction)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    y = rng.uniform(size=(6, 4))
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(t(x), t(y), pos_weight=t(weight)).numpy(),
        tf.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), pos_weight=torch.tensor(weight)).numpy(),
        rtol=1e-12)
