"""minidp/base: the dygraph part of Paddle's ``paddle.base`` (names checked against Paddle 3.3.1's
``paddle.base`` and ``paddle.base.dygraph``) and ``Tensor._grad_ivar``."""

import pytest

import minidp
from minidp import base
from minidp.core import backend


def test_guard_runs_its_block_eagerly_and_restores_the_place():
    with base.dygraph.guard():
        assert base.dygraph.enabled() and base.in_dygraph_mode()
        assert float(minidp.to_tensor(2.0) * 3) == 6.0
    before = backend.get_device()
    with base.dygraph.guard(base.CPUPlace()):
        assert backend.get_device() == "cpu"
        with pytest.raises(ZeroDivisionError):
            with base.dygraph.guard("cpu"):
                raise ZeroDivisionError
    assert backend.get_device() == before


def test_mode_switches_and_shared_names():
    base.enable_dygraph()
    base.enable_imperative("cpu")
    with pytest.raises(RuntimeError, match="no static graph"):
        base.disable_dygraph()
    assert base.ParamAttr is minidp.ParamAttr and base.Tensor is minidp.Tensor
    assert base.dygraph.no_grad is minidp.no_grad and base.dygraph.grad is minidp.grad
    assert base.is_compiled_with_cuda() == minidp.is_compiled_with_cuda()
    assert base.set_global_initializer is minidp.nn.initializer.set_global_initializer


def test_grad_ivar_is_the_gradient_or_none():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    assert x._grad_ivar() is None
    (x * 3).sum().backward()
    assert x._grad_ivar().numpy().tolist() == [3.0, 3.0]
