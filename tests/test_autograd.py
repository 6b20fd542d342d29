"""The tape's behaviour: accumulation, hooks, the gradient-ready hook, no_grad and enable_grad,
graph freeing."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minidp
from minidp.core import engine


def leaf(values, dtype="float64"):
    return minidp.to_tensor(np.asarray(values, dtype=dtype), stop_gradient=False)


def test_data_tensors_need_no_gradient_and_parameters_do():
    assert minidp.to_tensor([1.0]).stop_gradient
    assert not minidp.Parameter(np.ones(2)).stop_gradient
    x = minidp.to_tensor([1.0, 2.0])
    assert (x * 2).stop_gradient


def test_gradients_accumulate_until_cleared():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3 + 2, 3 + 4])
    x.clear_grad()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0])
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])
    x.clear_grad(set_to_zero=False)
    assert x.grad is None


def test_accumulation_does_not_alias_gradients_of_other_leaves():
    a, b = leaf([1.0]), leaf([2.0])
    (a + b).sum().backward()
    (a * 10).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [11.0])
    np.testing.assert_allclose(b.grad.numpy(), [1.0])


def test_non_scalar_backward_uses_ones_and_explicit_grad_tensor():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    x.clear_grad()
    (x * x).backward(minidp.to_tensor([1.0, 0.0, 2.0], "float64"))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 12.0])


def test_full_reductions_are_zero_dimensional():
    x = minidp.ones([3, 4])
    assert x.sum().shape == [] and x.mean().shape == []
    assert x.max().item() == 1.0


def test_shared_subexpression_gets_summed_gradient():
    x = leaf([2.0])
    y = x * x
    (y + y * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4 * 2 * 2.0])


def test_register_hook_sees_and_can_replace_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy().copy()))
    mid = x * 2
    mid.register_hook(lambda g: g * 10)
    mid.sum().backward()
    np.testing.assert_allclose(seen[0], [20.0, 20.0])
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])
    handle.remove()
    x.clear_grad()
    (x * 1).sum().backward()
    assert len(seen) == 1


def test_register_hook_on_data_tensor_raises():
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        minidp.ones([2]).register_hook(lambda g: g)


def test_grad_ready_hook_fires_once_per_leaf_per_pass_with_final_gradient():
    w = leaf([1.0, 2.0])
    b = leaf([0.5])
    fired = []
    w._register_grad_ready_hook(lambda t: fired.append(("w", t.grad.numpy().copy())))
    handle = b._register_grad_ready_hook(lambda t: fired.append(("b", t.grad.numpy().copy())))
    x = minidp.to_tensor([3.0, 4.0], "float64")
    y = (w * x).sum() + (w * w).sum() + b.sum() * 2 + b.sum()  # w and b used several times
    y.backward()
    names = [n for n, _ in fired]
    assert sorted(names) == ["b", "w"]
    final = dict(fired)
    np.testing.assert_allclose(final["w"], [3 + 2, 4 + 4])
    np.testing.assert_allclose(final["b"], [3.0])
    handle.remove()
    fired.clear()
    (w * 1).sum().backward()
    assert [n for n, _ in fired] == ["w"]


def test_grad_ready_hook_fires_before_backward_ends():
    """The last layer's weight is ready while earlier layers are still being differentiated."""
    x = minidp.to_tensor(np.ones((2, 3)))
    w1, w2 = leaf(np.ones((3, 3))), leaf(np.ones((3, 1)))
    order = []
    w1._register_grad_ready_hook(lambda t: order.append("w1"))
    w2._register_grad_ready_hook(lambda t: order.append("w2"))
    probe = x @ w1
    probe.register_hook(lambda g: order.append("hidden"))
    (probe @ w2).sum().backward()
    assert order.index("w2") < order.index("hidden") < order.index("w1")


def test_end_of_backward_callback_runs_after_all_leaves():
    w = leaf([1.0])
    events = []

    def on_ready(t):
        events.append("ready")
        engine.queue_end_of_backward_callback(lambda: events.append("end"))

    w._register_grad_ready_hook(on_ready)
    (w * 2).sum().backward()
    assert events == ["ready", "end"]


