"""Losses (``nn/functional/loss.py``, with the ones composed of other ops in ``composite_loss.py``
and CTC in ``ctc.py``) and their layers (``nn/layers/loss.py``): values against hand
computation, gradients against finite differences, Paddle's reductions. One file: the tables of
Paddle's values and of gradient cases list every loss side by side."""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
import minidp.nn.functional as F
from gradcheck import check_grad, t

rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


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
    # Paddle 3.3.1: an unweighted mean with a negative ignore_index divides by all samples,
    # with a non-negative one by the samples kept
    unweighted = F.cross_entropy(t(x), t(labels))
    np.testing.assert_allclose(unweighted.numpy(), nll[valid].sum() / 5, rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(labels)), x)
    relabelled = np.where(valid, labels, 1)
    nll_relabelled = -log_softmax(x)[np.arange(5), relabelled]
    nonnegative = F.cross_entropy(t(x), t(relabelled), ignore_index=2)
    np.testing.assert_allclose(nonnegative.numpy(), nll_relabelled[relabelled != 2].mean(), rtol=1e-12)
    per_sample = F.cross_entropy(t(x), t(labels), weight=t(weight), reduction="none")
    np.testing.assert_allclose(per_sample.numpy(), w * nll, rtol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, t(labels), weight=t(weight)), x)
    check_grad(lambda a: F.cross_entropy(a, t(np.where(valid, labels, 1)), ignore_index=2, reduction="sum"), x)
    everything_ignored = F.cross_entropy(t(x[:1]), t([-100]))
    assert everything_ignored.item() == 0.0


@pytest.mark.parametrize("axis", [-1, 1])
def test_hard_label_cross_entropy_matches_log_softmax_and_nll_in_float32(axis):
    local = np.random.default_rng(2)
    x = (local.normal(size=(6, 5, 2)) * 4).astype("float32")
    x = x if axis == 1 else x.transpose(0, 2, 1).copy()
    labels = local.integers(0, 5, size=(6, 2))
    labels[0, 1] = -100
    weight = t(local.uniform(0.5, 2, size=5).astype("float32"))
    g = local.normal(size=(6, 2)).astype("float32")
    runs = []
    for fused in (True, False):
        logits = minidp.to_tensor(x, stop_gradient=False)
        if fused:
            loss = F.cross_entropy(logits, t(labels), weight=weight, reduction="none", axis=axis)
        else:
            logp = F.log_softmax(logits, axis=axis)
            logp = logp if axis == 1 else logp.transpose([0, 2, 1])
            loss = F.nll_loss(logp, t(labels), weight=weight, reduction="none")
        (loss * t(g)).sum().backward()
        runs.append((loss.numpy(), logits.grad.numpy()))
    for fused, composed in zip(*runs):
        np.testing.assert_allclose(fused, composed, rtol=1e-5, atol=1e-6)


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
    np.testing.assert_allclose(
        F.cross_entropy(t(probs), t(labels), use_softmax=False).numpy(),
        -np.log(probs[np.arange(3), labels]).mean(),
        rtol=1e-12,
    )
    check_grad(lambda a: F.cross_entropy(a, t(labels), use_softmax=False), probs)
    layer = nn.CrossEntropyLoss(reduction="sum")
    np.testing.assert_allclose(
        layer(t(probs), t(labels)).numpy(), F.cross_entropy(t(probs), t(labels), reduction="sum").numpy()
    )


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
    np.testing.assert_allclose(
        nn.NLLLoss(weight=t(weight), reduction=reduction)(t(logp), t(labels)).numpy(), expected, rtol=1e-12
    )


def test_nll_of_log_softmax_equals_cross_entropy():
    x = t(rng.normal(size=(5, 4)))
    labels = t([0, 1, 2, 3, 0])
    np.testing.assert_allclose(
        F.nll_loss(F.log_softmax(x), labels).numpy(), F.cross_entropy(x, labels).numpy(), rtol=1e-12
    )


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
    np.testing.assert_allclose(
        layer(t(x), t(y)).numpy(), reduce(naive_bce(x, y, weight, pos_weight), reduction), rtol=1e-10
    )


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
        theirs = tf.cross_entropy(
            torch.tensor(x), torch.tensor(labels), weight=torch.tensor(weight), reduction=reduction
        )
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    y = rng.uniform(size=(6, 4))
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(t(x), t(y), pos_weight=t(weight)).numpy(),
        tf.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), pos_weight=torch.tensor(weight)).numpy(),
        rtol=1e-12,
    )


