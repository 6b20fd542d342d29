"""Fixed cases of minidp.distribution that must answer as paddle.distribution 3.3.1 does.

``tools/record_paddle_distribution.py`` evaluates each case with Paddle and stores the value and
the gradients of sum(value * w) with respect to every float parameter in
``tests/fixtures/paddle_distribution.npz``; the tests of each distribution module evaluate the
same case with minidp and compare. Neither framework is imported here.

A case is ``(id, class, parameters, method, argument, gradients)``: parameters are
``(name, value)`` pairs in the constructor's order (a NumPy array becomes a tensor, anything else
is passed as it is), the method is ``log_prob``, ``prob``, ``probs``, ``entropy``, ``mean``,
``variance``, ``kl`` (``kl_divergence(p, q)`` with q built from the argument's parameters) or
``kl_method`` (``p.kl_divergence(q)``); ``gradients`` is False where the value is -inf or sits on
a clipping boundary, and for Bernoulli's log_prob, prob and entropy, whose backward Paddle 3.3.1
gets wrong (a segmentation fault for log_prob, a zero gradient for entropy: its
binary_cross_entropy_with_logits passes no gradient to the label), and Multinomial's
log_prob and prob (a segmentation fault in the backward of its in-place masking); only the value is compared
there, and finite differences check minidp's gradients.
"""

from __future__ import annotations

from typing import Any, Callable

from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).parent / "fixtures" / "paddle_distribution.npz"
F64 = np.float64


def a(values: Any, dtype: Any = F64) -> np.ndarray:
    return np.array(values, dtype=dtype)


NORMAL = (("loc", a([0.3, -1.2, 2.0])), ("scale", a([0.5, 1.5, 2.5])))
NORMAL_Q = (("loc", a([0.0, 1.0, -1.0])), ("scale", a([1.0, 0.7, 3.0])))
UNIFORM = (("low", a([-1.0, 0.5])), ("high", a([2.0, 0.75])))
CATEGORICAL = (("logits", a([[1.0, 2.0, 3.0], [0.5, 1.0, 4.0]])),)
CATEGORICAL_Q = (("logits", a([[1.0, 1.0, 2.0], [3.0, 1.0, 1.0]])),)
BERNOULLI = (("probs", a([0.2, 0.7, 0.95])),)
BERNOULLI_Q = (("probs", a([0.5, 0.1, 0.9])),)
BETA = (("alpha", a([0.5, 2.0])), ("beta", a([1.5, 3.0])))
BETA_Q = (("alpha", a([1.0, 1.0])), ("beta", a([2.0, 0.5])))
DIRICHLET = (("concentration", a([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])),)
DIRICHLET_Q = (("concentration", a([[1.0, 1.0, 1.0], [2.0, 3.0, 0.5]])),)
MULTINOMIAL = (("total_count", 4), ("probs", a([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])))

