"""Optimizers (the ``minidp/optimizer`` package) against closed-form updates, parameter groups,
clipping, schedulers and state round trips; and the optimizers' multi-tensor kernel path
(``minidp/core/optimizer.py``) run on the CPU, equal to the NumPy path bit for bit."""

import math
import warnings

import numpy as np
import pytest

import minidp
import minidp.core.kernels
import minidp.nn as nn
import minidp.optimizer as optim
from kernel_host.runner import run as run_on_host
from minidp.optimizer import lr as lr_sched
from minidp.core import optimizer as optimizer_module

rng = np.random.default_rng(0)
STEPS = 3


def param(values, name=None):
    return minidp.Parameter(np.array(values, dtype=np.float64), name=name)


def run(optimizer_cls, grads, start, **kwargs):
    """Apply ``grads`` (one per step) to a parameter starting at ``start``; return its values per step."""
    p = param(start)
    opt = optimizer_cls(parameters=[p], **kwargs)
    history = []
    for g in grads:
        p.grad = np.array(g, dtype=np.float64)
        opt.step()
        history.append(p.numpy().copy())
    return history


START = [0.5, -1.0, 2.0]
GRADS = [rng.normal(size=3) for _ in range(STEPS)]


def test_sgd_with_l2_decay():
    history = run(optim.SGD, GRADS, START, learning_rate=0.1, weight_decay=0.01)
    p = np.array(START)
    for got, g in zip(history, GRADS):
        p = p - 0.1 * (g + 0.01 * p)
        np.testing.assert_allclose(got, p, rtol=1e-14)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    history = run(
        optim.Momentum, GRADS, START, learning_rate=0.1, momentum=0.8, use_nesterov=nesterov, weight_decay=0.02
    )
    p, v = np.array(START), np.zeros(3)
    for got, g in zip(history, GRADS):
        g = g + 0.02 * p
        v = 0.8 * v + g
        p = p - 0.1 * (g + 0.8 * v if nesterov else v)
        np.testing.assert_allclose(got, p, rtol=1e-14)