# --- the other Paddle losses -----------------------------------------------------------------------
# Shared inputs; PADDLE holds values recorded by hand from PaddlePaddle 3.3.1 (CPU, float64) on them.
X = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
Y = np.cos(np.arange(12.0)).reshape(3, 4)
P = 1 / (1 + np.exp(-X))
Q = (np.sin(np.arange(12.0)).reshape(3, 4) + 1) / 2
SIGN = np.sign(Y)
CLASSES = np.array([0, 3, 1])
DICE_P = Q[:, :3] / Q[:, :3].sum(1, keepdims=True)
PADDLE = {
    "bce": 0.95203037,
    "kl": -0.79048052,
    "soft_margin": 0.91794953,
    "hinge": 5.18181818,
    "poisson": 2.93624273,
    "gauss": 3.06898537,
    "dice": 0.56877936,
    "smooth_l1": [
        [1.125, 0.73606024, 0.10012344, 0.098807],
        [0.09089607, 0.01857688, 0.15053969, 0.00035457],
        [0.47047729, 1.01238331, 1.13544486, 0.87278715],
    ],
    "mrl": [2.7, 0.0, 0.64748953, 0.64453795],
    "cel": [1.3659107, 0.80745805, 1.71707172],
    "triplet": [0.49885553, 1.35020906, 2.555605],
    "mml": [1.22727273, 0.27272727, 0.90909091],
    "mlsm": [0.96720056, 0.65956866, 1.12707938],
    "ls": [[1.87822974], [1.01913888], [1.59186612]],
}


def np_log_sigmoid(x):
    return -np.logaddexp(0, -x)


def np_stirling(y):
    return np.where(y > 1, y * np.log(np.maximum(y, 1)) - y + 0.5 * np.log(2 * np.pi * np.maximum(y, 1)), 0)