CASES = [
    ("normal_log_prob", "Normal", NORMAL, "log_prob", a([0.1, 0.4, -3.0]), True),
    ("normal_prob", "Normal", NORMAL, "prob", a([0.1, 0.4, -3.0]), True),
    ("normal_probs", "Normal", NORMAL, "probs", a([0.1, 0.4, -3.0]), True),
    ("normal_entropy", "Normal", NORMAL, "entropy", None, True),
    ("normal_mean", "Normal", NORMAL, "mean", None, True),
    ("normal_variance", "Normal", NORMAL, "variance", None, True),
    ("normal_kl", "Normal", NORMAL, "kl", NORMAL_Q, True),
    ("normal_kl_method", "Normal", NORMAL, "kl_method", NORMAL_Q, True),
    ("normal_floats_entropy", "Normal", (("loc", 0.5), ("scale", 2.0)), "entropy", None, False),
    (
        "normal_lists_log_prob",
        "Normal",
        (("loc", [0.0, 1.0]), ("scale", [1.0, 2.0])),
        "log_prob",
        a([0.5], "float32"),
        False,
    ),
    (
        "normal_f32_broadcast_log_prob",
        "Normal",
        (("loc", a([[0.0], [1.0]], "float32")), ("scale", a([1.0, 2.0, 0.5], "float32"))),
        "log_prob",
        a([0.3, -0.2, 1.0], "float32"),
        True,
    ),
    ("uniform_log_prob", "Uniform", UNIFORM, "log_prob", a([0.0, 0.6]), True),
    ("uniform_log_prob_outside", "Uniform", UNIFORM, "log_prob", a([3.0, 0.6]), False),
    ("uniform_prob", "Uniform", UNIFORM, "prob", a([3.0, 0.6]), True),
    ("uniform_entropy", "Uniform", UNIFORM, "entropy", None, True),
    ("uniform_floats_entropy", "Uniform", (("low", 1.0), ("high", 4.0)), "entropy", None, False),
    ("categorical_entropy", "Categorical", CATEGORICAL, "entropy", None, True),
    ("categorical_kl", "Categorical", CATEGORICAL, "kl", CATEGORICAL_Q, True),
    ("categorical_kl_method", "Categorical", CATEGORICAL, "kl_method", CATEGORICAL_Q, True),
    ("categorical_log_prob_vector", "Categorical", CATEGORICAL, "log_prob", a([0, 2], np.int64), True),
    ("categorical_probs_column", "Categorical", CATEGORICAL, "probs", a([[1], [2]], np.int64), True),
    (
        "categorical_prob_1d",
        "Categorical",
        (("logits", a([1.0, 2.0, 5.0])),),
        "prob",
        a([[0, 2], [1, 1]], np.int64),
        True,
    ),
    ("bernoulli_log_prob", "Bernoulli", BERNOULLI, "log_prob", a([1.0, 0.0, 1.0]), False),
    ("bernoulli_prob", "Bernoulli", BERNOULLI, "prob", a([1.0, 0.0, 1.0]), False),
    ("bernoulli_entropy", "Bernoulli", BERNOULLI, "entropy", None, False),
    ("bernoulli_mean", "Bernoulli", BERNOULLI, "mean", None, True),
    ("bernoulli_variance", "Bernoulli", BERNOULLI, "variance", None, True),
    ("bernoulli_kl", "Bernoulli", BERNOULLI, "kl", BERNOULLI_Q, True),
    ("bernoulli_float_entropy", "Bernoulli", (("probs", 0.3),), "entropy", None, False),
    ("bernoulli_clipped_log_prob", "Bernoulli", (("probs", a([0.0, 1.0])),), "log_prob", a([0.0, 1.0]), False),
    ("beta_log_prob", "Beta", BETA, "log_prob", a([0.3, 0.6]), True),
    ("beta_prob", "Beta", BETA, "prob", a([0.3, 0.6]), True),
    ("beta_entropy", "Beta", BETA, "entropy", None, True),
    ("beta_mean", "Beta", BETA, "mean", None, True),
    ("beta_variance", "Beta", BETA, "variance", None, True),
    ("beta_kl", "Beta", BETA, "kl", BETA_Q, True),
    ("beta_floats_entropy", "Beta", (("alpha", 0.5), ("beta", 2.0)), "entropy", None, False),
    ("dirichlet_log_prob", "Dirichlet", DIRICHLET, "log_prob", a([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]), True),
    ("dirichlet_prob", "Dirichlet", DIRICHLET, "prob", a([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]), True),
    ("dirichlet_entropy", "Dirichlet", DIRICHLET, "entropy", None, True),
    ("dirichlet_mean", "Dirichlet", DIRICHLET, "mean", None, True),
    ("dirichlet_variance", "Dirichlet", DIRICHLET, "variance", None, True),
    ("dirichlet_kl", "Dirichlet", DIRICHLET, "kl", DIRICHLET_Q, True),
    ("multinomial_log_prob", "Multinomial", MULTINOMIAL, "log_prob", a([[1.0, 1.0, 2.0], [0.0, 4.0, 0.0]]), False),
    ("multinomial_prob", "Multinomial", MULTINOMIAL, "prob", a([[1.0, 1.0, 2.0], [0.0, 4.0, 0.0]]), False),
    ("multinomial_entropy", "Multinomial", MULTINOMIAL, "entropy", None, True),
    ("multinomial_mean", "Multinomial", MULTINOMIAL, "mean", None, True),
    ("multinomial_variance", "Multinomial", MULTINOMIAL, "variance", None, True),
    (
        "multinomial_zero_log_prob",
        "Multinomial",
        (("total_count", 4), ("probs", a([0.0, 0.4, 0.6]))),
        "log_prob",
        a([0.0, 1.0, 3.0]),
        False,
    ),
    (
        "multinomial_int_value_log_prob",
        "Multinomial",
        MULTINOMIAL,
        "log_prob",
        a([[1, 1, 2], [0, 4, 0]], np.int64),
        False,
    ),
]


def cases_of(cls: str) -> list:
    """The cases of one distribution class, as pytest parameters named by their ids."""
    return [case for case in CASES if case[1] == cls]


def output_weights(case_index: int, shape: tuple) -> np.ndarray:
    """Fixed weights w: gradients are those of sum(value * w), so no element hides another."""
    return np.random.default_rng(9000 + case_index).uniform(0.5, 1.5, shape)


def evaluate(module: Any, case: tuple, to_tensor: Callable) -> tuple:
    """The case's value under ``module`` (paddle.distribution or minidp.distribution) and the
    parameter tensors made by ``to_tensor`` (float ones with gradients on), in order."""
    _, cls_name, params, method, argument, _ = case
    cls = getattr(module, cls_name)
    tensors = []

    def build(pairs: tuple) -> Any:
        args = []
        for _, value in pairs:
            if isinstance(value, np.ndarray):
                value = to_tensor(value)
                value.stop_gradient = False
                tensors.append(value)
            args.append(value)
        return cls(*args)

    dist = build(params)
    if method in ("mean", "variance"):
        return getattr(dist, method), tensors
    if method == "entropy":
        return dist.entropy(), tensors
    if method == "kl":
        return module.kl_divergence(dist, build(argument)), tensors
    if method == "kl_method":
        return dist.kl_divergence(build(argument)), tensors
    return getattr(dist, method)(to_tensor(argument)), tensors


def compare_with_paddle(module: Any, to_tensor: Callable, case: tuple) -> None:
    """Evaluate ``case`` under ``module`` and assert the value, its dtype and (where recorded) the
    parameters' gradients equal what Paddle 3.3.1 answered."""
    case_id = case[0]
    recorded = np.load(FIXTURE)
    out, tensors = evaluate(module, case, to_tensor)
    assert str(out.dtype).replace("paddle.", "") == str(recorded[f"{case_id}/dtype"]), case_id
    expected = recorded[f"{case_id}/out"]
    tol = 1e-5 if expected.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol, err_msg=case_id)
    if not case[5]:
        return
    weights = to_tensor(output_weights(CASES.index(case), tuple(out.shape)).astype(expected.dtype))
    (out * weights).sum().backward()
    for j, tensor in enumerate(tensors):
        grad = np.zeros(tensor.shape) if tensor.grad is None else tensor.grad.numpy()
        np.testing.assert_allclose(
            grad, recorded[f"{case_id}/grad{j}"], rtol=tol, atol=tol, err_msg=f"{case_id} grad{j}"
        )
