"""Creation ops: values and dtypes against NumPy and Paddle's rules, gradients of the differentiable ones."""

import gc
import weakref

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(17)
T = minidp.to_tensor


def r(*shape):
    return rng.uniform(-2.0, 2.0, shape)


GRAD_CASES = [
    ("clone", lambda x: minidp.clone(x) * 2, [r(2, 3)]),
    ("tensor_clone", lambda x: x.clone(), [r(3)]),
    ("assign", lambda x: minidp.assign(x), [r(2, 3)]),
    ("assign_output", lambda x: minidp.assign(x, minidp.zeros([2, 3], "float64")), [r(2, 3)]),
    ("diag_vector", lambda x: minidp.diag(x, 1), [r(3)]),
    ("diag_padding", lambda x: minidp.diag(x, -1, padding_value=7.0), [r(3)]),
    ("diag_matrix", lambda x: minidp.diag(x, 1), [r(3, 4)]),
    ("diagflat", lambda x: minidp.diagflat(x), [r(2, 2)]),
    ("meshgrid", lambda x, y: minidp.meshgrid(x, y)[0] * minidp.meshgrid([x, y])[1], [r(3), r(4)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, inputs):
    check_grad(fn, *inputs)


def test_ranges():
    values = minidp.linspace(0, 1, 5)
    assert values.dtype == np.float32
    np.testing.assert_allclose(values.numpy(), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_array_equal(minidp.linspace(0, 10, 3, dtype="int32").numpy(), [0, 5, 10])
    np.testing.assert_allclose(minidp.linspace(T(1.0), T(2.0), T(3)).numpy(), [1.0, 1.5, 2.0])
    np.testing.assert_allclose(minidp.logspace(0, 2, 3, base=2.0).numpy(), [1.0, 2.0, 4.0])
    assert minidp.logspace(0, 2, 3).dtype == np.float32


def test_empty_and_structural():
    assert minidp.empty([2, 3]).shape == [2, 3] and minidp.empty([2], "int64").dtype == np.int64
    like = minidp.empty_like(T(np.ones((2, 2), dtype=np.float64)))
    assert like.shape == [2, 2] and like.dtype == np.float64
    np.testing.assert_allclose(
        minidp.diag(T([1.0, 2.0]), offset=1, padding_value=7).numpy(), [[7, 1, 7], [7, 7, 2], [7, 7, 7]]
    )
    np.testing.assert_array_equal(minidp.tril_indices(3, 3, 0).numpy(), np.stack(np.tril_indices(3, 0, 3)))
    upper = minidp.triu_indices(3, None, 1)
    np.testing.assert_array_equal(upper.numpy(), [[0, 0, 1], [1, 2, 2]])
    assert upper.dtype == np.int64 and minidp.tril_indices(2, 2, dtype="int32").dtype == np.int32
    grid_x, grid_y = minidp.meshgrid(minidp.arange(2), minidp.arange(3))
    np.testing.assert_array_equal(grid_x.numpy(), np.meshgrid(np.arange(2), np.arange(3), indexing="ij")[0])
    assert grid_y.shape == [2, 3]


def test_shape_numel_rank():
    x = T(np.ones((2, 3)))
    shape, numel, rank = minidp.shape(x), minidp.numel(x), minidp.rank(x)
    np.testing.assert_array_equal(shape.numpy(), [2, 3])
    assert shape.dtype == np.int64 and numel.dtype == np.int64 and rank.dtype == np.int32
    assert int(numel) == 6 and numel.shape == [] and int(rank) == 2 and int(x.numel()) == 6


def test_assign_forms():
    np.testing.assert_allclose(minidp.assign(np.arange(3.0)).numpy(), [0.0, 1.0, 2.0])
    assert minidp.assign([1.5, 2.5]).dtype == np.float32
    out = minidp.zeros([3], "float32")
    returned = minidp.assign(T(np.array([1.0, 2.0, 3.0], dtype=np.float32)), out)
    assert returned is out
    np.testing.assert_allclose(out.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="output has shape"):
        minidp.assign(T(np.ones(2)), minidp.zeros([3]))


def test_assign_into_a_parameter_keeps_it_trainable_and_its_earlier_gradient():
    # As Paddle 3.3.1: loading values into a leaf keeps stop_gradient and inplace_version, the
    # gradient of an op that read it before reaches it, and its old array is not kept alive.
    p = minidp.to_tensor(np.ones(3, dtype=np.float32), stop_gradient=False)
    old = weakref.ref(p._data)
    y = p * 2
    minidp.assign(np.zeros(3, dtype=np.float32), output=p)
    assert not p.stop_gradient and p.inplace_version == 0
    np.testing.assert_array_equal(p.numpy(), [0.0, 0.0, 0.0])
    y.sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0, 2.0])
    del y
    gc.collect()
    assert old() is None


def test_clone_is_a_copy():
    x = T(np.ones(3))
    y = minidp.clone(x)
    y.numpy()[0] = 5.0  # numpy() shares the host array, so this writes into y
    assert y.numpy()[0] == 5.0 and x.numpy()[0] == 1.0


def test_conversions_and_predicates():
    array = np.ones(3)
    shared = minidp.from_numpy(array)
    array[0] = 7.0
    assert shared.numpy()[0] == 7.0 and shared.dtype == np.float64
    with pytest.raises(TypeError, match="expects a numpy.ndarray"):
        minidp.from_numpy([1.0])
    grad_ready = minidp.as_tensor([1.0, 2.0], requires_grad=True)
    assert grad_ready.dtype == np.float32 and not grad_ready.stop_gradient
    x = T(np.ones(2, dtype=np.float32))
    assert minidp.asarray(x) is x and minidp.asarray(x, copy=True) is not x
    assert minidp.asarray(x, dtype="float64").dtype == np.float64
    assert minidp.is_tensor(x) and not minidp.is_tensor(array)
    assert minidp.is_floating_point(x) and not minidp.is_integer(x) and not minidp.is_complex(x)
    assert minidp.is_integer(T([1])) and x.is_floating_point()
    assert bool(minidp.is_empty(minidp.zeros([0]))) and not bool(x.is_empty())
    assert minidp.tolist(T([[1, 2]])) == [[1, 2]]


def test_bad_inputs():
    with pytest.raises(ValueError, match="1-D or 2-D"):
        minidp.diag(T(np.ones((2, 2, 2))))
    with pytest.raises(ValueError, match="expects 1-D tensors"):
        minidp.meshgrid(T(np.ones((2, 2))), T(np.ones(2)))
    with pytest.raises(TypeError, match="need one dtype"):
        minidp.meshgrid(minidp.arange(2), minidp.arange(3).astype("float32"))


@pytest.mark.parametrize("place", ["cpu", minidp.CPUPlace()], ids=["string", "CPUPlace"])
def test_to_tensor_takes_place_strings_and_objects(place):
    tensor = minidp.to_tensor([1.0, 2.0], place=place)
    assert tensor.place == "cpu"
    np.testing.assert_array_equal(tensor.numpy(), [1.0, 2.0])


@pytest.mark.parametrize(
    "data, dtype",
    [
        (np.float64(1.5), "float64"),
        (np.int32(3), "int32"),
        (np.bool_(True), "bool"),
        (1.5, "float32"),
        (3, "int64"),
        (True, "bool"),
        ([1, 2.5], "float32"),
        ([minidp.to_tensor(1.0), minidp.to_tensor(2.0)], "float32"),
    ],
    ids=["np-float64", "np-int32", "np-bool", "float", "int", "bool", "mixed-list", "list-of-tensors"],
)
def test_to_tensor_dtype_rules_follow_paddle(data, dtype):
    assert minidp.to_tensor(data).dtype == np.dtype(dtype)


def test_to_tensor_stacks_a_list_of_tensors_and_takes_stop_gradient():
    stacked = minidp.to_tensor([minidp.ones([2]), minidp.zeros([2])], stop_gradient=False)
    assert stacked.shape == [2, 2] and not stacked.stop_gradient
    np.testing.assert_array_equal(stacked.numpy(), [[1, 1], [0, 0]])
    source = minidp.to_tensor([1.0], stop_gradient=False)
    assert minidp.to_tensor(source).stop_gradient  # a copy, stop_gradient=True by default as in Paddle


def test_creation_functions_follow_paddle_signatures():
    minidp.seed(3)
    a = minidp.randn([2, 3], "float32")
    minidp.seed(3)
    b = minidp.randn([2, 3], "float32")
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.shape == [2, 3] and a.dtype == np.float32
    assert minidp.zeros([2], "int64").dtype == np.int64
    assert minidp.full([2], 7.0).numpy().tolist() == [7.0, 7.0]
    assert minidp.arange(5).numpy().tolist() == [0, 1, 2, 3, 4]
    assert minidp.ones_like(a).shape == [2, 3]
    u = minidp.uniform([1000], min=2.0, max=3.0)
    assert 2.0 <= u.numpy().min() and u.numpy().max() < 3.0
    assert minidp.to_tensor([True, False]).dtype == np.bool_
    assert minidp.to_tensor(np.ones(2, np.float64)).dtype == np.float64
    with pytest.raises(TypeError, match="unsupported dtype"):
        minidp.zeros([2], "float7")


def test_to_tensor_keeps_a_bfloat16_array_and_refuses_structured_ones():
    """bfloat16 (ml_dtypes) is NumPy kind 'V' like a structured dtype: only the latter is refused."""
    data = np.ones(3, dtype=minidp.bfloat16)
    assert minidp.to_tensor(data).dtype == minidp.bfloat16
    with pytest.raises(TypeError, match="numbers or bools"):
        minidp.to_tensor(np.zeros(2, dtype=[("a", "f4")]))