def textbook_adam(grads, start, lr, b1, b2, eps, l2=0.0, decoupled=0.0):
    """Adam as in Kingma & Ba, with bias-corrected moments (AdamW: decoupled decay first)."""
    p, m, v = np.array(start), np.zeros(3), np.zeros(3)
    out = []
    for step, g in enumerate(grads, start=1):
        p = p * (1 - lr * decoupled)
        g = g + l2 * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**step), v / (1 - b2**step)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def test_adam_matches_bias_corrected_formula():
    history = run(optim.Adam, GRADS, START, learning_rate=0.01, beta1=0.8, beta2=0.9, epsilon=1e-3, weight_decay=0.05)
    for got, want in zip(history, textbook_adam(GRADS, START, 0.01, 0.8, 0.9, 1e-3, l2=0.05)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    first = run(optim.Adam, GRADS[:1], START, learning_rate=0.01)[0]
    np.testing.assert_allclose(first, np.array(START) - 0.01 * np.sign(GRADS[0]), rtol=1e-6)


def test_adamw_decoupled_decay_and_exclusion():
    history = run(optim.AdamW, GRADS, START, learning_rate=0.01, weight_decay=0.1)
    for got, want in zip(history, textbook_adam(GRADS, START, 0.01, 0.9, 0.999, 1e-8, decoupled=0.1)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    decayed, kept = param(START, name="fc.w_0"), param(START, name="fc.b_0")
    opt = optim.AdamW(
        0.01, parameters=[decayed, kept], weight_decay=0.1, apply_decay_param_fun=lambda name: name.endswith("w_0")
    )
    decayed.grad = kept.grad = np.zeros(3)
    opt.step()
    np.testing.assert_allclose(decayed.numpy(), np.array(START) * (1 - 0.001))
    np.testing.assert_allclose(kept.numpy(), START)
    assert optim.AdamW(parameters=[param([1.0])])._slots[0].weight_decay == 0.01


def test_updates_are_in_place_and_skip_missing_grads():
    a, b = param([1.0, 2.0]), param([3.0])
    arrays = (a._data, b._data)
    for cls in (optim.SGD, optim.Momentum, optim.Adam, optim.AdamW):
        opt = cls(learning_rate=0.1, parameters=[a, b])
        a.grad = np.ones(2)
        b.grad = None
        opt.step()
        assert (a._data, b._data) == arrays
        assert b.numpy().tolist() == [3.0]
        assert opt._slots[1].state == {}


def test_gradient_is_never_written():
    p = param([1.0, 2.0])
    grad = np.array([0.5, 0.5])
    p.grad = grad
    for cls in (optim.SGD, optim.Momentum, optim.Adam, optim.AdamW):
        cls(learning_rate=0.1, parameters=[p], weight_decay=0.1, grad_clip=nn.ClipGradByGlobalNorm(0.1)).step()
    assert grad.tolist() == [0.5, 0.5]


def test_clear_grad_is_lazy_and_respects_set_to_zero():
    model = nn.Linear(2, 2)
    opt = optim.SGD(parameters=model.parameters())
    model(minidp.ones([1, 2])).sum().backward()
    opt.clear_grad()
    assert all(p._grad is None and not p.grad.numpy().any() for p in model.parameters())
    opt.clear_grad(set_to_zero=False)
    assert all(p.grad is None for p in model.parameters())


def test_parameter_groups_override_rate_decay_and_hyperparameters():
    a, b = param([1.0]), param([1.0])
    opt = optim.Momentum(
        learning_rate=0.1,
        momentum=0.9,
        parameters=[{"params": [a]}, {"params": [b], "learning_rate": 0.5, "weight_decay": 1.0, "momentum": 0.0}],
    )
    for _ in range(2):
        a.grad = b.grad = np.array([1.0])
        opt.step()
    np.testing.assert_allclose(a.numpy(), [1 - 0.1 - 0.1 * 1.9])
    b_value = 1.0
    for _ in range(2):
        b_value -= 0.05 * (1.0 + b_value)
    np.testing.assert_allclose(b.numpy(), [b_value])
    with pytest.raises(ValueError, match="unknown parameter-group keys"):
        optim.SGD(parameters=[{"params": [a], "beta1": 0.5}])
    with pytest.raises(ValueError, match="twice"):
        optim.SGD(parameters=[a, a])
    with pytest.raises(ValueError, match="parameters="):
        optim.Adam()
    with pytest.raises(TypeError, match="weight_decay"):
        optim.SGD(parameters=[a], weight_decay="l2")


def test_param_attr_learning_rate_scales_the_update():
    layer = nn.Linear(2, 1, weight_attr=nn.ParamAttr(learning_rate=0.0))
    before = layer.weight.numpy().copy()
    opt = optim.SGD(learning_rate=1.0, parameters=layer.parameters())
    layer(minidp.ones([1, 2])).sum().backward()
    opt.step()
    np.testing.assert_array_equal(layer.weight.numpy(), before)
    assert layer.bias.numpy().tolist() == [-1.0]


def test_clip_grad_by_global_norm():
    a, b, c = param([3.0, 0.0]), param([4.0]), param([10.0])
    c.need_clip = False
    clip = nn.ClipGradByGlobalNorm(1.0)
    opt = optim.SGD(learning_rate=1.0, parameters=[a, b, c], grad_clip=clip)
    a.grad, b.grad, c.grad = np.array([3.0, 0.0]), np.array([4.0]), np.array([10.0])
    opt.step()
    np.testing.assert_allclose(a.numpy(), [3 - 0.6, 0.0])
    np.testing.assert_allclose(b.numpy(), [4 - 0.8])
    np.testing.assert_allclose(c.numpy(), [0.0])
    pairs = clip([(a, minidp.to_tensor([0.3, 0.4])), (b, None)])
    np.testing.assert_allclose(pairs[0][1].numpy(), [0.3, 0.4])
    assert pairs[1][1] is None
    with pytest.raises(ValueError, match="clip_norm"):
        nn.ClipGradByGlobalNorm(0)
    with pytest.raises(TypeError, match="grad_clip"):
        optim.SGD(parameters=[a], grad_clip=1.0)


# --- schedulers ------------------------------------------------------------------------------------
def rates(scheduler, n):
    out = []
    for _ in range(n):
        out.append(scheduler())
        scheduler.step()
    return out


def test_schedulers_closed_forms():
    np.testing.assert_allclose(rates(lr_sched.StepDecay(1.0, 2, 0.5), 5), [1, 1, 0.5, 0.5, 0.25])
    np.testing.assert_allclose(rates(lr_sched.MultiStepDecay(1.0, [1, 3], 0.1), 4), [1, 0.1, 0.1, 0.01])
    cosine = rates(lr_sched.CosineAnnealingDecay(1.0, 4, eta_min=0.2), 5)
    np.testing.assert_allclose(cosine, [0.2 + 0.8 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)])
    warm = rates(lr_sched.LinearWarmup(lr_sched.StepDecay(1.0, 2, 0.5), 2, 0.0, 1.0), 6)
    np.testing.assert_allclose(warm, [0.0, 0.5, 1.0, 1.0, 0.5, 0.5])
    np.testing.assert_allclose(rates(lr_sched.LinearWarmup(0.3, 3, 0.0, 0.3), 5), [0, 0.1, 0.2, 0.3, 0.3])
    with pytest.raises(ValueError, match="milestones"):
        lr_sched.MultiStepDecay(1.0, [3, 1])


def test_optimizer_follows_scheduler_and_state_round_trip():
    scheduler = lr_sched.StepDecay(0.1, 1, 0.5)
    p = param([1.0])
    opt = optim.SGD(learning_rate=scheduler, parameters=[p])
    p.grad = np.array([1.0])
    opt.step()
    scheduler.step()
    opt.step()
    np.testing.assert_allclose(p.numpy(), [1 - 0.1 - 0.05])
    assert opt.get_lr() == 0.05
    with pytest.raises(TypeError, match="scheduler"):
        opt.set_lr(0.3)
    restored = lr_sched.StepDecay(0.1, 1, 0.5)
    restored.set_state_dict(opt.state_dict()["LR_Scheduler"])
    assert (restored.last_epoch, restored()) == (1, 0.05)


@pytest.mark.parametrize("cls", [optim.Momentum, optim.Adam, optim.AdamW])
def test_state_dict_resumes_to_the_identical_step(cls):
    def make():
        return cls(learning_rate=lr_sched.StepDecay(0.01, 2, 0.5), parameters=[param(START), param([1.0])])

    first, second = make(), make()
    for g in GRADS:
        for p, value in zip(first._parameter_list, (g, g[:1])):
            p.grad = value
        first.step()
        first._learning_rate.step()
    for p, q in zip(first._parameter_list, second._parameter_list):
        q.set_value(p._data)
    second.set_state_dict(first.state_dict())
    for opt in (first, second):
        for p in opt._parameter_list:
            p.grad = np.full(p.shape, 0.3)
        opt.step()
    for p, q in zip(first._parameter_list, second._parameter_list):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_set_state_dict_checks_before_changing_anything():
    p = param([1.0, 2.0])
    opt = optim.Adam(parameters=[p])
    p.grad = np.ones(2)
    opt.step()
    state = opt.state_dict()
    other_param = param([0.0, 0.0, 0.0])
    other = optim.Adam(parameters=[other_param])
    other_param.grad = np.ones(3)
    other.step()
    before = {k: v.numpy().copy() for k, v in other.state_dict().items() if k != "param_names"}
    with pytest.raises(ValueError, match="shape"):
        other.set_state_dict(state)
    after = other.state_dict()
    assert all(np.array_equal(after[k].numpy(), v) for k, v in before.items())
    with pytest.raises(ValueError, match="optimizer has 2"):
        optim.Adam(parameters=[param([1.0]), param([2.0])]).set_state_dict(state)
    incomplete = {k: v for k, v in state.items() if "moment2" not in k}
    with pytest.raises(ValueError, match="incomplete"):
        optim.Adam(parameters=[param([0.0, 0.0])]).set_state_dict(incomplete)
    with pytest.warns(UserWarning, match="ignored entries"):
        optim.Adam(parameters=[param([0.0, 0.0])]).set_state_dict(dict(state, extra=1))


@pytest.mark.parametrize("ours,theirs", [("Adam", "Adam"), ("AdamW", "AdamW")])
def test_adam_matches_torch(ours, theirs):
    torch = pytest.importorskip("torch")
    reference = torch.tensor(START, dtype=torch.float64, requires_grad=True)
    opt = getattr(torch.optim, theirs)([reference], lr=0.01, weight_decay=0.05 if ours == "AdamW" else 0.0)
    for g in GRADS:
        reference.grad = torch.tensor(g)
        opt.step()
    kwargs = {"weight_decay": 0.05} if ours == "AdamW" else {}
    history = run(getattr(optim, ours), GRADS, START, learning_rate=0.01, **kwargs)
    np.testing.assert_allclose(history[-1], reference.detach().numpy(), rtol=1e-12)


# --- audit: Paddle semantics checked against Paddle 3.3 itself -----------------------------------
@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda ps: optim.Momentum(0.1, parameters=ps), 0.81),
        (lambda ps: optim.Adam(0.1, parameters=ps), 0.8329944),
        (lambda ps: optim.SGD(0.1, parameters=ps, weight_decay=0.5), 0.8075),
    ],
)
def test_cleared_gradient_is_applied_as_zeros_as_in_paddle(make, expected):
    # After clear_grad() (set_to_zero=True) a parameter unused by the next backward has a zero
    # gradient, not None: Paddle still updates it (momentum, moments, decay). Values from Paddle.
    a, b = (minidp.Parameter(np.ones(2, np.float32)) for _ in range(2))
    opt = make([a, b])
    (a * b).sum().backward()
    opt.step()
    opt.clear_grad()
    (a * 3).sum().backward()  # b is not used
    opt.step()
    np.testing.assert_allclose(b.numpy(), [expected] * 2, rtol=1e-6)
    opt.clear_grad(set_to_zero=False)  # now None: skipped
    (a * 3).sum().backward()
    opt.step()
    np.testing.assert_allclose(b.numpy(), [expected] * 2, rtol=1e-6)


