"""The object format of the object collectives (``minidp.distributed.communication.object_codec``): exact round
trips, refusals that name the type and the opt-in, pickles refused unless opted in, and corrupt
or hostile bytes rejected with ``ValueError`` before anything large is allocated."""

import collections
import math
import pickle
import struct

import numpy as np
import pytest

import minidp
import minidp.distributed as dist
from minidp.distributed.communication.object_codec import MAX_DEPTH, decode_object, encode_object


@pytest.fixture
def typed():
    dist.set_object_serializer("typed")
    yield
    dist.set_object_serializer("typed")


ROUND_TRIPS = [
    None,
    True,
    False,
    0,
    -1,
    255,
    -129,
    2**200,
    -(2**70),
    1.5,
    -0.0,
    math.inf,
    1e-310,
    complex(1, -2),
    "",
    "héllo ✓",
    b"",
    b"\x00\xff",
    [],
    (),
    {},
    [1, [2, (3, "x")]],
    (None,),
    {1: "a", "k": [1.0], (1, 2): None, None: b"x", 2.5: True},
    collections.OrderedDict([("w", 1), ("b", 2)]),
]


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=repr)
def test_plain_values_round_trip_with_their_exact_types(typed, value):
    back = decode_object(encode_object(value))
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_nested_types_survive(typed):
    value = {"t": (1, [2, (3,)]), "d": collections.OrderedDict(a=(None,))}
    back = decode_object(encode_object(value))
    assert type(back["t"]) is tuple and type(back["t"][1]) is list
    assert type(back["t"][1][1]) is tuple and type(back["d"]) is collections.OrderedDict
    assert math.isnan(decode_object(encode_object(float("nan"))))


@pytest.mark.parametrize(
    "dtype",
    ["bool", "uint8", "int8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64", "complex64", ">i4"],
)
@pytest.mark.parametrize("shape", [[], [0], [3], [2, 0, 4], [2, 3]])
def test_arrays_and_scalars_round_trip_bit_for_bit(typed, dtype, shape):
    array = (np.arange(int(np.prod(shape))) % 7 - 3).astype(dtype).reshape(shape)
    back = decode_object(encode_object(array))
    assert type(back) is np.ndarray and back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes() and back.flags.writeable
    if not shape:
        scalar = array[()]
        again = decode_object(encode_object(scalar))
        assert type(again) is type(scalar) and again == scalar


def test_views_travel_as_their_values(typed):
    base = np.arange(12.0).reshape(3, 4)
    assert decode_object(encode_object(base.T[::2])).tolist() == base.T[::2].tolist()


def test_tensors_and_parameters_arrive_as_tensors(typed):
    tensor = minidp.to_tensor(np.arange(4, dtype="float32"), stop_gradient=False)
    parameter = minidp.nn.Linear(2, 1).weight
    back = decode_object(encode_object([tensor, parameter]))
    assert all(type(t) is minidp.Tensor for t in back)
    assert back[0].numpy().tolist() == [0, 1, 2, 3] and back[0].dtype == tensor.dtype
    assert back[0].stop_gradient is False and back[1].stop_gradient is False
    np.testing.assert_array_equal(back[1].numpy(), parameter.numpy())


class Custom:
    pass


@pytest.mark.parametrize(
    "value, named",
    [
        ({1, 2}, "builtins.set"),
        (bytearray(b"x"), "builtins.bytearray"),
        (Custom(), "Custom"),
        (collections.defaultdict(list), "collections.defaultdict"),
        (collections.namedtuple("Point", "x y")(1, 2), "Point"),
        (dist.ReduceOp.SUM, "ReduceOp"),
        ([1, {"k": print}], "builtin_function_or_method"),
    ],
)
def test_unsupported_objects_name_their_type_and_the_opt_in(typed, value, named):
    with pytest.raises(TypeError, match=named) as caught:
        encode_object(value)
    assert "set_object_serializer('pickle')" in str(caught.value)


def test_object_arrays_are_refused(typed):
    with pytest.raises(TypeError, match="dtype object.*set_object_serializer"):
        encode_object(np.array([None, 1], dtype=object))


def test_self_containing_and_too_deep_objects_are_refused(typed):
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match=f"deeper than {MAX_DEPTH} levels"):
        encode_object(loop)
    deep = nested = []
    for _ in range(MAX_DEPTH - 1):
        nested.append([])
        nested = nested[0]
    assert decode_object(encode_object(deep)) == deep


def test_pickles_are_refused_unless_this_rank_opted_in(typed):
    dist.set_object_serializer("pickle")
    payload = encode_object({1, 2})
    assert dist.get_object_serializer() == "pickle" and payload[:1] == b"P"
    assert decode_object(payload) == {1, 2}
    dist.set_object_serializer("typed")
    with pytest.raises(ValueError, match="rank 3 sent a pickled object.*set_object_serializer"):
        decode_object(payload, "rank 3")
    with pytest.raises(ValueError, match="must be one of"):
        dist.set_object_serializer("json")


def test_typed_bytes_are_read_whatever_this_rank_sends(typed):
    payload = encode_object([1, "x"])
    dist.set_object_serializer("pickle")
    assert decode_object(payload) == [1, "x"]


def count(n):
    return struct.pack("<Q", n)


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"", "not in minidp's object format"),
        (pickle.dumps([1]), "not in minidp's object format"),
        (b"T", "1 bytes announced but only 0 left"),
        (b"Tz", "unknown tag b'z'"),
        (b"Ts" + count(10) + b"abc", "10 bytes announced but only 3 left"),
        (b"Ts" + count(1) + b"\xff", "invalid UTF-8"),
        (b"Tl" + count(2**60), "items announced"),
        (b"Td" + count(2**40), "dict entries announced"),
        (b"Td" + count(1) + b"l" + count(0) + b"N", "unhashable dict key of type list"),
        (b"Ta" + count(2) + b"|O" + count(0), "dtype object"),
        (b"Ta" + count(3) + b"<xx", "unreadable array dtype"),
        (b"Ta" + count(3) + b"<f8" + count(2) + count(2**40) + count(2**40), "bytes announced"),
        (b"Ta" + count(3) + b"<f8" + count(1000), "1000 dimensions"),
        (b"Tg" + count(3) + b"<f8" + count(1) + count(1) + b"\0" * 8, "NumPy scalar with a shape"),
        (b"TN" + b"N", "1 trailing bytes"),
        (b"T" + b"l" + count(1) * 1 + (b"l" + count(1)) * (MAX_DEPTH + 2) + b"N", "nesting deeper"),
    ],
)
def test_corrupt_or_hostile_bytes_raise_value_error(typed, data, problem):
    with pytest.raises(ValueError, match=problem):
        decode_object(data, "rank 1")