def np_distance(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def np_cos(a, b):
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def np_smooth_target(labels, classes, eps):
    return (1 - eps) * np.eye(classes)[labels] + eps / classes


LOSS_CASES = {
    # name: (minidp call on tensors, the same loss in NumPy, inputs, indices of inputs to differentiate)
    "bce": (
        lambda a, b: F.binary_cross_entropy(a, b),
        lambda a, b: -(b * np.log(a) + (1 - b) * np.log(1 - a)).mean(),
        [P, Q],
        [0, 1],
    ),
    "smooth_l1": (
        lambda a, b: F.smooth_l1_loss(a, b, reduction="none", delta=0.5),
        lambda a, b: np.where(np.abs(a - b) < 0.5, 0.5 * (a - b) ** 2, 0.5 * (np.abs(a - b) - 0.25)),
        [X, Y],
        [0, 1],
    ),
    "kl": (
        lambda a, b: F.kl_div(a, b, reduction="batchmean"),
        lambda a, b: (b * (np.log(b) - a)).sum() / 3,
        [X, Q],
        [0],
    ),
    "soft_margin": (
        lambda a, b: F.soft_margin_loss(a, b),
        lambda a, b: np.log1p(np.exp(-a * b)).mean(),
        [X, SIGN],
        [0],
    ),
    "hinge": (
        lambda a, b: F.hinge_embedding_loss(a, b, reduction="sum"),
        lambda a, b: np.where(b == 1, a, np.maximum(0, 1 - a)).sum(),
        [X, SIGN],
        [0],
    ),
    "poisson": (
        lambda a, b: F.poisson_nll_loss(a, b, full=True),
        lambda a, b: (np.exp(a) - b * a + np_stirling(b)).mean(),
        [X, np.round(Q * 3)],
        [0],
    ),
    "gauss": (
        lambda a, b, v: F.gaussian_nll_loss(a, b, v),
        lambda a, b, v: (0.5 * (np.log(v) + (a - b) ** 2 / v)).mean(),
        [X, Y, Q + 0.1],
        [0, 1, 2],
    ),
    "mrl": (
        lambda a, b, c: F.margin_ranking_loss(a, b, c, margin=0.2, reduction="none"),
        lambda a, b, c: np.maximum(0, -c * (a - b) + 0.2),
        [X[0], Y[0], np.array([1.0, -1.0, 1.0, -1.0])],
        [0, 1],
    ),
    "cel": (
        lambda a, b, c: F.cosine_embedding_loss(a, b, c.astype("int64"), margin=0.1, reduction="none"),
        lambda a, b, c: np.where(c == 1, 1 - np_cos(a, b), np.maximum(0, np_cos(a, b) - 0.1)),
        [X, Y, np.array([1.0, -1.0, 1.0])],
        [0, 1],
    ),
    "triplet": (
        lambda a, b, c: F.triplet_margin_loss(a, b, c, reduction="none"),
        lambda a, b, c: np.maximum(np_distance(a, b) - np_distance(a, c) + 1, 0),
        [X, Y, Q],
        [0, 1, 2],
    ),
    "mml": (
        lambda a: F.multi_margin_loss(a, t(CLASSES), reduction="none"),
        lambda a: (np.maximum(0, 1 - a[np.arange(3), CLASSES][:, None] + a) * (1 - np.eye(4)[CLASSES])).sum(1) / 4,
        [X],
        [0],
    ),
    "mlsm": (
        lambda a: F.multi_label_soft_margin_loss(a, t((Q > 0.5) * 1.0), reduction="none"),
        lambda a: -((Q > 0.5) * np_log_sigmoid(a) + (Q <= 0.5) * np_log_sigmoid(-a)).mean(1),
        [X],
        [0],
    ),
    "dice": (
        lambda a: F.dice_loss(a, t([[0], [2], [1]])),
        lambda a: (1 - 2 * (a * np.eye(3)[[0, 2, 1]]).sum(1) / (a.sum(1) + 1 + 1e-5)).mean(),
        [DICE_P],
        [0],
    ),
    "ls": (
        lambda a: F.cross_entropy(a, t(CLASSES), label_smoothing=0.1, reduction="none"),
        lambda a: -(np_smooth_target(CLASSES, 4, 0.1) * log_softmax(a)).sum(1, keepdims=True),
        [X],
        [0],
    ),
}


@pytest.mark.parametrize("name", sorted(LOSS_CASES))
def test_loss_matches_numpy_paddle_and_finite_differences(name):
    fn, reference, inputs, wrt = LOSS_CASES[name]
    out = fn(*[t(a) for a in inputs]).numpy()
    np.testing.assert_allclose(out, reference(*inputs), rtol=1e-10, atol=1e-12)
    if name in PADDLE:
        np.testing.assert_allclose(out, PADDLE[name], rtol=2e-7, atol=1e-8)
    check_grad(fn, *inputs, wrt=wrt)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_new_losses_follow_reduction(reduction):
    per_element = F.smooth_l1_loss(t(X), t(Y), reduction="none").numpy()
    np.testing.assert_allclose(
        F.smooth_l1_loss(t(X), t(Y), reduction=reduction).numpy(), reduce(per_element, reduction)
    )
    layer = nn.SmoothL1Loss(reduction=reduction)
    np.testing.assert_allclose(layer(t(X), t(Y)).numpy(), reduce(per_element, reduction))


def test_smooth_l1_without_huber_and_kl_with_log_target():
    d = X - Y
    expected = np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25)
    np.testing.assert_allclose(F.smooth_l1_loss(t(X), t(Y), "none", 0.5, is_huber=False).numpy(), expected)
    check_grad(lambda a: F.smooth_l1_loss(a, t(Y), delta=0.5, is_huber=False), X)
    np.testing.assert_allclose(F.kl_div(t(X), t(Y), "sum", log_target=True).numpy(), (np.exp(Y) * (Y - X)).sum())
    check_grad(lambda a, b: F.kl_div(a, b, log_target=True), X, Y)
    check_grad(lambda a, b: F.kl_div(a, b), X, Q + 0.1)
    # Paddle counts labels <= 0 as contributing nothing
    assert F.kl_div(t([0.3, 0.1]), t([0.0, -0.2]), reduction="sum").item() == 0.0


def test_bce_floors_the_log_at_minus_100_and_takes_a_weight():
    out = F.binary_cross_entropy(t([0.0, 1.0, 0.5]), t([1.0, 0.0, 0.3]), reduction="none").numpy()
    np.testing.assert_allclose(out, [100.0, 100.0, np.log(2)])  # Paddle 3.3.1 gives the same
    w = np.array([0.5, 2.0, 1.0, 3.0])
    np.testing.assert_allclose(
        nn.BCELoss(weight=t(w), reduction="sum")(t(P), t(Q)).numpy(),
        (w * -(Q * np.log(P) + (1 - Q) * np.log(1 - P))).sum(),
    )
    check_grad(lambda a: F.binary_cross_entropy(a, t(Q), t(w)), P)