def test_frozen_parameters_are_not_updated():
    p = minidp.Parameter(np.ones(2, np.float32))
    opt = optim.SGD(0.1, parameters=[p], weight_decay=0.5)
    (p * 2).sum().backward()
    p.stop_gradient = True
    opt.step()
    np.testing.assert_array_equal(p.numpy(), [1, 1])
    p.trainable = False
    p.clear_grad()
    opt.step()
    np.testing.assert_array_equal(p.numpy(), [1, 1])


def test_clip_global_norm_sums_float16_squares_without_overflow_and_takes_plain_tensors():
    clip = nn.ClipGradByGlobalNorm(1.0)
    p = minidp.Parameter(np.zeros(4, np.float16))
    clipped = clip._clip_arrays([p], [np.full(4, 300, np.float16)])[0]  # norm 600: squares overflow float16
    np.testing.assert_allclose(clipped.astype(np.float64), [0.5] * 4, rtol=1e-3)
    plain = minidp.to_tensor(np.zeros(2, np.float32))
    plain.stop_gradient = False
    opt = optim.SGD(1.0, parameters=[plain], grad_clip=clip)
    plain.grad = np.array([3.0, 4.0], np.float32)
    opt.step()
    np.testing.assert_allclose(plain.numpy(), [-0.6, -0.8], rtol=1e-6)


def test_linear_warmup_state_uses_paddles_key_and_round_trips():
    def make():
        return lr_sched.LinearWarmup(lr_sched.CosineAnnealingDecay(0.1, T_max=5), 2, 0.0, 0.1)

    sched = make()
    for _ in range(6):
        sched.step()
    state = sched.state_dict()
    assert state["LinearWarmup_LR"] == {"last_epoch": 4, "last_lr": sched()}
    restored = make()
    restored.set_state_dict(state)
    sched.step()
    restored.step()
    assert (restored.last_epoch, restored()) == (sched.last_epoch, sched())
    with pytest.raises(ValueError, match="LinearWarmup_LR"):
        make().set_state_dict({"last_epoch": 3, "last_lr": 0.1})


def test_set_state_dict_warns_when_the_scheduler_state_cannot_be_restored():
    p = param([1.0])
    with_scheduler = optim.SGD(lr_sched.StepDecay(0.1, 1), parameters=[p])
    fixed = optim.SGD(0.1, parameters=[p])
    with pytest.warns(UserWarning, match="no LR_Scheduler"):
        with_scheduler.set_state_dict(fixed.state_dict())
    with pytest.warns(UserWarning, match="fixed learning rate"):
        fixed.set_state_dict(with_scheduler.state_dict())


# ---------------------------------------------------------------------------------------------
# RMSProp, Adagrad, Adadelta, Adamax, NAdam, RAdam, Lamb, ASGD, Rprop against Paddle 3.3.1
# ---------------------------------------------------------------------------------------------
# A float32 parameter p = [0.5, -1.0, 2.0] minimising sum([1, 2, 3] * p * p) + sum(p) with the
# options in PADDLE_OPTIMIZERS: Paddle's parameter after each step and its state-dict key stems
# (the part before the trailing "_0"), recorded with Paddle 3.3.1.
PADDLE_OPTIMIZERS = {
    "RMSProp": lambda ps: optim.RMSProp(0.1, parameters=ps),
    "RMSProp_centered_momentum": lambda ps: optim.RMSProp(
        0.1, rho=0.9, epsilon=1e-6, momentum=0.5, centered=True, parameters=ps
    ),
    "Adagrad": lambda ps: optim.Adagrad(0.1, parameters=ps, initial_accumulator_value=0.1),
    "Lamb": lambda ps: optim.Lamb(0.1, parameters=ps),
    "Adadelta": lambda ps: optim.Adadelta(0.1, parameters=ps),
    "Adamax": lambda ps: optim.Adamax(0.1, parameters=ps),
    "NAdam": lambda ps: optim.NAdam(0.1, parameters=ps),
    "RAdam": lambda ps: optim.RAdam(0.1, parameters=ps),
    "RAdam_long": lambda ps: optim.RAdam(0.1, parameters=ps),
    "ASGD": lambda ps: optim.ASGD(0.1, batch_num=2, parameters=ps),
    "Rprop": lambda ps: optim.Rprop(0.1, parameters=ps),
}
PADDLE_TRAJECTORIES = {
    "RMSProp": (
        [
            [0.052787542, -0.55278695, 1.5527865],
            [-0.16783564, -0.38164932, 1.2704198],
            [-0.29796445, -0.30639565, 1.0574965],
            [-0.37786362, -0.27341127, 0.88568896],
        ],
        ["p_mean_grad", "p_mean_square", "p_momentum"],
    ),
    "RMSProp_centered_momentum": (
        [
            [0.16666716, -0.66666687, 1.6666667],
            [-0.20109811, -0.32403454, 1.2663122],
            [-0.47915819, -0.11979724, 0.88894463],
            [-0.62503415, -0.075605288, 0.56598747],
        ],
        ["p_mean_grad", "p_mean_square", "p_momentum"],
    ),
    "Adagrad": (
        [
            [0.40122709, -0.90055102, 1.9000295],
            [0.33473733, -0.83523303, 1.8310187],
            [0.28229925, -0.78457183, 1.7755257],
            [0.2381936, -0.74257493, 1.7280439],
        ],
        ["p_moment"],
    ),
    "Lamb": (
        [
            [0.36858672, -0.86793286, 1.8666253],
            [0.24866924, -0.7478379, 1.7444307],
            [0.13892587, -0.63871205, 1.6317838],
            [0.038149871, -0.53970921, 1.527178],
        ],
        ["p_beta1_pow_acc", "p_beta2_pow_acc", "p_moment1", "p_moment2"],
    ),
    "Adadelta": (
        [
            [0.49955279, -0.99955279, 1.9995528],
            [0.49909997, -0.99910003, 1.9991],
            [0.49864343, -0.99864358, 1.9986433],
            [0.49818411, -0.99818438, 1.9981837],
        ],
        ["p__avg_squared_grad", "p__avg_squared_update"],
    ),
    "Adamax": (
        [
            [0.40000001, -0.89999998, 1.9],
            [0.30516833, -0.80692446, 1.8023314],
            [0.21549949, -0.72067952, 1.7070403],
            [0.1309731, -0.64114827, 1.6141684],
        ],
        ["p_beta1_pow_acc", "p_inf_norm", "p_moment"],
    ),
    "NAdam": (
        [
            [0.39435482, -0.89435482, 1.8943548],
            [0.31997332, -0.82145488, 1.8177451],
            [0.25272995, -0.75649202, 1.7471278],
            [0.1877169, -0.6946525, 1.6774989],
        ],
        ["p_beta2_pow", "p_moment1", "p_moment2", "p_momentum_decay_pow", "p_mu_product"],
    ),
    "RAdam": (
        [
            [0.30000001, -0.69999999, 0.69999993],
            [0.12105265, -0.46315789, -0.18947363],
            [-0.0376966, -0.28224897, -0.74567866],
            [-0.17717032, -0.15019418, -1.0391294],
        ],
        ["p_beta1_pow", "p_beta2_pow", "p_moment1", "p_moment2", "p_rho"],
    ),
    "RAdam_long": (
        [
            [0.30000001, -0.69999999, 0.69999993],
            [0.12105265, -0.46315789, -0.18947363],
            [-0.0376966, -0.28224897, -0.74567866],
            [-0.17717032, -0.15019418, -1.0391294],
            [-0.298352, -0.060135208, -1.1330909],
            [-0.30048189, -0.059201494, -1.1328986],
            [-0.30303365, -0.058524422, -1.1321443],
            [-0.30591595, -0.058214623, -1.1307901],
        ],
        ["p_beta1_pow", "p_beta2_pow", "p_moment1", "p_moment2", "p_rho"],
    ),
    "ASGD": (
        [
            [0.30000001, -0.69999999, 0.69999993],
            [0.12000002, -0.45999998, -0.2100001],
            [-0.021999985, -0.32799995, -0.45700011],
            [-0.1318, -0.27039996, -0.3569001],
        ],
        ["p_d", "p_m", "p_y"],
    ),
    "Rprop": (
        [
            [0.40000001, -0.89999998, 1.9],
            [0.28, -0.77999997, 1.78],
            [0.13599999, -0.63599998, 1.6359999],
            [-0.036800027, -0.46319997, 1.4631999],
        ],
        ["p_learning_rates", "p_prevs"],
    ),
}