def test_reachable_leaves_finds_only_used_parameters():
    a, b, c = leaf([1.0]), leaf([2.0]), leaf([3.0])
    out = a * 2 + b
    found = engine.reachable_leaves([out])
    assert set(found) == {id(a), id(b)} and id(c) not in found


def test_no_grad_as_context_and_decorator():
    x = leaf([1.0])
    with minidp.no_grad():
        assert (x * 2).stop_gradient
    assert not (x * 2).stop_gradient

    @minidp.no_grad()
    def f(t):
        return t * 2

    assert f(x).stop_gradient
    assert minidp.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = minidp.to_tensor([1.0], stop_gradient=False)
    with minidp.no_grad():
        assert (x * 2).stop_gradient
        with minidp.enable_grad():
            assert not (x * 2).stop_gradient
        assert not minidp.is_grad_enabled()

    @minidp.enable_grad()
    def doubled(t):
        return t * 2

    with minidp.no_grad():
        assert not doubled(x).stop_gradient
    assert minidp.is_grad_enabled()


def test_set_grad_enabled_switches_at_once_and_as_a_block_restores_the_mode():
    x = minidp.to_tensor([1.0], stop_gradient=False)
    minidp.set_grad_enabled(False)
    try:
        assert (x * 2).stop_gradient and not minidp.is_grad_enabled()
        with minidp.set_grad_enabled(True):
            assert not (x * 2).stop_gradient
        assert not minidp.is_grad_enabled()
    finally:
        minidp.set_grad_enabled(True)
    with minidp.set_grad_enabled(False):
        assert (x * 2).stop_gradient
    assert minidp.is_grad_enabled()


def test_detach_cuts_the_graph():
    x = leaf([1.0])
    y = (x * 2).detach()
    assert y.stop_gradient
    (y * 3).sum().backward()
    assert x.grad is None


def test_graph_is_freed_unless_retained():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_deep_chain_of_ten_thousand_ops_needs_no_recursion():
    x = leaf([1.0])
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001**10_000], rtol=1e-9)


def test_shape_mismatch_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"\[2, 3\] and \[4\]"):
        minidp.ones([2, 3]) + minidp.ones([4])
    with pytest.raises(ValueError, match="matmul"):
        minidp.ones([2, 3]) @ minidp.ones([2, 3])


def test_dtype_mismatch_error_says_how_to_convert():
    # elementwise ops promote as Paddle does (tests/test_ops_elementwise.py); matmul refuses
    with pytest.raises(TypeError, match="astype"):
        minidp.ones([2, 2], "float32") @ minidp.ones([2, 2], "float64")


def test_backward_on_tensor_without_gradient_does_nothing_as_in_paddle():
    x = minidp.ones([2])
    loss = (x * 2).sum()
    assert loss.backward() is None
    assert x.grad is None and loss.grad is None


def test_backward_without_gradient_is_a_no_op():
    x = minidp.ones([2])
    assert (x * 2).sum().backward() is None
    assert x.grad is None


def test_grad_tensor_shape_is_checked():
    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="same shape"):
        (x * 2).backward(minidp.ones([3], "float64"))


def test_parameter_trainable_and_stop_gradient_are_one_flag():
    p = minidp.Parameter(np.zeros(3, np.float32))
    assert p.trainable and not p.stop_gradient
    p.stop_gradient = True
    assert not p.trainable
    p.trainable = True
    assert not p.stop_gradient
    frozen = minidp.Parameter(np.zeros(3, np.float32), trainable=False)
    assert frozen.stop_gradient and not frozen.trainable


