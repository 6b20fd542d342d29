"""Tensor (``minidp/autograd/tensor.py``) as Paddle scripts use it: made by ``to_tensor`` from
Python data, places and other tensors with Paddle's dtype rules, read back with ``numpy()``, and
the functions that minidp.ops also attaches as methods (``x.reduce_as``, ``ids.shard_index``,
``cond.where``, ...). Expected values not computed with NumPy were recorded from Paddle 3.3.1."""
import numpy as np
import pytest

import minidp
from gradcheck import check_grad


def test_numpy_accepts_paddles_positional_flag():
    np.testing.assert_array_equal(minidp.ones([2]).numpy(False), [1.0, 1.0])


@pytest.mark.parametrize("place", ["cpu", minidp.CPUPlace()], ids=["string", "CPUPlace"])
def test_to_tensor_takes_place_strings_and_objects(place):
    tensor = minidp.to_tensor([1.0, 2.0], place=place)
    assert tensor.place == "cpu"
    np.testing.assert_array_equal(tensor.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("data, dtype", [
    (np.float64(1.5), "float64"), (np.int32(3), "int32"), (np.bool_(True), "bool"),
    (1.5, "float32"), (3, "int64"), (True, "bool"), ([1, 2.5], "float32"),
    ([minidp.to_tensor(1.0), minidp.to_tensor(2.0)], "float32"),
], ids=["np-float64", "np-int32", "np-bool", "float", "int", "bool", "mixed-list", "list-of-tensors"])
def test_to_tensor_dtype_rules_follow_paddle(data, dtype):
    assert minidp.to_tensor(data).dtype == np.dtype(dtype)


def test_to_tensor_stacks_a_list_of_tensors_and_takes_stop_gradient():
    stacked = minidp.to_tensor([minidp.ones([2]), minidp.zeros([2])], stop_gradient=False)
    assert stacked.shape == [2, 2] and not stacked.stop_gradient
    np.testing.assert_array_equal(stacked.numpy(), [[1, 1], [0, 0]])
    source = minidp.to_tensor([1.0], stop_gradient=False)
    assert minidp.to_tensor(source).stop_gradient  # a copy, stop_gradient=True by default as in Paddle


def test_method_forms_of_functions():
    a, b = minidp.to_tensor([1.0, 2.0]), minidp.to_tensor([3.0, 4.0])
    np.testing.assert_allclose(a.add_n().numpy(), [1.0, 2.0])  # the method's self is add_n's ``inputs``
    np.testing.assert_allclose(a.true_divide(b).numpy(), [1 / 3, 0.5])
    np.testing.assert_allclose(a.softmax(0).numpy(), np.exp([1, 2]) / np.exp([1, 2]).sum(), rtol=1e-6)
    assert minidp.Tensor.stack([a, b]).shape == [2, 2] and minidp.Tensor.concat([a, b]).shape == [4]
    cond = minidp.to_tensor([True, False])
    np.testing.assert_allclose(cond.where(a, b).numpy(), [1.0, 4.0])
    counter = minidp.to_tensor([1.0])
    assert counter.increment(2.0) is counter and counter.item() == 3.0


def test_reduce_as_sums_to_the_target_shape():
    x = np.arange(24, dtype="float64").reshape(2, 3, 4)
    out = minidp.reduce_as(minidp.to_tensor(x), minidp.ones([3, 1]))
    np.testing.assert_allclose(out.numpy(), x.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_allclose(minidp.ones([2, 3]).reduce_as(minidp.ones([3])).numpy(), [2.0, 2.0, 2.0])
    check_grad(lambda a: minidp.reduce_as(a, minidp.ones([1, 4])), x)
    with pytest.raises(ValueError, match="does not broadcast"):
        minidp.reduce_as(minidp.ones([2, 3]), minidp.ones([2]))


def test_shard_index_matches_paddle():
    ids = minidp.to_tensor([[1], [6], [12], [19]])
    np.testing.assert_array_equal(minidp.shard_index(ids, 20, 2, 0).numpy(), [[1], [6], [-1], [-1]])
    np.testing.assert_array_equal(ids.shard_index(20, 2, 1, ignore_value=-5).numpy(), [[-5], [-5], [2], [9]])
    with pytest.raises(TypeError, match="integer"):
        minidp.shard_index(minidp.ones([2, 1]), 20, 2, 0)
    with pytest.raises(ValueError, match="shard_id"):
        minidp.shard_index(ids, 20, 2, 2)


def test_repr_has_paddles_layout():
    """As Paddle 3.3.1 prints them (values in NumPy's number format, which Paddle's resembles)."""
    assert repr(minidp.to_tensor([[1.0, 2.0], [3.0, 4.0]])) == (
        "Tensor(shape=[2, 2], dtype=float32, place=Place(cpu), stop_gradient=True,\n"
        "       [[1., 2.],\n"
        "        [3., 4.]])")
    assert repr(minidp.to_tensor(3)) == (
        "Tensor(shape=[], dtype=int64, place=Place(cpu), stop_gradient=True,\n       3)")
    assert repr(minidp.nn.Linear(1, 1).bias) == (
        "Parameter containing:\n"
        "Tensor(shape=[1], dtype=float32, place=Place(cpu), stop_gradient=False,\n       [0.])")