def quadratic_run(make, steps, start=None):
    """Minimise the recorded quadratic for ``steps`` steps; return the parameter, optimizer and values."""
    p = minidp.Parameter(np.array(START if start is None else start, dtype=np.float32), name="p")
    opt = make([p])
    weights = minidp.to_tensor([1.0, 2.0, 3.0])
    history = []
    for _ in range(steps):
        ((weights * p * p).sum() + p.sum()).backward()
        opt.step()
        opt.clear_grad()
        history.append(p.numpy().copy())
    return p, opt, history


@pytest.mark.parametrize("case", sorted(PADDLE_TRAJECTORIES))
def test_new_optimizers_follow_paddle_step_by_step(case):
    expected, key_stems = PADDLE_TRAJECTORIES[case]
    _, opt, history = quadratic_run(PADDLE_OPTIMIZERS[case], len(expected))
    np.testing.assert_allclose(history, expected, rtol=1e-4, atol=1e-6)
    state_keys = sorted(key for key in opt.state_dict() if key.startswith("p_"))
    assert state_keys == [stem + "_0" for stem in key_stems]


@pytest.mark.parametrize(
    "case", ["RMSProp_centered_momentum", "Adagrad", "Lamb", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]
)
def test_new_optimizers_resume_from_state_dict_to_the_identical_step(case):
    make = PADDLE_OPTIMIZERS[case]
    _, _, straight = quadratic_run(make, 5)
    p, opt, first = quadratic_run(make, 3)
    saved = {
        key: (value.numpy().copy() if isinstance(value, minidp.Tensor) else value)
        for key, value in opt.state_dict().items()
    }
    resumed_p = minidp.Parameter(p.numpy().copy(), name="q")
    resumed = make([resumed_p])
    resumed.set_state_dict(saved)
    weights = minidp.to_tensor([1.0, 2.0, 3.0])
    for expected in straight[3:]:
        ((weights * resumed_p * resumed_p).sum() + resumed_p.sum()).backward()
        resumed.step()
        resumed.clear_grad()
        np.testing.assert_array_equal(resumed_p.numpy(), expected)


def test_asgd_state_has_paddles_history_shape_and_checks_it():
    _, opt, _ = quadratic_run(PADDLE_OPTIMIZERS["ASGD"], 3)
    state = opt.state_dict()
    assert state["p_y_0"].shape == [2, 3] and float(state["p_m_0"].numpy()[0]) == 3
    fresh = optim.ASGD(0.1, batch_num=3, parameters=[minidp.Parameter(np.zeros(3, np.float32), name="p")])
    with pytest.raises(ValueError, match=r"p_y_0 has shape \[2, 3\] but parameter .* needs \[3, 3\]"):
        fresh.set_state_dict(state)


@pytest.mark.parametrize(
    "excluded, always_adapt, expected",
    [
        (True, False, [0.40000004, -0.90000004, 1.9]),  # no decay, no trust ratio: lr * sign(g)
        (True, True, [0.36771244, -0.86771244, 1.8677124]),
        (False, False, [0.39753053, -0.87703657, 1.8360487]),
    ],
    ids=["excluded", "excluded-always-adapt", "decayed"],
)
def test_lamb_exclusion_and_always_adapt_follow_paddle(excluded, always_adapt, expected):
    def make(ps):
        return optim.Lamb(
            0.1,
            lamb_weight_decay=0.5,
            parameters=ps,
            always_adapt=always_adapt,
            exclude_from_weight_decay_fn=lambda param: excluded,
        )

    _, _, history = quadratic_run(make, 1)
    np.testing.assert_allclose(history[0], expected, rtol=1e-6)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda ps: optim.RMSProp(0.1, rho=1.5, parameters=ps), "rho must lie in"),
        (lambda ps: optim.Adagrad(0.1, epsilon=-1, parameters=ps), "epsilon must be a non-negative"),
        (lambda ps: optim.Adamax(0.1, beta1=1.0, parameters=ps), "beta1 must lie in"),
        (lambda ps: optim.NAdam(0.1, momentum_decay=-0.1, parameters=ps), "momentum_decay must be"),
        (lambda ps: optim.RAdam(0.1, beta2=-0.5, parameters=ps), "beta2 must lie in"),
        (lambda ps: optim.ASGD(0.1, batch_num=0, parameters=ps), "batch_num must be a positive int"),
        (lambda ps: optim.Rprop(0.1, etas=(1.5, 1.2), parameters=ps), "etas must be"),
        (lambda ps: optim.Rprop(0.1, learning_rate_range=(1.0, 0.5), parameters=ps), "learning_rate_range must be"),
    ],
    ids=[
        "rmsprop-rho",
        "adagrad-eps",
        "adamax-beta1",
        "nadam-decay",
        "radam-beta2",
        "asgd-batch",
        "rprop-etas",
        "rprop-range",
    ],
)
def test_new_optimizers_name_bad_hyperparameters(make, match):
    with pytest.raises(ValueError, match=match):
        make([param(START)])


