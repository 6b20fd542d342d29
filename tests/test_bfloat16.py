"""bfloat16 as a Tensor dtype through the stack: creation (``ops/creation.py``), casts and their
gradients, arithmetic and the refusal to mix it with float32 (``ops/math.py``), unary ops
(``ops/unary.py``), sums (``ops/reduction.py``), matmul (``ops/linalg.py``), and a Linear layer
forward and backward (``nn/layers/common.py``).

A feature file, kept whole on purpose: on the CPU the dtype is ml_dtypes', which NumPy does not
promote or reduce as it does its own dtypes, so every op must keep it by itself; one file holds
the dtype's whole contract, and a NumPy or ml_dtypes upgrade that breaks it fails here at once.
The optimizers' float32 master weights are specified in test_precision.py, saving and loading
bfloat16 tensors in test_serialization.py.
"""

import ml_dtypes
import numpy as np
import pytest

import minidp
from gradcheck import bf16_values

BF16 = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(0)


def test_bfloat16_is_a_dtype_of_every_creation_function():
    assert minidp.bfloat16 == BF16
    made = [
        minidp.to_tensor([1.0, 2.5], dtype="bfloat16"),
        minidp.to_tensor([1.0], dtype=minidp.bfloat16),
        minidp.to_tensor([1.0], dtype="paddle.bfloat16"),
        minidp.zeros([2], "bfloat16"),
        minidp.ones([2], "bfloat16"),
        minidp.full([2], 3.0, "bfloat16"),
        minidp.randn([2], "bfloat16"),
        minidp.arange(0, 3, 1, "bfloat16"),
        minidp.zeros_like(minidp.ones([2]), "bfloat16"),
    ]
    for tensor in made:
        assert tensor.dtype == BF16, tensor
    assert minidp.to_tensor([1.0, 2.5], dtype="bfloat16").numpy().astype(np.float32).tolist() == [1.0, 2.5]


def test_astype_rounds_to_nearest_even_and_widens_exactly():
    values = np.array([1.0, 1.00390625, 1.005859375, -3.3, 1e-3], np.float32)
    narrow = minidp.to_tensor(values).astype("bfloat16")
    assert narrow.dtype == BF16
    np.testing.assert_array_equal(narrow.numpy(), values.astype(BF16))
    wide = narrow.astype("float32")
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide.numpy(), values.astype(BF16).astype(np.float32))


def test_astype_to_and_from_bfloat16_passes_gradients():
    x = minidp.to_tensor(bf16_values(rng, [3]), stop_gradient=False)
    (x.astype("bfloat16") * 2.0).astype("float32").sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    "op",
    [
        lambda x, y: x + y,
        lambda x, y: x - y,
        lambda x, y: x * y,
        lambda x, y: x / y,
        lambda x, y: x * 0.3,
        lambda x, y: 0.3 * x,
        lambda x, y: x + 1.5,
        lambda x, y: 2.0 / y,
        lambda x, y: -x,
        lambda x, y: minidp.tanh(x),
        lambda x, y: minidp.exp(x),
        lambda x, y: x.sum(),
        lambda x, y: x @ y.T,
    ],
    ids=[
        "add",
        "sub",
        "mul",
        "div",
        "mul-float",
        "rmul-float",
        "add-float",
        "rdiv-float",
        "neg",
        "tanh",
        "exp",
        "sum",
        "matmul",
    ],
)
def test_arithmetic_stays_bfloat16_and_equals_float32_rounded(op):
    a, b = bf16_values(rng, [3, 4]), bf16_values(rng, [3, 4]) + 4
    got = op(minidp.to_tensor(a, dtype="bfloat16"), minidp.to_tensor(b, dtype="bfloat16"))
    assert got.dtype == BF16
    wanted = op(minidp.to_tensor(a), minidp.to_tensor(b)).numpy()
    # one bfloat16 rounding of the result, or of the largest term a reduction adds
    scale = max(np.abs(wanted).max(), 1.0)
    np.testing.assert_allclose(got.numpy().astype(np.float32), wanted, rtol=2**-8, atol=2**-7 * scale)


def test_mixing_bfloat16_with_float32_tensors_promotes_elementwise_and_asks_matmul_for_a_cast():
    """Paddle 3.3.1 adds them in float32 and refuses the matmul."""
    assert (minidp.ones([2], "bfloat16") + minidp.ones([2], "float32")).dtype == np.float32
    with pytest.raises(TypeError, match="astype"):
        minidp.matmul(minidp.ones([2, 2], "bfloat16"), minidp.ones([2, 2], "float32"))


def test_linear_forward_and_backward_in_bfloat16_match_float32():
    minidp.seed(3)
    reference = minidp.nn.Linear(16, 8)
    layer = minidp.nn.Linear(16, 8)
    layer.set_state_dict(reference.state_dict())
    layer.to(dtype="bfloat16")
    assert all(p.dtype == BF16 for p in layer.parameters())
    reference.weight.set_value(layer.weight.numpy().astype(np.float32))
    reference.bias.set_value(layer.bias.numpy().astype(np.float32))
    x = bf16_values(rng, [5, 16])
    out = layer(minidp.to_tensor(x, dtype="bfloat16"))
    wanted = reference(minidp.to_tensor(x))
    assert out.dtype == BF16
    np.testing.assert_allclose(out.numpy().astype(np.float32), wanted.numpy(), rtol=2**-7, atol=2**-7)
    out.mean().backward()
    wanted.mean().backward()
    for mine, theirs in zip(layer.parameters(), reference.parameters()):
        assert mine.grad.dtype == BF16
        np.testing.assert_allclose(mine.grad.numpy().astype(np.float32), theirs.grad.numpy(), rtol=2**-7, atol=2**-9)
    layer.to(dtype="float32")
    assert all(p.dtype == np.float32 for p in layer.parameters())
