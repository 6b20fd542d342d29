"""Names added to close Paddle API gaps: dtypes and constants, finfo/iinfo, the default dtype,
Tensor conversion methods, in-place forms, reduce_as, shard_index, swiglu and aliases.

Expected values not computed with NumPy were recorded from Paddle 3.3.1 by hand.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from tests.gradcheck import check_grad


# --- dtypes, constants, aliases ---------------------------------------------------------------

def test_dtype_constants_name_the_numpy_dtypes():
    expected = {"int8": "int8", "int16": "int16", "uint8": "uint8", "uint32": "uint32", "uint64": "uint64",
                "float": "float32", "double": "float64", "half": "float16", "uint16": "bfloat16"}
    for attr, name in expected.items():
        assert getattr(minidp, attr).name == name, attr
    assert isinstance(minidp.float32, minidp.dtype)
    assert minidp.zeros([2], minidp.int16).dtype == np.int16
    assert minidp.to_tensor([1, 2]).astype("uint64").dtype == np.uint64


def test_math_constants_and_newaxis():
    assert (minidp.e, minidp.pi) == (math.e, math.pi)
    assert minidp.inf == math.inf and math.isnan(minidp.nan)
    x = minidp.ones([2, 3])
    assert x[minidp.newaxis].shape == [1, 2, 3]


def test_finfo_matches_paddle():
    f32 = minidp.finfo(minidp.float32)
    assert (f32.eps, f32.resolution, f32.bits, f32.dtype) == (np.finfo(np.float32).eps, 1e-6, 32, "float32")
    assert f32.max == float(np.finfo(np.float32).max) and f32.tiny == f32.smallest_normal
    bf16 = minidp.finfo("bfloat16")
    assert (bf16.max, bf16.eps, bf16.resolution, bf16.smallest_normal, bf16.bits) == (
        3.3895313892515355e+38, 0.0078125, 0.01, 1.1754943508222875e-38, 16)
    f16 = minidp.finfo(minidp.float16)
    assert (f16.min, f16.eps, f16.resolution, f16.smallest_normal) == (-65504.0, 0.0009765625, 0.001,
                                                                        6.103515625e-05)
    with pytest.raises(TypeError, match="iinfo"):
        minidp.finfo(minidp.int32)


def test_iinfo_matches_paddle():
    u8 = minidp.iinfo(minidp.uint8)
    assert (u8.min, u8.max, u8.bits, u8.dtype) == (0, 255, 8, "uint8")
    i64 = minidp.iinfo("int64")
    assert (i64.min, i64.max) == (-2 ** 63, 2 ** 63 - 1)
    with pytest.raises(TypeError, match="finfo"):
        minidp.iinfo(minidp.float32)


def test_set_default_dtype_drives_creation():
    assert minidp.get_default_dtype() == "float32"
    try:
        minidp.set_default_dtype("float64")
        assert minidp.get_default_dtype() == "float64"
        made = [minidp.zeros([1]), minidp.ones([1]), minidp.randn([1]), minidp.rand([1]), minidp.to_tensor(1.5),
                minidp.arange(0, 1, 0.5), minidp.linspace(0, 1, 3), minidp.full([1], 2.0), minidp.range(0, 2)]
        assert all(t.dtype == np.float64 for t in made)
        assert minidp.to_tensor([1, 2]).dtype == np.int64
        minidp.set_default_dtype(minidp.float16)
        assert minidp.zeros([1]).dtype == np.float16
    finally:
        minidp.set_default_dtype("float32")
    assert minidp.zeros([1]).dtype == np.float32
    with pytest.raises(TypeError, match="one of"):
        minidp.set_default_dtype("int32")


def test_aliases_are_the_same_objects():
    assert minidp.nn.SiLU is minidp.nn.Silu
    assert F.logsigmoid is F.log_sigmoid
    assert minidp.conv2d is F.conv2d and minidp.conv1d is F.conv1d and minidp.conv3d is F.conv3d
    assert minidp.layer_norm is F.layer_norm and minidp.group_norm is F.group_norm
    assert minidp.adaptive_avg_pool1d is F.adaptive_avg_pool1d
    assert minidp.manual_seed is minidp.seed
    x = minidp.to_tensor([0, 5], dtype="int32")
    np.testing.assert_array_equal(minidp.bitwise_invert(x).numpy(), [-1, -6])
    np.testing.assert_array_equal(x.bitwise_invert().numpy(), [-1, -6])


def test_set_printoptions_changes_tensor_repr():
    saved = np.get_printoptions()
    try:
        minidp.set_printoptions(precision=2)
        assert "3.14" in repr(minidp.to_tensor([3.14159])) and "3.142" not in repr(minidp.to_tensor([3.14159]))
        minidp.set_printoptions(sci_mode=True)
        assert "e+00" in repr(minidp.to_tensor([3.14159]))
        minidp.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(minidp.arange(100))
    finally:
        np.set_printoptions(**saved)
    with pytest.raises(TypeError, match="precision"):
        minidp.set_printoptions(precision=-1)


# --- Tensor conversion methods ----------------------------------------------------------------

@pytest.mark.parametrize("method, dtype", [
    ("bfloat16", "bfloat16"), ("bool", "bool"), ("byte", "uint8"), ("char", "int8"), ("double", "float64"),
    ("float", "float32"), ("float16", "float16"), ("float32", "float32"), ("float64", "float64"),
    ("half", "float16"), ("int", "int32"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"),
    ("int64", "int64"), ("long", "int64"), ("short", "int16"), ("uint8", "uint8"),
])
def test_cast_methods(method, dtype):
    out = getattr(minidp.to_tensor([1.5, 2.0, 0.0]), method)()
    assert out.dtype.name == dtype
    np.testing.assert_array_equal(out.numpy().astype("float64"),
                                  np.array([1.5, 2.0, 0.0]).astype(out.dtype).astype("float64"))


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


# --- in-place forms ---------------------------------------------------------------------------

def _arange(*shape):
    return np.arange(np.prod(shape), dtype="float64").reshape(shape)


INPLACE_CASES = [
    ("tril_", lambda x: x.tril_(), lambda a: np.tril(a)),
    ("triu_", lambda x: x.triu_(1), lambda a: np.triu(a, 1)),
    ("t_", lambda x: x.t_(), lambda a: a.T),
    ("masked_fill_", lambda x: x.masked_fill_(minidp.to_tensor([[True, False, True]] * 2), -1.0),
     lambda a: np.where([[True, False, True]] * 2, -1.0, a)),
    ("index_fill_", lambda x: x.index_fill_(minidp.to_tensor([0]), 0, -1.0),
     lambda a: np.concatenate([np.full((1, 3), -1.0), a[1:]])),
    ("index_add_", lambda x: x.index_add_(minidp.to_tensor([1]), 0, minidp.ones([1, 3], "float64")),
     lambda a: a + np.array([[0.0], [1.0]])),
    ("index_put_", lambda x: x.index_put_((minidp.to_tensor([0]), minidp.to_tensor([2])), minidp.to_tensor(9.0)),
     lambda a: np.where(np.arange(6).reshape(2, 3) == 2, 9.0, a)),
    ("scatter_", lambda x: x.scatter_(minidp.to_tensor([1]), minidp.to_tensor([[7.0, 8.0, 9.0]], dtype="float64")),
     lambda a: np.array([a[0], [7.0, 8.0, 9.0]])),
    ("scatter_add_", lambda x: x.scatter_add_(0, minidp.to_tensor([[0, 1, 0]]), minidp.ones([1, 3], "float64")),
     lambda a: a + np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])),
    ("put_along_axis_", lambda x: x.put_along_axis_(minidp.to_tensor([[2], [0]]), 5.0, 1),
     lambda a: np.array([[a[0, 0], a[0, 1], 5.0], [5.0, a[1, 1], a[1, 2]]])),
    ("masked_scatter_", lambda x: x.masked_scatter_(minidp.to_tensor([[True, False, False]] * 2),
                                                    minidp.to_tensor([10.0, 20.0], dtype="float64")),
     lambda a: np.array([[10.0, a[0, 1], a[0, 2]], [20.0, a[1, 1], a[1, 2]]])),
    ("renorm_", lambda x: x.renorm_(2.0, 0, 1.0), lambda a: a / np.maximum(np.linalg.norm(a, axis=1,
                                                                                          keepdims=True), 1.0)),
    ("fill_diagonal_tensor_", lambda x: x.fill_diagonal_tensor_(minidp.to_tensor([7.0, 8.0], dtype="float64")),
     lambda a: np.where(np.eye(2, 3, dtype=bool), np.array([[7.0], [8.0]]), a)),
]


@pytest.mark.parametrize("name, update, expected", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_forms_update_the_tensor(name, update, expected):
    values = _arange(2, 3) + 1.0
    x = minidp.to_tensor(values)
    out = update(x)
    assert out is x
    np.testing.assert_allclose(x.numpy(), expected(values), rtol=1e-6)  # renorm divides by norm + 1e-7


def test_inplace_forms_are_top_level_functions_too():
    for name in ("baddbmm_", "index_add_", "index_fill_", "index_put_", "masked_fill_", "masked_scatter_",
                 "renorm_", "scatter_", "scatter_add_", "t_", "tril_", "triu_", "where_"):
        assert getattr(minidp, name) is getattr(minidp.Tensor, name), name
    x = minidp.to_tensor(_arange(2, 2))
    assert minidp.tril_(x) is x
    np.testing.assert_array_equal(x.numpy(), [[0.0, 0.0], [2.0, 3.0]])


@pytest.mark.parametrize("name, update, expected", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_inplace_forms_pass_gradients(name, update, expected):
    check_grad(lambda x: update(x * 1.0), _arange(2, 3) + 1.0)


def test_baddbmm_in_place():
    rng = np.random.default_rng(0)
    inp, a, b = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 3, 2))
    x = minidp.to_tensor(inp)
    assert minidp.baddbmm_(x, minidp.to_tensor(a), minidp.to_tensor(b), beta=0.5, alpha=2.0) is x
    np.testing.assert_allclose(x.numpy(), 0.5 * inp + 2.0 * a @ b, rtol=1e-12)
    check_grad(lambda i, p, q: minidp.baddbmm_(i * 1.0, p, q, 0.5, 2.0), inp, a, b)


def test_where_in_place_writes_into_x():
    cond = minidp.to_tensor([True, False, True])
    x, y = minidp.to_tensor([1.0, 2.0, 3.0]), minidp.to_tensor([9.0, 9.0, 9.0])
    assert minidp.where_(cond, x, y) is x
    np.testing.assert_allclose(x.numpy(), [1.0, 9.0, 3.0])
    assert minidp.Tensor.where_(cond, x, 0.0) is x
    check_grad(lambda a, b: minidp.where_(cond, a * 1.0, b), np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))


def test_fill_diagonal_in_place_matches_paddle():
    x = minidp.zeros([3, 3])
    assert x.fill_diagonal_(5, offset=1) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 5, 0], [0, 0, 5], [0, 0, 0]])
    np.testing.assert_array_equal(minidp.zeros([5, 2]).fill_diagonal_(5, wrap=True).numpy(),
                                  [[5, 0], [0, 5], [0, 0], [5, 0], [0, 5]])
    np.testing.assert_array_equal(minidp.zeros([3, 4]).fill_diagonal_(3, offset=-1).numpy(),
                                  [[0, 0, 0, 0], [3, 0, 0, 0], [0, 3, 0, 0]])
    np.testing.assert_array_equal(minidp.zeros([2, 2, 2]).fill_diagonal_(3).numpy(),
                                  [[[3, 0], [0, 0]], [[0, 0], [0, 3]]])
    with pytest.raises(ValueError, match="equal sides"):
        minidp.zeros([2, 3, 2]).fill_diagonal_(1)
    check_grad(lambda a: (a * 1.0).fill_diagonal_(2.0, offset=1), _arange(3, 4))


def test_copy_in_place_broadcasts_casts_and_passes_gradient():
    x = minidp.zeros([2, 2])
    assert x.copy_(minidp.to_tensor([5, 6])) is x
    np.testing.assert_array_equal(x.numpy(), [[5.0, 6.0], [5.0, 6.0]])
    assert x.dtype == np.float32
    check_grad(lambda dst, src: (dst * 1.0).copy_(src) * dst, _arange(2, 2), np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="src must be a Tensor"):
        x.copy_([1.0, 2.0])


def test_inplace_form_refuses_a_leaf_that_needs_a_gradient():
    x = minidp.ones([2, 2])
    x.stop_gradient = False
    with pytest.raises(ValueError, match="leaf tensor"):
        x.tril_()


# --- reduce_as, shard_index, swiglu -----------------------------------------------------------

def test_reduce_as_sums_to_the_target_shape():
    x = _arange(2, 3, 4)
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


def test_swiglu_matches_paddle():
    x = minidp.to_tensor([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(F.swiglu(x).numpy(), [[2.19317579, 7.04637623]], rtol=1e-6)
    np.testing.assert_allclose(F.swiglu(x, minidp.full([1, 4], 2.0)).numpy(),
                               [[1.46211720, 3.52318811, 5.71544504, 7.85611010]], rtol=1e-6)
    check_grad(lambda a: F.swiglu(a), np.array([[0.5, -1.0, 2.0, 0.3]]))
    check_grad(lambda a, b: F.swiglu(a, b), np.array([0.5, -1.0]), np.array([2.0, 0.3]))
    with pytest.raises(ValueError, match="even length"):
        F.swiglu(minidp.ones([1, 3]))


# --- lstsq, Generator -------------------------------------------------------------------------

def test_lstsq_matches_paddle_per_driver():
    x = minidp.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    y = minidp.to_tensor([[1.0], [2.0], [4.0]])
    expected_solution = np.linalg.lstsq(x.numpy().astype("float64"), y.numpy().astype("float64"), rcond=None)[0]
    # Paddle 3.3.1 on the CPU: which of residuals, rank, singular values each driver fills
    filled = {None: (0, "int32", 0), "gelsy": (0, "int32", 0), "gelss": (1, "int32", 2), "gelsd": (1, "int32", 2),
              "gels": (1, "int64", 0)}
    for driver, (n_residuals, rank_dtype, n_singular) in filled.items():
        solution, residuals, rank, singular = minidp.linalg.lstsq(x, y, driver=driver)
        np.testing.assert_allclose(solution.numpy(), expected_solution, rtol=1e-5)
        assert residuals.shape == [n_residuals] and rank.dtype.name == rank_dtype and singular.shape == [n_singular]
        assert solution.stop_gradient
    _, residuals, rank, singular = x.lstsq(y, driver="gelsd")
    np.testing.assert_allclose(residuals.numpy(), [0.0714285746216774], rtol=1e-5)
    assert rank.item() == 2
    np.testing.assert_allclose(singular.numpy(), [10.191428184509277, 0.3671378791332245], rtol=1e-5)
    wide = minidp.linalg.lstsq(x.T, y[:2], driver="gelsd")
    np.testing.assert_allclose(wide[0].numpy().ravel(), [0.92857027, -0.21428463, 0.14285696], rtol=1e-5)
    assert wide[1].shape == [0]


def test_lstsq_batches_and_validates():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2))
    solution, residuals, rank, singular = minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="gelss")
    for i in range(2):
        np.testing.assert_allclose(solution.numpy()[i], np.linalg.lstsq(a[i], b[i], rcond=None)[0], rtol=1e-10)
    assert residuals.shape == [2, 2] and rank.shape == [2] and singular.shape == [2, 3]
    with pytest.raises(ValueError, match="driver"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b), driver="svd")
    with pytest.raises(ValueError, match="leading shape"):
        minidp.linalg.lstsq(minidp.to_tensor(a), minidp.to_tensor(b[:, :3]))


def test_generator_is_an_independent_host_generator():
    g = minidp.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    first = [g.random() for _ in range(3)]
    g.manual_seed(5)
    assert [g.random() for _ in range(3)] == first
    state = g.get_state()
    after = g.random()
    g.set_state(state)
    assert g.random() == after
    assert g.seed() == g.initial_seed()
    assert minidp.Generator("cpu") is not minidp.Generator(minidp.CPUPlace())
    with pytest.raises(ValueError, match="only host"):
        minidp.Generator("gpu:0")


@pytest.mark.gpu
@pytest.mark.skipif(not minidp.is_compiled_with_cuda(),
                    reason="no CUDA device visible to CuPy (no GPU, driver or cupy)")
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
