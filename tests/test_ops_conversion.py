"""Tensor methods that convert or describe a tensor (``minidp/ops/conversion.py``): dtype
shortcuts, moves between devices, ``requires_grad``, ``grad_``, ``data``, ``detach_``,
``apply`` and ``retain_grads``. Expected values not computed with NumPy were recorded from
Paddle 3.3.1 by hand."""

import numpy as np
import pytest

import minidp
from gradcheck import check_grad


@pytest.mark.parametrize(
    "method, dtype",
    [
        ("bfloat16", "bfloat16"),
        ("bool", "bool"),
        ("byte", "uint8"),
        ("char", "int8"),
        ("double", "float64"),
        ("float", "float32"),
        ("float16", "float16"),
        ("float32", "float32"),
        ("float64", "float64"),
        ("half", "float16"),
        ("int", "int32"),
        ("int8", "int8"),
        ("int16", "int16"),
        ("int32", "int32"),
        ("int64", "int64"),
        ("long", "int64"),
        ("short", "int16"),
        ("uint8", "uint8"),
    ],
)
def test_cast_methods(method, dtype):
    out = getattr(minidp.to_tensor([1.5, 2.0, 0.0]), method)()
    assert out.dtype.name == dtype
    np.testing.assert_array_equal(
        out.numpy().astype("float64"), np.array([1.5, 2.0, 0.0]).astype(out.dtype).astype("float64")
    )


def test_cast_methods_pass_gradients():
    check_grad(lambda x: x.double() * x.to("float64").float64(), np.array([0.5, -1.0, 2.0]))
    x = minidp.to_tensor([0.5, 2.0], stop_gradient=False)
    x.float().sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.numpy().tolist() == [1.0, 1.0]


def test_to_accepts_devices_dtypes_and_tensors():
    x = minidp.to_tensor([1.0, 2.0])
    assert x.to("cpu") is x and x.cpu() is x and x.to(minidp.CPUPlace()) is x
    assert x.to("float64").dtype == np.float64
    assert x.to("cpu", minidp.float16, False).dtype == np.float16
    assert x.to(minidp.ones([1], "float64")).dtype == np.float64
    assert x.to(dtype="int32", device="cpu", blocking=True).dtype == np.int32
    with pytest.raises(TypeError, match="unexpected keyword"):
        x.to(non_blocking=True)
    with pytest.raises(ValueError, match="CUDA device"):
        x.cuda(99)


def test_device_facts():
    x = minidp.to_tensor([[1.0, 2.0]])
    assert (x.device, x.get_device(), x.is_cuda, x.itemsize, x.ndimension()) == ("cpu", -1, False, 4, 2)
    assert minidp.to_tensor([1], dtype="int16").itemsize == 2
    assert x.is_tensor() and not minidp.Tensor.is_tensor(3)


def test_requires_grad_flag_is_the_opposite_of_stop_gradient():
    x = minidp.to_tensor([1.0])
    assert x.requires_grad is False
    x.requires_grad = True
    assert x.stop_gradient is False
    assert x.requires_grad_(False) is x and x.stop_gradient is True
    x.requires_grad_()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0])


def test_grad_underscore_is_grad():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad_.numpy(), [3.0, 3.0])
    x.grad_ = minidp.to_tensor([5.0, 5.0])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_type_as_and_data():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    assert x.type_as(minidp.to_tensor([1], dtype="int32")).dtype == np.int32
    y = x * 2
    detached = y.data
    assert detached.stop_gradient and detached is not y
    np.testing.assert_allclose(detached.numpy(), [2.0, 4.0])
    x.data = minidp.to_tensor([7.0, 8.0])
    np.testing.assert_allclose(x.numpy(), [7.0, 8.0])


def test_detach_in_place_cuts_the_graph():
    x = minidp.to_tensor([1.0], stop_gradient=False)
    y = x * 2
    assert y.detach_() is y and y.stop_gradient and y.is_leaf


def test_apply_and_apply_in_place():
    x = minidp.to_tensor([1.0, 2.0])
    np.testing.assert_allclose(x.apply(lambda t: t * 3).numpy(), [3.0, 6.0])
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0])
    assert x.apply_(lambda t: t * 3) is x
    np.testing.assert_allclose(x.numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="requires a gradient"):
        minidp.to_tensor([1.0], stop_gradient=False).apply(lambda t: t)


def test_retain_grads_keeps_a_non_leaf_gradient():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    z = x * 2
    z.retain_grads()
    z.retain_grads()  # a second call registers nothing more
    (z * z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [4.0, 8.0])
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


@pytest.mark.gpu
@pytest.mark.skipif(
    not minidp.is_compiled_with_cuda(), reason="no CUDA device visible to CuPy (no GPU, driver or cupy)"
)
def test_moves_between_host_and_gpu_keep_values_and_gradients():
    x = minidp.to_tensor([1.0, 2.0], stop_gradient=False)
    on_gpu = x.cuda()
    assert (on_gpu.place, on_gpu.is_cuda, on_gpu.get_device(), on_gpu.device) == ("gpu:0", True, 0, "gpu:0")
    assert x.to("gpu:0", "float64").dtype == np.float64
    back = (on_gpu * on_gpu).cpu()
    assert back.place == "cpu"
    back.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert x.grad.place == "cpu"
