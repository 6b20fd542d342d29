"""Paddle call forms that scripts use unchanged: tensor creation and conversion, backward on a
tensor without gradient, Optimizer.minimize, ParamAttr, batch and the execution-mode functions.
Expected behaviour checked against Paddle 3.3.1."""
import numpy
import pytest

import minidp


def test_backward_without_gradient_is_a_no_op():
    x = minidp.ones([2])
    assert (x * 2).sum().backward() is None
    assert x.grad is None


def test_numpy_accepts_paddles_positional_flag():
    numpy.testing.assert_array_equal(minidp.ones([2]).numpy(False), [1.0, 1.0])


@pytest.mark.parametrize("place", ["cpu", minidp.CPUPlace()], ids=["string", "CPUPlace"])
def test_to_tensor_takes_place_strings_and_objects(place):
    tensor = minidp.to_tensor([1.0, 2.0], place=place)
    assert tensor.place == "cpu"
    numpy.testing.assert_array_equal(tensor.numpy(), [1.0, 2.0])


def test_places_compare_and_print_as_paddles():
    assert minidp.CPUPlace() == minidp.CPUPlace() and repr(minidp.CPUPlace()) == "Place(cpu)"
    assert minidp.CUDAPlace(1) == minidp.CUDAPlace(1) != minidp.CUDAPlace(0)
    assert minidp.CUDAPlace(1).get_device_id() == 1
    with pytest.raises(TypeError, match="place must be a string"):
        minidp.to_tensor([1.0], place=0)
    with pytest.raises(TypeError, match="non-negative int"):
        minidp.CUDAPlace(-1)


@pytest.mark.parametrize("data, dtype", [
    (numpy.float64(1.5), "float64"), (numpy.int32(3), "int32"), (numpy.bool_(True), "bool"),
    (1.5, "float32"), (3, "int64"), (True, "bool"), ([1, 2.5], "float32"),
    ([minidp.to_tensor(1.0), minidp.to_tensor(2.0)], "float32"),
], ids=["np-float64", "np-int32", "np-bool", "float", "int", "bool", "mixed-list", "list-of-tensors"])
def test_to_tensor_dtype_rules_follow_paddle(data, dtype):
    assert minidp.to_tensor(data).dtype == numpy.dtype(dtype)


def test_to_tensor_stacks_a_list_of_tensors_and_takes_stop_gradient():
    stacked = minidp.to_tensor([minidp.ones([2]), minidp.zeros([2])], stop_gradient=False)
    assert stacked.shape == [2, 2] and not stacked.stop_gradient
    numpy.testing.assert_array_equal(stacked.numpy(), [[1, 1], [0, 0]])
    source = minidp.to_tensor([1.0], stop_gradient=False)
    assert minidp.to_tensor(source).stop_gradient  # a copy, stop_gradient=True by default as in Paddle


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
    numpy.testing.assert_allclose(params_grads[0][1].numpy(), [[1.0], [1.0]])
    for param, start in zip(layer.parameters(), before):
        numpy.testing.assert_allclose(param.numpy(), start - 0.1, rtol=1e-6)


def test_minimize_updates_only_the_given_parameters():
    layer, opt = model_and_optimizer()
    layer(minidp.ones([1, 2])).sum().backward()
    bias = layer.bias.numpy().copy()
    _, params_grads = opt.minimize(layer.weight, parameters=[layer.weight])
    assert [p is layer.weight for p, _ in params_grads] == [True]
    numpy.testing.assert_array_equal(layer.bias.numpy(), bias)
    with pytest.raises(TypeError, match="parameters must be Tensors"):
        opt.minimize(layer.weight, parameters=[layer.weight.name])
    with pytest.raises(TypeError, match="loss must be a Tensor"):
        opt.minimize(1.0)


def test_param_attr_is_at_the_top_level_with_paddles_defaults():
    attr = minidp.ParamAttr(name="w", learning_rate=0.5)
    assert attr.do_model_average is True and attr.trainable and attr.need_clip
    layer = minidp.nn.Linear(2, 2, weight_attr=attr)
    assert layer.weight.name == "w"


def test_batch_groups_a_reader():
    def reader():
        yield from range(5)

    assert list(minidp.batch(reader, 2)()) == [[0, 1], [2, 3], [4]]
    assert list(minidp.batch(reader, 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="positive int"):
        minidp.batch(reader, 0)
    with pytest.raises(TypeError, match="reader must be a function"):
        minidp.batch([1, 2], 1)


def test_dynamic_mode_is_the_only_mode():
    assert minidp.in_dynamic_mode() is True
    assert minidp.disable_static() is None
    assert minidp.disable_static(minidp.CPUPlace()) is None
    with pytest.raises(RuntimeError, match="dynamic graph .* only"):
        minidp.enable_static()
    assert minidp.in_dynamic_mode()


def test_backward_and_apply_gradients_split_minimize_as_in_paddle():
    layer, opt = model_and_optimizer()
    layer(minidp.ones([1, 2])).sum().backward()
    params_grads = opt.backward(layer.weight)
    assert [p is q for (p, _), q in zip(params_grads, layer.parameters())] == [True, True]
    weight = layer.weight.numpy().copy()
    halved = [(param, grad * 0.5) for param, grad in params_grads]
    assert opt.apply_gradients(halved) == []
    np_weight = layer.weight.numpy()
    numpy.testing.assert_allclose(np_weight, weight - 0.1 * 0.5, rtol=1e-6)
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