def test_every_paddle_optimizer_exists():
    expected = [
        "Adagrad",
        "Adam",
        "AdamW",
        "Adamax",
        "ASGD",
        "RAdam",
        "RMSProp",
        "Adadelta",
        "SGD",
        "Rprop",
        "Momentum",
        "NAdam",
        "Lamb",
        "LBFGS",
    ]
    assert [name for name in expected if not hasattr(optim, name)] == []


# ---------------------------------------------------------------------------------------------
# Every scheduler of paddle.optimizer.lr: get_lr() sequences recorded with Paddle 3.3.1
# ---------------------------------------------------------------------------------------------
PADDLE_SCHEDULERS = {
    "NoamDecay": lambda: lr_sched.NoamDecay(d_model=64, warmup_steps=4, learning_rate=2.0),
    "PiecewiseDecay": lambda: lr_sched.PiecewiseDecay(boundaries=[3, 6], values=[0.1, 0.05, 0.01]),
    "NaturalExpDecay": lambda: lr_sched.NaturalExpDecay(0.5, gamma=0.1),
    "InverseTimeDecay": lambda: lr_sched.InverseTimeDecay(0.5, gamma=0.1),
    "PolynomialDecay": lambda: lr_sched.PolynomialDecay(0.5, decay_steps=5, end_lr=0.01, power=2.0),
    "PolynomialDecay_cycle": lambda: lr_sched.PolynomialDecay(0.5, decay_steps=3, end_lr=0.01, power=1.0, cycle=True),
    "LinearWarmup": lambda: lr_sched.LinearWarmup(0.5, warmup_steps=3, start_lr=0.0, end_lr=0.5),
    "LinearWarmup_sched": lambda: lr_sched.LinearWarmup(
        lr_sched.StepDecay(0.5, step_size=2), warmup_steps=3, start_lr=0.1, end_lr=0.5
    ),
    "ExponentialDecay": lambda: lr_sched.ExponentialDecay(0.5, gamma=0.8),
    "MultiStepDecay": lambda: lr_sched.MultiStepDecay(0.5, milestones=[2, 5], gamma=0.5),
    "StepDecay": lambda: lr_sched.StepDecay(0.5, step_size=3, gamma=0.5),
    "LambdaDecay": lambda: lr_sched.LambdaDecay(0.5, lr_lambda=lambda e: 0.9**e),
    "CosineAnnealingDecay": lambda: lr_sched.CosineAnnealingDecay(0.5, T_max=4, eta_min=0.1),
    "MultiplicativeDecay": lambda: lr_sched.MultiplicativeDecay(0.5, lr_lambda=lambda e: 0.9),
    "OneCycleLR": lambda: lr_sched.OneCycleLR(max_learning_rate=1.0, total_steps=10),
    "OneCycleLR_three_linear": lambda: lr_sched.OneCycleLR(
        max_learning_rate=1.0, total_steps=10, three_phase=True, anneal_strategy="linear"
    ),
    "CyclicLR": lambda: lr_sched.CyclicLR(base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=3),
    "CyclicLR_tri2": lambda: lr_sched.CyclicLR(
        base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=2, step_size_down=3, mode="triangular2"
    ),
    "CyclicLR_exp": lambda: lr_sched.CyclicLR(
        base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=2, mode="exp_range", exp_gamma=0.9
    ),
    "LinearLR": lambda: lr_sched.LinearLR(0.5, total_steps=4, start_factor=0.2, end_factor=1.0),
    "CosineAnnealingWarmRestarts": lambda: lr_sched.CosineAnnealingWarmRestarts(0.5, T_0=3, T_mult=2, eta_min=0.1),
}
PADDLE_LR_SEQUENCES = {
    "NoamDecay": [
        0,
        0.03125,
        0.0625,
        0.09375,
        0.125,
        0.111803398875,
        0.102062072616,
        0.0944911182523,
        0.0883883476483,
        0.0833333333333,
        0.0790569415042,
        0.0753778361444,
        0.0721687836487,
        0.0693375245282,
    ],
    "PiecewiseDecay": [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],
    "NaturalExpDecay": [
        0.5,
        0.452418709018,
        0.409365376539,
        0.370409110341,
        0.335160023018,
        0.303265329856,
        0.274405818047,
        0.248292651896,
        0.224664482059,
        0.20328482987,
        0.183939720586,
        0.166435541849,
        0.150597105956,
        0.136265896517,
    ],
    "InverseTimeDecay": [
        0.5,
        0.454545454545,
        0.416666666667,
        0.384615384615,
        0.357142857143,
        0.333333333333,
        0.3125,
        0.294117647059,
        0.277777777778,
        0.263157894737,
        0.25,
        0.238095238095,
        0.227272727273,
        0.217391304348,
    ],
    "PolynomialDecay": [0.5, 0.3236, 0.1864, 0.0884, 0.0296, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],
    "PolynomialDecay_cycle": [
        0.5,
        0.336666666667,
        0.173333333333,
        0.01,
        0.173333333333,
        0.0916666666667,
        0.01,
        0.118888888889,
        0.0644444444444,
        0.01,
        0.0916666666667,
        0.0508333333333,
        0.01,
        0.0753333333333,
    ],
    "LinearWarmup": [0, 0.166666666667, 0.333333333333, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
    "LinearWarmup_sched": [
        0.1,
        0.233333333333,
        0.366666666667,
        0.5,
        0.5,
        0.05,
        0.05,
        0.005,
        0.005,
        0.0005,
        0.0005,
        5e-05,
        5e-05,
        5e-06,
    ],
    "ExponentialDecay": [
        0.5,
        0.4,
        0.32,
        0.256,
        0.2048,
        0.16384,
        0.131072,
        0.1048576,
        0.08388608,
        0.067108864,
        0.0536870912,
        0.04294967296,
        0.034359738368,
        0.0274877906944,
    ],
    "MultiStepDecay": [0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125],
    "StepDecay": [0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.0625, 0.0625, 0.0625, 0.03125, 0.03125],
    "LambdaDecay": [
        0.5,
        0.45,
        0.405,
        0.3645,
        0.32805,
        0.295245,
        0.2657205,
        0.23914845,
        0.215233605,
        0.1937102445,
        0.17433922005,
        0.156905298045,
        0.141214768241,
        0.127093291416,
    ],
    "CosineAnnealingDecay": [
        0.5,
        0.441421356237,
        0.3,
        0.158578643763,
        0.1,
        0.158578643763,
        0.3,
        0.441421356237,
        0.5,
        0.441421356237,
        0.3,
        0.158578643763,
        0.1,
        0.158578643763,
    ],
    "MultiplicativeDecay": [
        0.5,
        0.45,
        0.405,
        0.3645,
        0.32805,
        0.295245,
        0.2657205,
        0.23914845,
        0.215233605,
        0.1937102445,
        0.17433922005,
        0.156905298045,
        0.141214768241,
        0.127093291416,
    ],
    "OneCycleLR": [
        0.04,
        0.52,
        1,
        0.950489385508,
        0.811763726439,
        0.611299340931,
        0.388800659069,
        0.188336273561,
        0.0496106144922,
        0.0001,
    ],
    "OneCycleLR_three_linear": [0.04, 0.52, 1, 0.52, 0.04, 0.03202, 0.02404, 0.01606, 0.00808, 0.0001],
    "CyclicLR": [0.1, 0.4, 0.7, 1, 0.7, 0.4, 0.1, 0.4, 0.7, 1, 0.7, 0.4, 0.1, 0.4],
    "CyclicLR_tri2": [0.1, 0.55, 1, 0.7, 0.4, 0.1, 0.325, 0.55, 0.4, 0.25, 0.1, 0.2125, 0.325, 0.25],
    "CyclicLR_exp": [
        0.1,
        0.505,
        0.829,
        0.42805,
        0.1,
        0.3657205,
        0.5782969,
        0.315233605,
        0.1,
        0.27433922005,
        0.41381059609,
        0.241214768241,
        0.1,
        0.214383962275,
    ],
    "LinearLR": [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
    "CosineAnnealingWarmRestarts": [
        0.5,
        0.4,
        0.2,
        0.5,
        0.473205080757,
        0.4,
        0.3,
        0.2,
        0.126794919243,
        0.5,
        0.493185165258,
        0.473205080757,
        0.441421356237,
        0.4,
    ],
}


@pytest.mark.parametrize("case", sorted(PADDLE_LR_SEQUENCES))
def test_schedulers_follow_paddles_sequence_and_state_keys(case):
    scheduler = PADDLE_SCHEDULERS[case]()
    seen = []
    for _ in PADDLE_LR_SEQUENCES[case]:
        seen.append(scheduler())
        scheduler.step()
    np.testing.assert_allclose(seen, PADDLE_LR_SEQUENCES[case], rtol=1e-9, atol=1e-12)
    expected_keys = {"last_epoch", "last_lr"} | ({"LinearWarmup_LR"} if case == "LinearWarmup_sched" else set())
    assert set(scheduler.state_dict()) == expected_keys


@pytest.mark.parametrize("case", sorted(PADDLE_LR_SEQUENCES))
def test_schedulers_resume_from_state_dict_and_jump_to_an_epoch(case):
    scheduler = PADDLE_SCHEDULERS[case]()
    for _ in range(4):
        scheduler.step()
    resumed = PADDLE_SCHEDULERS[case]()
    resumed.set_state_dict(scheduler.state_dict())
    for expected in PADDLE_LR_SEQUENCES[case][4:9]:
        assert resumed() == pytest.approx(expected, rel=1e-9, abs=1e-12)
        resumed.step()
    jumped = PADDLE_SCHEDULERS[case]()
    jumped.step(7)
    assert jumped() == pytest.approx(PADDLE_LR_SEQUENCES[case][7], rel=1e-9, abs=1e-12)


def test_reduce_on_plateau_follows_paddle_and_keeps_its_state_keys():
    scheduler = lr_sched.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=1, min_lr=0.1)
    rates = []
    for metric in [5, 4, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4, 4, 4]:
        scheduler.step(metric)
        rates.append(scheduler())
    # Paddle 3.3.1: 3.9999 is not an improvement on 4 within the relative threshold 1e-4.
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.1, 0.1]
    assert scheduler.state_dict() == {
        "cooldown_counter": 0,
        "best": 4,
        "num_bad_epochs": 0,
        "last_epoch": 14,
        "last_lr": 0.1,
    }
    rising = lr_sched.ReduceOnPlateau(1.0, mode="max", factor=0.5, patience=0, threshold=0.1, threshold_mode="abs")
    for metric in [1, 1.05, minidp.to_tensor(1.2), np.array([1.2]), 1.35]:
        rising.step(metric)
    assert rising.state_dict() == {
        "cooldown_counter": 0,
        "best": 1.35,
        "num_bad_epochs": 0,
        "last_epoch": 5,
        "last_lr": 0.25,
    }
    restored = lr_sched.ReduceOnPlateau(1.0, mode="max", factor=0.5, patience=0, threshold=0.1, threshold_mode="abs")
    restored.set_state_dict(rising.state_dict())
    restored.step(1.3)
    assert restored() == 0.125