def test_poisson_rate_input_and_gaussian_variance_floor():
    rate, target = P, np.round(Q * 3)
    expected = rate - target * np.log(rate + 1e-8)
    np.testing.assert_allclose(
        F.poisson_nll_loss(t(rate), t(target), log_input=False, reduction="none").numpy(), expected
    )
    check_grad(lambda a: F.poisson_nll_loss(a, t(target), log_input=False), rate)
    # variances below epsilon are raised to epsilon (Paddle 3.3.1: 499993.092 for this element)
    tiny = F.gaussian_nll_loss(t([2.0]), t([3.0]), t([1e-9]), reduction="none").numpy()
    np.testing.assert_allclose(tiny, [0.5 * (np.log(1e-6) + 1e6)])
    full = F.gaussian_nll_loss(t(X), t(Y), t(Q + 0.1), full=True).numpy()
    np.testing.assert_allclose(full, PADDLE["gauss"] + 0.5 * np.log(2 * np.pi), rtol=1e-7)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(t(X), t(Y), t(-Q))


def test_sigmoid_focal_loss_against_numpy():
    # Paddle 3.3.1's dygraph sigmoid_focal_loss fails on CPU (a -1 shape in its `full` call), so
    # the reference is its formula in NumPy.
    label = (Q > 0.5) * 1.0
    prob = 1 / (1 + np.exp(-X))
    bce = np.logaddexp(0, X) - label * X
    p_t = prob * label + (1 - prob) * (1 - label)
    alpha_t = 0.25 * label + 0.75 * (1 - label)
    expected = alpha_t * (1 - p_t) ** 2 * bce
    np.testing.assert_allclose(F.sigmoid_focal_loss(t(X), t(label), reduction="none").numpy(), expected)
    np.testing.assert_allclose(F.sigmoid_focal_loss(t(X), t(label), normalizer=t([4.0])).numpy(), expected.sum() / 4)
    check_grad(lambda a: F.sigmoid_focal_loss(a, t(label), gamma=1.5, reduction="mean"), X)


def test_triplet_swap_p1_and_custom_distance():
    def swapped(a, p, n):
        return np.maximum(np_distance(a, p, 1) - np.minimum(np_distance(a, n, 1), np_distance(p, n, 1)) + 2, 0)

    out = F.triplet_margin_loss(t(X), t(Y), t(Q), margin=2.0, p=1, swap=True, reduction="none").numpy()
    np.testing.assert_allclose(out, swapped(X, Y, Q))
    layer = nn.TripletMarginLoss(margin=2.0, p=1, swap=True)
    np.testing.assert_allclose(layer(t(X), t(Y), t(Q)).numpy(), swapped(X, Y, Q).mean())
    cosine = F.triplet_margin_with_distance_loss(
        t(X), t(Y), t(Q), lambda a, b: 1 - F.cosine_similarity(a, b), reduction="none"
    ).numpy()
    np.testing.assert_allclose(cosine, np.maximum((1 - np_cos(X, Y)) - (1 - np_cos(X, Q)) + 1, 0))


def test_multi_margin_p2_with_weight_and_layer():
    w = np.array([0.5, 1.0, 2.0, 1.5])
    margins = np.maximum(0, 0.5 - X[np.arange(3), CLASSES][:, None] + X) ** 2 * (1 - np.eye(4)[CLASSES])
    expected = (margins.sum(1) / 4 * w[CLASSES]).mean()
    layer = nn.MultiMarginLoss(p=2, margin=0.5, weight=t(w))
    np.testing.assert_allclose(layer(t(X), t(CLASSES)).numpy(), expected)
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        F.multi_margin_loss(t(X), t(CLASSES), p=3)


def test_label_smoothing_with_weight_and_soft_labels():
    # Paddle 3.3.1 weighted mean: 0.7149598979 for these inputs (its one-hot label is float32, hence rtol)
    x = np.array([[0.2, -0.8, 0.3], [1, 2, 3]])
    out = F.cross_entropy(t(x), t([0, 2]), weight=t([1.0, 2.0, 3.0]), label_smoothing=0.2)
    np.testing.assert_allclose(out.numpy(), 0.7149598979046804, rtol=1e-7)
    soft = np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5]])
    smoothed = 0.8 * soft + 0.2 / 3
    expected = -(smoothed * log_softmax(x)).sum(1).mean()
    np.testing.assert_allclose(F.cross_entropy(t(x), t(soft), soft_label=True, label_smoothing=0.2).numpy(), expected)
    layer = nn.CrossEntropyLoss(label_smoothing=0.2)
    np.testing.assert_allclose(
        layer(t(x), t([0, 2])).numpy(), -(np_smooth_target(np.array([0, 2]), 3, 0.2) * log_softmax(x)).sum(1).mean()
    )
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(t(x), t([0, 2]), label_smoothing=1.5)


