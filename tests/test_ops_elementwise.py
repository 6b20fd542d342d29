"""Table-defined elementwise ops: values against NumPy, gradients against finite differences
(float64), and Paddle's dtype rules. One line per op."""

import math

import numpy as np
import pytest

import minidp
from gradcheck import check_grad

rng = np.random.default_rng(0)


def r(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def unit(*shape):
    """Inside (-1, 1), away from the ends, for asin/acos/atanh/erfinv."""
    return rng.uniform(-0.8, 0.8, shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def above_one(*shape):
    return rng.uniform(1.2, 3.0, shape)


def probability(*shape):
    return rng.uniform(0.1, 0.9, shape)


def off_integers(*shape):
    """Away from integers and half-integers, where rounding ops jump."""
    return rng.integers(-3, 3, shape) + rng.uniform(0.1, 0.4, shape)


def away_from_zero(*shape):
    return rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def _scipy(name):
    from scipy import special

    return getattr(special, name)


def _erfinv(v):
    return _scipy("erfinv")(v)


def _erf(v):
    return np.vectorize(math.erf)(v)


UNARY = [  # op, reference, input maker
    (minidp.sin, np.sin, r),
    (minidp.cos, np.cos, r),
    (minidp.tan, np.tan, unit),
    (minidp.asin, np.arcsin, unit),
    (minidp.acos, np.arccos, unit),
    (minidp.atan, np.arctan, r),
    (minidp.sinh, np.sinh, r),
    (minidp.cosh, np.cosh, r),
    (minidp.tanh, np.tanh, r),
    (minidp.asinh, np.arcsinh, r),
    (minidp.acosh, np.arccosh, above_one),
    (minidp.atanh, np.arctanh, unit),
    (minidp.exp, np.exp, r),
    (minidp.expm1, np.expm1, r),
    (minidp.log, np.log, positive),
    (minidp.log2, np.log2, positive),
    (minidp.log10, np.log10, positive),
    (minidp.log1p, np.log1p, positive),
    (minidp.sqrt, np.sqrt, positive),
    (minidp.rsqrt, lambda v: 1 / np.sqrt(v), positive),
    (minidp.square, np.square, r),
    (minidp.reciprocal, np.reciprocal, away_from_zero),
    (minidp.erf, _erf, r),
    (minidp.erfinv, _erfinv, unit),
    (minidp.lgamma, lambda v: _scipy("gammaln")(v), lambda *s: rng.uniform(0.2, 5.0, s)),
    (minidp.lgamma, lambda v: _scipy("gammaln")(v), lambda *s: rng.uniform(-2.9, -2.1, s)),
    (minidp.digamma, lambda v: _scipy("digamma")(v), lambda *s: rng.uniform(0.2, 5.0, s)),
    (minidp.digamma, lambda v: _scipy("digamma")(v), lambda *s: rng.uniform(-1.9, -1.1, s)),
    (minidp.sigmoid, lambda v: 1 / (1 + np.exp(-v)), r),
    (minidp.relu, lambda v: np.maximum(v, 0), away_from_zero),
    (minidp.floor, np.floor, off_integers),
    (minidp.ceil, np.ceil, off_integers),
    (minidp.trunc, np.trunc, off_integers),
    (minidp.round, np.round, off_integers),
    (minidp.frac, lambda v: v - np.trunc(v), off_integers),
    (minidp.sign, np.sign, away_from_zero),
    (minidp.sgn, np.sign, away_from_zero),
    (minidp.abs, np.abs, away_from_zero),
    (minidp.neg, np.negative, r),
    (minidp.deg2rad, np.deg2rad, r),
    (minidp.rad2deg, np.rad2deg, r),
    (minidp.logit, lambda v: np.log(v / (1 - v)), probability),
    (
        lambda x: minidp.logit(x, eps=0.2),
        lambda v: np.log(np.clip(v, 0.2, 0.8) / (1 - np.clip(v, 0.2, 0.8))),
        lambda *s: np.concatenate([rng.uniform(0.05, 0.15, s), rng.uniform(0.25, 0.75, s)]),
    ),
    (minidp.stanh, lambda v: 1.7159 * np.tanh(0.67 * v), r),
    (lambda x: minidp.stanh(x, 2.0, 0.5), lambda v: 0.5 * np.tanh(2.0 * v), r),
    (lambda x: minidp.round(x, decimals=1), lambda v: np.round(v, 1), lambda *s: rng.integers(-30, 30, s) / 10 + 0.02),
    (minidp.sinc, np.sinc, r),
    (minidp.positive, lambda v: v, r),
    (
        lambda x: minidp.nan_to_num(minidp.log(x), nan=-1.0, posinf=9.0),
        lambda v: np.nan_to_num(np.log(v), nan=-1.0),
        positive,
    ),
]


@pytest.mark.parametrize("op, reference, make", UNARY)
def test_unary_values_and_gradients(op, reference, make):
    values = make(2, 3)
    np.testing.assert_allclose(op(minidp.to_tensor(values)).numpy(), reference(values), rtol=1e-10, atol=1e-12)
    check_grad(op, values)


BINARY = [  # op, reference, x maker, y maker
    (minidp.atan2, np.arctan2, r, away_from_zero),
    (minidp.hypot, np.hypot, away_from_zero, away_from_zero),
    (minidp.logaddexp, np.logaddexp, r, r),
    (minidp.fmax, np.fmax, r, r),
    (minidp.fmin, np.fmin, r, r),
    (minidp.copysign, np.copysign, away_from_zero, away_from_zero),
    (minidp.heaviside, np.heaviside, away_from_zero, r),
    (minidp.remainder, np.mod, lambda *s: rng.uniform(0.5, 6.0, s), lambda *s: rng.choice([-2.3, 1.7], s)),
    (lambda x, y: minidp.lerp(x, y, 0.3), lambda a, b: a + 0.3 * (b - a), r, r),
    (minidp.ldexp, lambda a, b: a * 2.0**b, r, r),
    (
        lambda x, y: minidp.lerp(x, y, minidp.to_tensor(np.full((1, 3), 0.7), x.dtype)),
        lambda a, b: a + 0.7 * (b - a),
        r,
        r,
    ),
]


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3))])
@pytest.mark.parametrize("op, reference, make_x, make_y", BINARY)
def test_binary_values_and_gradients(op, reference, make_x, make_y, shapes):
    xs, ys = make_x(*shapes[0]), make_y(*shapes[1])
    got = op(minidp.to_tensor(xs), minidp.to_tensor(ys)).numpy()
    np.testing.assert_allclose(got, reference(xs, ys), rtol=1e-10, atol=1e-12)
    check_grad(op, xs, ys)


