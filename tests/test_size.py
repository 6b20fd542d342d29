"""minidp.Size, the type of Tensor.shape, behaves as paddle.Size does in Paddle 3.3.1."""

import copy

import numpy as np
import pytest

import minidp


def test_a_shape_is_a_size_that_equals_the_list_and_the_tuple_of_its_sizes():
    shape = minidp.zeros([2, 3]).shape
    assert isinstance(shape, minidp.Size) and isinstance(shape, list)
    assert shape == [2, 3] and shape == (2, 3) and (2, 3) == shape and [2, 3] == shape
    assert shape != (3, 2) and shape != [2, 3, 1] and not (shape != (2, 3))
    assert minidp.zeros([]).shape == [] and minidp.zeros([]).shape.numel() == 1
    assert shape.numel() == 6 and shape[0] == 2 and type(shape[0]) is int


def test_slices_sums_products_and_copies_stay_sizes():
    shape = minidp.Size([2, 3, 4])
    for derived, expected in [
        (shape[1:], [3, 4]),
        (shape + [5], [2, 3, 4, 5]),
        (shape + (5,), [2, 3, 4, 5]),
        ([1] + shape, [1, 2, 3, 4]),  # as Paddle 3.3.1: a Size on the right keeps its type
        ((1,) + shape, [1, 2, 3, 4]),
        (shape * 2, [2, 3, 4, 2, 3, 4]),
        (2 * shape[:1], [2, 2]),
        (shape.copy(), [2, 3, 4]),
        (copy.deepcopy(shape), [2, 3, 4]),
    ]:
        assert type(derived) is minidp.Size and derived == expected


def test_construction_from_ints_numpy_integers_and_int_tensors():
    assert minidp.Size() == [] and minidp.Size((4,)) == [4]
    assert minidp.Size([np.int64(3), minidp.to_tensor(2)]) == [3, 2]
    assert minidp.Size(np.array([2, 3])) == [2, 3]
    assert minidp.zeros(minidp.Size([2, 3])).shape == [2, 3]
    assert np.zeros(minidp.Size([2, 3])).shape == (2, 3)
    with pytest.raises(TypeError, match=r"item 1 is 'float'"):
        minidp.Size([2, 2.5])
    with pytest.raises(TypeError, match="iterable of ints, got str"):
        minidp.Size("ab")


def test_repr_names_the_type_and_str_reads_like_the_list():
    shape = minidp.Size([2, 3])
    assert repr(shape) == "minidp.Size([2, 3])"
    assert str(shape) == f"{shape}" == "[2, 3]"
    with pytest.raises(TypeError):
        hash(shape)