def test_an_optimizer_follows_reduce_on_plateau():
    p = param(START)
    scheduler = lr_sched.ReduceOnPlateau(1.0, factor=0.5, patience=0)
    opt = optim.SGD(scheduler, parameters=[p])
    scheduler.step(1.0)
    scheduler.step(2.0)
    assert opt.get_lr() == 0.5


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: lr_sched.PiecewiseDecay([3, 6], [0.1, 0.05]), ValueError, "one more value than boundaries"),
        (lambda: lr_sched.ExponentialDecay(0.5, gamma=1.5), ValueError, "gamma must lie in"),
        (lambda: lr_sched.PolynomialDecay(0.5, decay_steps=0), ValueError, "decay_steps must be a positive int"),
        (lambda: lr_sched.LambdaDecay(0.5, lr_lambda=0.9), TypeError, "lr_lambda must be a function"),
        (lambda: lr_sched.OneCycleLR(1.0, total_steps=10, three_phase=True, phase_pct=0.6), ValueError, "phase_pct"),
        (lambda: lr_sched.CyclicLR(0.1, 1.0, step_size_up=2, mode="sawtooth"), ValueError, "mode must be"),
        (lambda: lr_sched.ReduceOnPlateau(1.0, factor=2.0), ValueError, "factor must be below 1.0"),
        (lambda: lr_sched.ReduceOnPlateau(1.0).step("loss"), TypeError, "metrics must be a number"),
        (lambda: lr_sched.ReduceOnPlateau(1.0).step(np.ones(2)), ValueError, "metrics must hold one value"),
        (lambda: lr_sched.LinearLR(0.5, total_steps=4, start_factor=0), ValueError, "start_factor"),
    ],
    ids=[
        "piecewise",
        "exponential",
        "polynomial",
        "lambda",
        "onecycle",
        "cyclic",
        "plateau-factor",
        "plateau-metric",
        "plateau-size",
        "linear",
    ],
)
def test_schedulers_name_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_one_cycle_refuses_to_step_past_its_total():
    scheduler = lr_sched.OneCycleLR(max_learning_rate=1.0, total_steps=3)
    for _ in range(3):
        scheduler.step()
    with pytest.raises(ValueError, match="past total_steps=3"):
        scheduler.step()