def test_addmm_matches_formula_and_gradients():
    i, a, b = r(2, 4), r(2, 3), r(3, 4)
    got = minidp.addmm(minidp.to_tensor(i), minidp.to_tensor(a), minidp.to_tensor(b), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(got.numpy(), 0.5 * i + 2.0 * a @ b)
    check_grad(lambda p, q, s: minidp.addmm(p, q, s, beta=0.5, alpha=2.0), i, a, b)


def test_fmax_fmin_ignore_nan_and_ties_go_to_x():
    x = minidp.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = minidp.to_tensor([1.0, 5.0, np.nan], stop_gradient=False)
    out = minidp.fmax(x, y)
    np.testing.assert_array_equal(out.numpy(), [1.0, 5.0, 3.0])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(minidp.fmin(x, y).numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("op", [minidp.floor, minidp.ceil, minidp.trunc, minidp.round, minidp.sign])
def test_piecewise_constant_ops_send_zero_gradient(op):
    x = minidp.to_tensor([1.5, -2.5], stop_gradient=False)
    op(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_float_functions_compute_integers_in_float32_and_keep_ops_keep_the_dtype():
    ints = minidp.to_tensor([1, 2, 3], "int64")
    for op in (minidp.exp, minidp.sqrt, minidp.sin, minidp.log, minidp.erf, minidp.sigmoid, minidp.deg2rad):
        assert op(ints).dtype == np.float32, op.__name__
    for op in (minidp.abs, minidp.neg, minidp.square, minidp.floor, minidp.sign, minidp.round):
        assert op(ints).dtype == np.int64, op.__name__
    np.testing.assert_array_equal(minidp.square(ints).numpy(), [1, 4, 9])
    assert minidp.hypot(ints, ints).dtype == np.float32
    assert minidp.remainder(ints, minidp.to_tensor([2, 2, 2], "int64")).numpy().tolist() == [1, 0, 1]


def test_bad_inputs_raise_type_errors_that_say_what_to_do():
    with pytest.raises(TypeError, match="to_tensor"):
        minidp.exp([1.0, 2.0])
    with pytest.raises(TypeError, match="bool"):
        minidp.sqrt(minidp.to_tensor([True]))
    with pytest.raises(TypeError, match="an operand must be"):
        minidp.add(minidp.ones([2]), "1")


def test_operands_of_different_dtypes_promote_as_in_paddle():
    """Result dtypes recorded from Paddle 3.3.1: two floating dtypes meet at the wider one
    (float16 with bfloat16 at float32)."""
    f32, f64 = minidp.ones([2], "float32"), minidp.to_tensor(np.ones(2))
    f16, bf16 = minidp.ones([2], "float16"), minidp.ones([2], "bfloat16")
    cases = [
        (f32 * f64, "float64"),
        (f16 + bf16, "float32"),
        (f16 - f32, "float32"),
        (bf16 / f64, "float64"),
        (minidp.atan2(f32, f64), "float64"),
        (minidp.maximum(f32, f64), "float64"),
    ]
    assert [str(out.dtype) for out, _ in cases] == [dtype for _, dtype in cases]
    f32.stop_gradient = f64.stop_gradient = False
    (f32 - 2 * f64).sum().backward()
    assert f32.grad.dtype == np.float32 and f64.grad.dtype == np.float64
    np.testing.assert_array_equal(f64.grad.numpy(), [-2.0, -2.0])


def test_numpy_scalars_and_arrays_meet_a_tensor_as_in_paddle():
    """Paddle 3.3.1: a NumPy scalar counts as the Python number it holds (a float32 tensor times
    np.float64(0.5) stays float32), and NumPy operands on the left give a tensor in the graph."""
    f32, i32 = minidp.ones([2], "float32"), minidp.ones([2], "int32")
    f32.stop_gradient = False
    cases = [
        (f32 * np.float64(0.5), "float32"),
        (np.float64(0.5) * f32, "float32"),
        (i32 + np.float64(1.5), "float32"),
        (np.int64(2) * minidp.ones([2], "float16"), "float16"),
        (i32 - np.int64(1), "int32"),
        (np.ones(2) * f32, "float64"),
    ]
    assert [str(out.dtype) for out, _ in cases] == [dtype for _, dtype in cases]
    assert all(isinstance(out, minidp.Tensor) for out, _ in cases)
    (np.float64(3.0) * f32 + np.ones(2, "float32") - f32).sum().backward()
    np.testing.assert_array_equal(f32.grad.numpy(), [2.0, 2.0])


def test_floor_divide_and_remainder_follow_python_signs():
    x = minidp.to_tensor([7.0, -7.0, 7.0])
    y = minidp.to_tensor([2.0, 2.0, -2.0])
    np.testing.assert_array_equal(minidp.floor_divide(x, y).numpy(), [3.0, -4.0, -4.0])
    np.testing.assert_array_equal(minidp.remainder(x, y).numpy(), [1.0, 1.0, -1.0])
    assert minidp.mod is minidp.remainder and minidp.floor_mod is minidp.remainder
    assert minidp.floor_divide(minidp.to_tensor([7], "int64"), 2).numpy().tolist() == [3]


def test_bitwise_ops():
    a = minidp.to_tensor([12, -8], "int32")
    b = minidp.to_tensor([10, 1], "int32")
    assert minidp.bitwise_and(a, b).numpy().tolist() == [8, 0]
    assert minidp.bitwise_or(a, b).numpy().tolist() == [14, -7]
    assert minidp.bitwise_xor(a, b).numpy().tolist() == [6, -7]
    assert minidp.bitwise_not(a).numpy().tolist() == [-13, 7]
    assert minidp.bitwise_left_shift(a, b).numpy().tolist() == [12288, -16]
    assert minidp.bitwise_right_shift(a, b).numpy().tolist() == [0, -4]
    assert minidp.bitwise_right_shift(a, b, is_arithmetic=False).numpy().tolist() == [0, 2147483644]
    flags = minidp.to_tensor([True, False])
    assert minidp.bitwise_and(flags, minidp.to_tensor([True, True])).numpy().tolist() == [True, False]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # acosh, atanh... outside their domain: only dtypes matter
@pytest.mark.parametrize("op", [entry[0] for entry in UNARY] + [entry[0] for entry in BINARY])
def test_float32_inputs_send_float32_gradients(op):
    binary = op in [entry[0] for entry in BINARY]
    x = minidp.to_tensor(rng.uniform(0.2, 0.7, (2, 3)).astype(np.float32), stop_gradient=False)
    middle = x * 1.0
    seen = []
    middle.register_hook(lambda g: seen.append(g.dtype))
    out = op(middle, middle * 0.5) if binary else op(middle)
    assert out.dtype == np.float32
    out.sum().backward()
    assert set(seen) == {np.dtype(np.float32)}


def test_special_functions_without_scipy_match_scipy():
    from minidp.ops import special

    x = np.concatenate([np.linspace(-4.7, -0.1, 40), np.linspace(0.05, 30.0, 120)])
    for own, reference in [
        (special._digamma_by_series, _scipy("digamma")),
        (special._trigamma_by_series, lambda v: _scipy("polygamma")(1, v)),
        (special._lgamma_from_math, _scipy("gammaln")),
    ]:
        np.testing.assert_allclose(own(x), reference(x), rtol=1e-9, atol=1e-12)
    inside = np.linspace(-0.999, 0.999, 101)
    np.testing.assert_allclose(special._erfinv_by_newton(inside), _scipy("erfinv")(inside), rtol=1e-12, atol=1e-14)
    assert special._lgamma_from_math(np.array([0.0, -2.0])).tolist() == [np.inf, np.inf]


def test_aliases_are_the_same_functions():
    pairs = [
        ("clamp", "clip"),
        ("div", "divide"),
        ("true_divide", "divide"),
        ("mul", "multiply"),
        ("sub", "subtract"),
        ("eq", "equal"),
        ("ne", "not_equal"),
        ("lt", "less_than"),
        ("less", "less_than"),
        ("le", "less_equal"),
        ("gt", "greater_than"),
        ("greater", "greater_than"),
        ("ge", "greater_equal"),
        ("negative", "neg"),
        ("gammaln", "lgamma"),
        ("sgn", "sign"),
    ]
    for alias, name in pairs:
        assert getattr(minidp, alias) is getattr(minidp, name), alias


def test_integer_and_float_bit_helpers():
    a, b = minidp.to_tensor([12, -8, 0]), minidp.to_tensor([8, 12, 5])
    assert minidp.gcd(a, b).numpy().tolist() == [4, 4, 5]
    assert minidp.lcm(a, b).numpy().tolist() == [24, 24, 0]
    assert minidp.signbit(minidp.to_tensor([-0.0, 1.0, -2.0])).numpy().tolist() == [True, False, True]
    assert minidp.nextafter(
        minidp.to_tensor([1.0], "float32"), minidp.to_tensor([2.0], "float32")
    ).item() == np.nextafter(np.float32(1), np.float32(2))
    mantissa, exponent = minidp.frexp(minidp.to_tensor([8.0, 3.0]))
    assert mantissa.numpy().tolist() == [0.5, 0.75] and exponent.numpy().tolist() == [4.0, 2.0]
    assert exponent.dtype == np.float32
    assert minidp.ldexp(minidp.to_tensor([1, 2]), minidp.to_tensor([2, 3])).dtype == np.float32
    floats, ints = minidp.ones([1]), minidp.to_tensor([1])
    assert minidp.is_floating_point(floats) and not minidp.is_floating_point(ints)
    assert minidp.is_integer(ints) and not minidp.is_integer(minidp.to_tensor([True]))
    assert not minidp.is_complex(floats)


def test_add_n_and_increment():
    parts = [minidp.to_tensor(r(2, 3)) for _ in range(3)]
    np.testing.assert_allclose(minidp.add_n(parts).numpy(), sum(p.numpy() for p in parts))
    check_grad(lambda a, b: minidp.add_n([a, b, a]), r(2, 3), r(2, 3))
    counter = minidp.to_tensor([1.0])
    assert minidp.increment(counter, 2.0) is counter and counter.item() == 3.0
    with pytest.raises(ValueError, match="one element"):
        minidp.increment(minidp.ones([2]))


@pytest.mark.parametrize("op", [minidp.maximum, minidp.minimum])
def test_ties_split_the_gradient_as_paddle_does_and_nan_propagates(op):
    x = minidp.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = minidp.to_tensor([1.0, 0.0, 5.0], stop_gradient=False)
    op(x, y).sum().backward()
    chosen_x = [0.5, 1.0, 0.0] if op is minidp.maximum else [0.5, 0.0, 1.0]
    np.testing.assert_array_equal(x.grad.numpy(), chosen_x)
    np.testing.assert_array_equal(y.grad.numpy(), 1.0 - np.array(chosen_x))
    assert np.isnan(op(minidp.to_tensor([np.nan]), minidp.to_tensor([1.0])).item())
