"""Tensor attributes that describe the tensor rather than compute with it."""
import minidp
from minidp.framework import VarType


def test_type_is_paddles_dense_tensor_kind():
    x = minidp.to_tensor([1.0, 2.0])
    assert x.type is VarType.DENSE_TENSOR and str(x.type) == "VarType.DENSE_TENSOR"
    assert x.type.value == 7  # Paddle's number for it
    assert minidp.nn.Linear(2, 2).weight.type is VarType.DENSE_TENSOR