def test_autograd_imports_without_the_ops():
    """The tape is the bottom layer: loading it alone must not pull in minidp.ops.

    ``import minidp`` loads everything, so a fresh interpreter registers a bare ``minidp``
    package (no ``__init__`` run) and imports only ``minidp.autograd`` from it.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(minidp.__file__)))
    code = (
        "import sys, types\n"
        f"package = types.ModuleType('minidp'); package.__path__ = [{os.path.join(root, 'minidp')!r}]\n"
        "sys.modules['minidp'] = package\n"
        "import minidp.autograd\n"
        "from minidp.core.function import result, wrap\n"
        "from minidp.autograd import PyLayer\n"
        "assert 'minidp.ops' not in sys.modules, sorted(m for m in sys.modules if m.startswith('minidp'))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    from minidp.core import op_util as _util

    assert _util.result is minidp.core.function.result and _util.wrap is minidp.core.function.wrap


def _two_outputs(x, calls):
    """x -> (2x, 3x) as one multi-output node that records the gradients it receives."""
    from minidp.core.function import results

    xd = x._data

    def backward(grads):
        calls.append(grads)
        ga, gb = grads
        total = 0 * xd
        if ga is not None:
            total = total + 2 * ga
        if gb is not None:
            total = total + 3 * gb
        return (total,)

    return results((2 * xd, 3 * xd), (x,), backward)


def test_multi_output_node_runs_backward_once_after_every_reached_output():
    x = leaf([1.0, 2.0])
    calls = []
    a, b = _two_outputs(x, calls)
    long_path = a
    for _ in range(5):
        long_path = long_path * 1.0
    (long_path.sum() + (b * b).sum()).backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0][0], [1.0, 1.0])
    np.testing.assert_allclose(calls[0][1], 2 * 3 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), 2 + 18 * np.array([1.0, 2.0]))


def test_multi_output_node_passes_none_for_outputs_without_gradient():
    x = leaf([1.0, 2.0])
    calls = []
    a, b = _two_outputs(x, calls)
    (b * 2).sum().backward()  # a is not reachable from the root
    assert calls[0][0] is None
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    calls.clear()
    x.clear_grad()
    a, b = _two_outputs(x, calls)
    (a.sum() + b.detach().sum()).backward()
    assert calls[0][1] is None and len(calls) == 1


def test_multi_output_root_and_hooks_on_outputs():
    x = leaf([1.0, 2.0])
    calls = []
    a, b = _two_outputs(x, calls)
    b.register_hook(lambda g: g * 10)
    fired = []
    x._register_grad_ready_hook(lambda t: fired.append(t.grad.numpy().copy()))
    b.backward(retain_graph=True)
    np.testing.assert_allclose(fired[-1], [30.0, 30.0])
    assert len(fired) == 1 and calls[0][0] is None
    assert set(engine.reachable_leaves([a])) == {id(x)}
    b.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        a.sum().backward()


def test_chain_of_multi_output_nodes_needs_no_recursion():
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(5000):
        first, second = minidp.split(y, 2)
        y = minidp.concat([second, first])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_split_is_one_node_and_unused_parts_get_zero_gradient():
    x = leaf(np.arange(6.0).reshape(2, 3))
    parts = minidp.split(x, [1, -1], axis=1)
    assert parts[0]._node.node is parts[1]._node.node
    (parts[1] * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 5, 5], [0, 5, 5]])
    with minidp.no_grad():
        assert all(p.stop_gradient for p in minidp.split(x, 3, axis=1))


class _ScaleTwice(minidp.autograd.PyLayer):
    """x -> (2x, 3x, a label) whose backward reports what it received."""

    seen = []

    @staticmethod
    def forward(ctx, x, materialize=True, freeze_second=False):
        ctx.set_materialize_grads(materialize)
        a, b = x * 2, x * 3
        if freeze_second:
            ctx.mark_non_differentiable(b)
        return a, b, "label"

    @staticmethod
    def backward(ctx, ga, gb):
        _ScaleTwice.seen.append((ga, gb))
        total = ga * 2
        return total if gb is None else total + gb * 3


def test_pylayer_multi_output_materializes_missing_gradients_as_zeros_by_default():
    x = leaf([1.0, 2.0])
    _ScaleTwice.seen.clear()
    a, b, label = _ScaleTwice.apply(x)
    assert label == "label" and a._node.node is b._node.node
    a.sum().backward()
    ga, gb = _ScaleTwice.seen[-1]
    np.testing.assert_allclose(gb.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    x.clear_grad()
    a, b, _ = _ScaleTwice.apply(x, materialize=False)
    a.sum().backward()
    assert _ScaleTwice.seen[-1][1] is None
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_pylayer_mark_non_differentiable_output_needs_no_gradient():
    x = leaf([1.0, 2.0])
    a, b, _ = _ScaleTwice.apply(x, freeze_second=True)
    assert b.stop_gradient and not a.stop_gradient
    (a * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * b.numpy())
