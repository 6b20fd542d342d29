"""Tensor (``minidp/autograd/tensor.py``) as Paddle scripts use it: read back with ``numpy()``,
and the functions that minidp.ops also attaches as methods (``a.add_n``, ``cond.where``, ...).
``to_tensor`` is specified in test_ops_creation.py, ``reduce_as`` in test_ops_reduction.py and
``shard_index`` in test_ops_indexing.py, beside the ops they belong to."""
import numpy as np

import minidp


def test_numpy_accepts_paddles_positional_flag():
    np.testing.assert_array_equal(minidp.ones([2]).numpy(False), [1.0, 1.0])


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