def test_softmax_with_cross_entropy_keeps_the_axis():
    x = np.array([[0.2, -0.8, 0.3], [1, 2, 3]])
    loss, softmax = F.softmax_with_cross_entropy(t(x), t([[0], [2]]), return_softmax=True)
    assert loss.shape == [2, 1]
    np.testing.assert_allclose(loss.numpy(), [[0.90545235], [0.40760596]], rtol=1e-7)  # Paddle 3.3.1
    np.testing.assert_allclose(softmax.numpy(), np.exp(log_softmax(x)))
    soft = np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5]])
    check_grad(lambda a: F.softmax_with_cross_entropy(a, t(soft), soft_label=True), x)


def test_square_error_and_log_loss_are_unreduced():
    np.testing.assert_allclose(F.square_error_cost(t(X), t(Y)).numpy(), (X - Y) ** 2)
    out = F.log_loss(t(P), t(Q)).numpy()
    np.testing.assert_allclose(out, -Q * np.log(P + 1e-4) - (1 - Q) * np.log(1 - P + 1e-4))
    np.testing.assert_allclose(
        F.log_loss(t([[0.2], [0.8]]), t([[1.0], [0.0]])).numpy(), [[1.608938]] * 2, rtol=1e-6
    )  # Paddle 3.3.1 (float32)
    check_grad(lambda a, b: F.log_loss(a, b), P, Q)


LAYER_CASES = [
    (nn.KLDivLoss(reduction="sum"), lambda: F.kl_div(t(X), t(Q), reduction="sum"), (X, Q)),
    (nn.SoftMarginLoss(), lambda: F.soft_margin_loss(t(X), t(SIGN)), (X, SIGN)),
    (nn.HingeEmbeddingLoss(margin=0.5), lambda: F.hinge_embedding_loss(t(X), t(SIGN), 0.5), (X, SIGN)),
    (nn.PoissonNLLLoss(log_input=False), lambda: F.poisson_nll_loss(t(P), t(Q), False), (P, Q)),
    (nn.MultiLabelSoftMarginLoss(), lambda: F.multi_label_soft_margin_loss(t(X), t(Q > 0.5)), (X, Q > 0.5)),
    (nn.MarginRankingLoss(0.1), lambda: F.margin_ranking_loss(t(X), t(Y), t(SIGN), 0.1), (X, Y, SIGN)),
    (
        nn.CosineEmbeddingLoss(0.1),
        lambda: F.cosine_embedding_loss(t(X), t(Y), t([1, -1, 1]), 0.1),
        (X, Y, np.array([1, -1, 1])),
    ),
    (nn.GaussianNLLLoss(full=True), lambda: F.gaussian_nll_loss(t(X), t(Y), t(Q), True), (X, Y, Q)),
]


@pytest.mark.parametrize("layer, functional, inputs", LAYER_CASES, ids=lambda v: type(v).__name__)
def test_loss_layers_call_their_functional(layer, functional, inputs):
    np.testing.assert_allclose(layer(*[t(a) for a in inputs]).numpy(), functional().numpy())