def test_every_paddle_scheduler_exists():
    names = [
        "LRScheduler",
        "NoamDecay",
        "PiecewiseDecay",
        "NaturalExpDecay",
        "InverseTimeDecay",
        "PolynomialDecay",
        "LinearWarmup",
        "ExponentialDecay",
        "MultiStepDecay",
        "StepDecay",
        "LambdaDecay",
        "ReduceOnPlateau",
        "CosineAnnealingDecay",
        "MultiplicativeDecay",
        "OneCycleLR",
        "CyclicLR",
        "LinearLR",
        "CosineAnnealingWarmRestarts",
    ]
    assert [name for name in names if name not in lr_sched.__all__] == []


# ---------------------------------------------------------------------------------------------
# LBFGS on Rosenbrock's function from (-1.2, 1), float64, history 3, max_iter 5: Paddle 3.3.1's
# (loss returned, parameters after) for four steps
# ---------------------------------------------------------------------------------------------
PADDLE_LBFGS = {
    None: [
        (24.2, [-0.9681431272364309, 1.0046005515440506]),
        (4.326508787690915, [-0.9361268040574892, 0.9092172292291852]),
        (3.856721668096776, [-0.6100948624136006, 0.3832689633547576]),
        (2.6046228380958816, [-0.5056410330706793, 0.2596369268135241]),
    ],
    "strong_wolfe": [
        (24.2, [-1.0276177663827242, 1.0584120782656612]),
        (4.111816451757751, [-0.6801753334182947, 0.4353312787318103]),
        (2.8975574980246157, [-0.35746140788508807, 0.09673522333402643]),
        (1.9390709582731012, [0.2057748035942888, -0.0014625542990334764]),
    ],
}


def rosenbrock_lbfgs(line_search_fn, start=(-1.2, 1.0)):
    p = minidp.Parameter(np.array(start))
    opt = optim.LBFGS(learning_rate=1, max_iter=5, history_size=3, line_search_fn=line_search_fn, parameters=[p])

    def closure():
        opt.clear_grad()
        loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] * p[0]) ** 2
        loss.backward()
        return loss

    return p, opt, closure


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_follows_paddle_on_rosenbrock(line_search_fn):
    p, opt, closure = rosenbrock_lbfgs(line_search_fn)
    for expected_loss, expected_param in PADDLE_LBFGS[line_search_fn]:
        assert float(opt.step(closure)) == pytest.approx(expected_loss, rel=1e-10)
        np.testing.assert_allclose(p.numpy(), expected_param, rtol=1e-9, atol=1e-12)
    assert set(opt.state_dict()["state"]) == {
        "func_evals",
        "n_iter",
        "d",
        "alpha",
        "old_yk",
        "old_sk",
        "ro",
        "H_diag",
        "prev_flat_grad",
        "prev_loss",
    }


def test_lbfgs_state_survives_a_checkpoint(tmp_path):
    p, opt, closure = rosenbrock_lbfgs("strong_wolfe")
    opt.step(closure)
    opt.step(closure)
    minidp.save(opt.state_dict(), tmp_path / "lbfgs.pdopt")
    q, resumed, resumed_closure = rosenbrock_lbfgs("strong_wolfe", start=p.numpy())
    resumed.set_state_dict(minidp.load(tmp_path / "lbfgs.pdopt"))
    opt.step(closure)
    resumed.step(resumed_closure)
    np.testing.assert_array_equal(q.numpy(), p.numpy())


def test_lbfgs_needs_a_closure_and_checks_its_options():
    p, opt, _ = rosenbrock_lbfgs(None)
    with pytest.raises(TypeError, match="step\\(closure\\)"):
        opt.minimize(minidp.to_tensor(1.0))
    with pytest.raises(TypeError, match="pass closure"):
        opt.step(None)
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS(line_search_fn="backtracking", parameters=[p])
    with pytest.raises(ValueError, match="history_size must be a positive int"):
        optim.LBFGS(history_size=0, parameters=[p])


# ---------------------------------------------------------------------------------------------
# Paddle's call forms: minimize, backward and apply_gradients, zero_grad
# ---------------------------------------------------------------------------------------------


def model_and_optimizer():
    minidp.seed(0)
    layer = minidp.nn.Linear(2, 1)
    return layer, minidp.optimizer.SGD(0.1, parameters=layer.parameters())


def test_minimize_applies_the_gradients_backward_left_and_returns_paddles_pair():
    layer, opt = model_and_optimizer()
    loss = layer(minidp.ones([1, 2])).sum()
    assert opt.minimize(loss) == ([], [])  # no backward yet: nothing to apply, as in Paddle
    before = [p.numpy().copy() for p in layer.parameters()]
    loss.backward()
    ops, params_grads = opt.minimize(loss)
    assert ops == []
    assert [p is q for (p, _), q in zip(params_grads, layer.parameters())] == [True, True]
    np.testing.assert_allclose(params_grads[0][1].numpy(), [[1.0], [1.0]])
    for param, start in zip(layer.parameters(), before):
        np.testing.assert_allclose(param.numpy(), start - 0.1, rtol=1e-6)


def test_minimize_updates_only_the_given_parameters():
    layer, opt = model_and_optimizer()
    layer(minidp.ones([1, 2])).sum().backward()
    bias = layer.bias.numpy().copy()
    _, params_grads = opt.minimize(layer.weight, parameters=[layer.weight])
    assert [p is layer.weight for p, _ in params_grads] == [True]
    np.testing.assert_array_equal(layer.bias.numpy(), bias)
    with pytest.raises(TypeError, match="parameters must be Tensors"):
        opt.minimize(layer.weight, parameters=[layer.weight.name])
    with pytest.raises(TypeError, match="loss must be a Tensor"):
        opt.minimize(1.0)


def test_backward_and_apply_gradients_split_minimize_as_in_paddle():
    layer, opt = model_and_optimizer()
    layer(minidp.ones([1, 2])).sum().backward()
    params_grads = opt.backward(layer.weight)
    assert [p is q for (p, _), q in zip(params_grads, layer.parameters())] == [True, True]
    weight = layer.weight.numpy().copy()
    halved = [(param, grad * 0.5) for param, grad in params_grads]
    assert opt.apply_gradients(halved) == []
    np_weight = layer.weight.numpy()
    np.testing.assert_allclose(np_weight, weight - 0.1 * 0.5, rtol=1e-6)
    stranger = minidp.nn.Linear(1, 1).weight
    with pytest.raises(ValueError, match="not one of this optimizer's parameters"):
        opt.apply_gradients([(stranger, stranger)])


@pytest.mark.parametrize("set_to_none, expected", [(True, None), (False, [[0.0], [0.0]])])
def test_zero_grad_is_clear_grad_with_pytorchs_flag(set_to_none, expected):
    layer, opt = model_and_optimizer()
    layer(minidp.ones([1, 2])).sum().backward()
    opt.zero_grad(set_to_none=set_to_none)
    grad = layer.weight.grad
    assert (grad is None) if expected is None else grad.numpy().tolist() == expected


# The optimizers' GPU path -- multi-tensor kernels -- run on the CPU.
#
# The path is chosen for NumPy parameters by patching ``optimizer._updates_with_kernels``, and
# ``minidp.core.kernels.launch`` runs each launch with the host kernel runner (the .cu sources compiled
# by g++), so every line of the path and the kernels' arithmetic run here. Parameters, states and
# master weights must equal the per-parameter NumPy path's bit for bit, with one launch per
# parameter group and dtype. tests/test_gpu.py runs the same path on CuPy arrays.

# name: (shape, dtype, group). "frozen" has stop_gradient set, "idle" never gets a gradient and
# "h2" reads zeros after clear_grad in the second step.
PARAMS = {
    "w1": ((5, 4), "float32", 0),
    "b1": ((4,), "float32", 0),
    "h1": ((6,), "bfloat16", 0),
    "f16": ((5,), "float16", 0),
    "frozen": ((2,), "float32", 0),
    "idle": ((3,), "float32", 0),
    "w64": ((3, 3), "float64", 1),
    "h2": ((2, 3), "bfloat16", 1),
}
GROUP_OPTIONS = {"learning_rate": 0.5, "weight_decay": 0.0}

OPTIMIZERS = {
    "sgd": (lambda groups, mp: optim.SGD(0.1, groups, weight_decay=0.01, multi_precision=mp), {}),
    "momentum": (
        lambda groups, mp: optim.Momentum(0.1, 0.9, groups, weight_decay=0.01, multi_precision=mp),
        {"momentum": 0.5},
    ),
    "nesterov": (lambda groups, mp: optim.Momentum(0.1, 0.9, groups, use_nesterov=True, multi_precision=mp), {}),
    "adam": (
        lambda groups, mp: optim.Adam(0.01, parameters=groups, weight_decay=0.01, multi_precision=mp),
        {"beta1": 0.5},
    ),
    "adamw": (
        lambda groups, mp: optim.AdamW(
            0.01,
            parameters=groups,
            weight_decay=0.1,
            multi_precision=mp,
            apply_decay_param_fun=lambda name: name != "b1",
            grad_clip=minidp.nn.ClipGradByGlobalNorm(0.5),
        ),
        {"epsilon": 1e-6},
    ),
}
# Launches over the three steps: each step, group 0 updates float32, bfloat16 and float16
# parameters, group 1 float64 and bfloat16 ones. After clear_grad, "idle" reads zeros and is
# updated too: with the float32 launch, except in Adam, where its beta powers lag one step and
# so need their own launch; AdamW's excluded "b1" has its own decay, hence its own launch.
LAUNCHES = {"sgd": 15, "momentum": 15, "nesterov": 15, "adam": 5 + 6 + 6, "adamw": 6 + 7 + 7}


def make_params(xp=np) -> dict:
    """The parameters of PARAMS, as arrays of ``xp``."""
    rng = np.random.default_rng(5)
    params = {}
    for name, (shape, dtype, _) in PARAMS.items():
        params[name] = minidp.Parameter(xp.asarray(rng.standard_normal(shape).astype(dtype)), name=name)
    params["frozen"].stop_gradient = True
    return params


def train(name: str, multi_precision: bool, monkeypatch, kernel_path: bool, xp=np):
    """Three steps of optimizer ``name`` on parameters of ``xp``; the parameters, the optimizer
    and the launches made. ``kernel_path`` runs NumPy parameters through the kernels on the host
    runner; CuPy parameters always take the kernel path, on the GPU."""
    launches = []
    real_launch = minidp.core.kernels.launch if xp is not np else run_on_host
    if kernel_path:
        monkeypatch.setattr(optimizer_module, "_updates_with_kernels", lambda data: True)

    def launch(plan) -> None:
        launches.append(plan.name)
        real_launch(plan)

    monkeypatch.setattr(minidp.core.kernels, "launch", launch)
    params = make_params(xp)
    make, overrides = OPTIMIZERS[name]
    groups = [{"params": [p for key, p in params.items() if PARAMS[key][2] == index]} for index in (0, 1)]
    groups[1].update(GROUP_OPTIONS, **overrides)
    optimizer = make(groups, multi_precision)
    rng = np.random.default_rng(9)
    for step in range(3):
        for key, p in params.items():
            if key == "idle" or (key == "h2" and step == 1):
                continue
            wide = xp.asarray(rng.standard_normal(p._data.shape + (2,)).astype(p._data.dtype))
            p._grad = wide[..., 0]  # not contiguous, as a transposed gradient would be
        optimizer.step()
        optimizer.clear_grad()
    monkeypatch.undo()
    return params, optimizer, launches


@pytest.mark.timeout(180)
@pytest.mark.parametrize("multi_precision", [False, True], ids=["plain", "master-weights"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_kernel_path_matches_the_numpy_path_bit_for_bit(name, multi_precision, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numpy_params, numpy_opt, no_launches = train(name, multi_precision, monkeypatch, False)
        kernel_params, kernel_opt, launches = train(name, multi_precision, monkeypatch, True)
    # both paths warn once about 16-bit parameters without master weights
    assert sum("multi_precision=True" in str(w.message) for w in caught) == (0 if multi_precision else 2)
    assert no_launches == []
    assert len(launches) == LAUNCHES[name], launches
    for key, wanted in numpy_params.items():
        got = kernel_params[key]
        assert got.dtype == wanted.dtype
        assert got._data.tobytes() == wanted._data.tobytes(), f"{key} differs"
    assert kernel_params["frozen"]._data.tobytes() == make_params()["frozen"]._data.tobytes()
    for got, wanted in zip(kernel_opt._slots, numpy_opt._slots):
        assert got.state.keys() == wanted.state.keys()
        for key, value in wanted.state.items():
            if isinstance(value, float):
                assert got.state[key] == value, key
            else:
                assert got.state[key].dtype == value.dtype
                assert got.state[key].tobytes() == value.tobytes(), f"{got.param.name}: {key}"
        assert (got.master is None) == (wanted.master is None)
        if wanted.master is not None:
            assert got.master.tobytes() == wanted.master.tobytes(), got.param.name
    masters = [slot.master is not None for slot in kernel_opt._slots]
    assert any(masters) == multi_precision