def test_bad_loss_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="reduction"):
        F.kl_div(t(X), t(Q), reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(ValueError, match="delta"):
        F.smooth_l1_loss(t(X), t(Y), delta=0)
    with pytest.raises(TypeError, match="label must be a Tensor"):
        F.binary_cross_entropy(t(P), Q)
    with pytest.raises(ValueError, match="margin"):
        F.cosine_embedding_loss(t(X), t(Y), t([1, 1, 1]), margin=2)
    with pytest.raises(ValueError, match="label"):
        F.dice_loss(t(DICE_P), t([0, 2, 1]))
    with pytest.raises(ValueError, match="epsilon"):
        F.poisson_nll_loss(t(X), t(Q), epsilon=0)


def test_multi_label_margin_loss():
    # Paddle 3.3.1: 0.85 for this sample (targets 3 and 0, listed up to the first -1)
    out = F.multi_label_margin_loss(t([[0.1, 0.2, 0.4, 0.8]]), t([[3, 0, -1, 1]]))
    np.testing.assert_allclose(out.numpy(), 0.85)
    labels = np.array([[3, 0, -1, 1], [1, -1, 0, 0], [0, 1, 2, 3]])
    targets = [{3, 0}, {1}, {0, 1, 2, 3}]
    expected = [
        sum(max(0, 1 - (X[n, j] - X[n, i])) for j in targets[n] for i in range(4) if i not in targets[n]) / 4
        for n in range(3)
    ]
    np.testing.assert_allclose(nn.MultiLabelMarginLoss(reduction="none")(t(X), t(labels)).numpy(), expected)
    check_grad(lambda a: F.multi_label_margin_loss(a, t(labels)), X)
    with pytest.raises(ValueError, match="both be"):
        F.multi_label_margin_loss(t(X), t(labels[:, :2]))


def test_huber_loss_and_triplet_with_distance_layers():
    np.testing.assert_allclose(nn.HuberLoss(delta=0.5)(t([0.0, 2.0]), t([0.3, 0.0])).numpy(), 0.46)  # Paddle 3.3.1
    layer = nn.TripletMarginWithDistanceLoss(lambda a, b: (a - b).abs().sum(-1), margin=0.5, reduction="sum")
    expected = np.maximum(np.abs(X - Y).sum(1) - np.abs(X - Q).sum(1) + 0.5, 0).sum()
    np.testing.assert_allclose(layer(t(X), t(Y), t(Q)).numpy(), expected)


def test_npair_loss():
    anchor, positive = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    labels = np.array([1.0, 2.0, 1.0, 3.0])
    same = (labels[:, None] == labels[None, :]) * 1.0
    target = same / same.sum(1, keepdims=True)
    ce = -(target * log_softmax(anchor @ positive.T)).sum(1, keepdims=True)
    expected = 0.25 * 0.002 * ((anchor**2).sum(1).mean() + (positive**2).sum(1).mean()) + (target * ce).sum(0).mean()
    np.testing.assert_allclose(F.npair_loss(t(anchor), t(positive), t(labels)).numpy(), expected)
    check_grad(lambda a, p: F.npair_loss(a, p, t(labels)), anchor, positive)


def brute_force_ctc(logits, label, blank=0):
    """-log of the summed probability of every path that collapses to ``label``."""
    import itertools

    probs = np.exp(log_softmax(logits))
    total = 0.0
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
        if collapsed == list(label):
            total += np.prod([probs[t, k] for t, k in enumerate(path)])
    return -np.log(total)


def test_ctc_loss_matches_brute_force_paddle_and_gradients():
    logits = rng.normal(size=(5, 2, 3))
    labels = np.array([[1, 2], [2, 2]])
    lengths, label_lengths = np.array([5, 4]), np.array([2, 2])
    per_sequence = F.ctc_loss(t(logits), t(labels), t(lengths), t(label_lengths), reduction="none").numpy()
    expected = [brute_force_ctc(logits[:5, 0], [1, 2]), brute_force_ctc(logits[:4, 1], [2, 2])]
    np.testing.assert_allclose(per_sequence, expected, rtol=1e-10)
    mean = F.ctc_loss(t(logits), t(labels), t(lengths), t(label_lengths)).numpy()
    np.testing.assert_allclose(mean, np.mean(np.array(expected) / 2))
    check_grad(lambda a: F.ctc_loss(a, t(labels), t(lengths), t(label_lengths)), logits)
    check_grad(lambda a: F.ctc_loss(a, t(labels), t(lengths), t(label_lengths), reduction="sum", blank=2), logits)
    # Paddle 3.3.1 (float32): per-sequence losses for these logits
    paddle_logits = np.random.default_rng(0).normal(size=(5, 2, 4)).astype("float32")
    values = nn.CTCLoss(reduction="none")(
        t(paddle_logits), t(np.array([[1, 2], [3, 0]], "int32")), t([5, 4]), t([2, 1])
    ).numpy()
    np.testing.assert_allclose(values, [4.6604357, 4.2003098], rtol=1e-6)
    # no alignment of one step can produce two labels: Paddle's warp-ctc reports 0
    impossible = F.ctc_loss(t(logits), t(labels), t([1, 4]), t(label_lengths), reduction="none").numpy()
    assert impossible[0] == 0.0
    with pytest.raises(ValueError, match="blank"):
        F.ctc_loss(t(logits), t(labels), t(lengths), t(label_lengths), blank=3)
