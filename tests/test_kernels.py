"""The CUDA kernels of minidp/kernels, compiled by g++ and run on the CPU, against NumPy.

The launches come from minidp.core.kernels.launch_args, the argument-building code the CuPy path
uses; only the pointers differ (host addresses instead of device ones). float32 and float64
results must match NumPy bit for bit; casts round to nearest even exactly as NumPy does.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy
import pytest

import minidp.core.kernels
from kernel_host import numpy_reference as ref
from kernel_host.runner import run
from minidp.core.kernels import kernel_sources, translation_unit
from minidp.core.kernels.launch_args import (
    COPY_TYPE_PAIRS,
    NAME_EXPRESSIONS,
    KernelLaunch,
    adam_scalars,
    fused_adam_launch,
    launch_shape,
    momentum_launch,
    pack_launch,
    sgd_launch,
    unpack_launch,
)

pytestmark = pytest.mark.timeout(120)

# (block_size, grid_size): the default, one thread for everything, odd shapes, more blocks
# than elements, and the largest block.
LAUNCH_SHAPES = [(None, None), (1, 1), (32, 3), (256, None), (1024, 2), (128, 1000)]
WORLD_SIZES = [1, 2, 3, 8]


def _shape_id(shape: tuple) -> str:
    return f"block{shape[0]}-grid{shape[1]}"


def _dtype(name: str) -> numpy.dtype:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays need ml_dtypes")
        return numpy.dtype(ml_dtypes.bfloat16)
    return numpy.dtype(name)


@pytest.mark.parametrize("shape", LAUNCH_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("case", sorted(ref.SIZE_CASES))
def test_pack_then_unpack_match_numpy_bit_for_bit_fp32(case, shape):
    sizes = ref.SIZE_CASES[case]
    block_size, grid_size = shape
    rng = numpy.random.default_rng(len(sizes) + sum(sizes))
    sources = ref.random_tensors(rng, sizes, numpy.float32)
    offsets, flat_size = ref.padded_offsets(sizes)
    for world_size in WORLD_SIZES:
        scale = 1.0 / world_size
        flat = numpy.full(flat_size, ref.SENTINEL, dtype=numpy.float32)
        expected_flat = ref.pack(sources, flat, offsets, scale)
        run(pack_launch(sources, flat, offsets, scale, block_size=block_size, grid_size=grid_size))
        ref.assert_bits_equal(flat, expected_flat, f"pack, world size {world_size}")

        destinations = [numpy.full_like(source, ref.SENTINEL) for source in sources]
        expected = ref.unpack(flat, destinations, offsets, world_size)
        run(unpack_launch(flat, destinations, offsets, world_size, block_size=block_size, grid_size=grid_size))
        for index, (actual, wanted) in enumerate(zip(destinations, expected)):
            ref.assert_bits_equal(actual, wanted, f"unpack tensor {index}, world size {world_size}")


@pytest.mark.parametrize("pair", COPY_TYPE_PAIRS, ids="->".join)
def test_pack_and_unpack_cast_like_numpy(pair):
    in_dtype, out_dtype = (_dtype(name) for name in pair)
    sizes = ref.SIZE_CASES["random"]
    rng = numpy.random.default_rng(3)
    sources = ref.random_tensors(rng, sizes, in_dtype)
    offsets, flat_size = ref.padded_offsets(sizes)
    flat = numpy.zeros(flat_size, dtype=out_dtype)
    expected_flat = ref.pack(sources, flat, offsets, 1 / 3)
    run(pack_launch(sources, flat, offsets, 1 / 3, block_size=64, grid_size=7))
    ref.assert_bits_equal(flat, expected_flat, f"pack {pair}")

    # Unpack goes the other way: from a flat buffer of the input type to tensors of the output type.
    packed = numpy.concatenate([source.reshape(-1) for source in sources])
    destinations = [numpy.zeros(source.shape, dtype=out_dtype) for source in sources]
    starts = numpy.concatenate([[0], numpy.cumsum(sizes)[:-1]]).tolist()
    expected = ref.unpack(packed, destinations, starts, 0.5)
    run(unpack_launch(packed, destinations, starts, 0.5))
    for index, (actual, wanted) in enumerate(zip(destinations, expected)):
        ref.assert_bits_equal(actual, wanted, f"unpack {pair} tensor {index}")


def _float32_edge_values() -> numpy.ndarray:
    """Float32 values around every rounding boundary of float16 and bfloat16, plus random bits."""
    half_edges = numpy.array(
        [
            0.0,
            -0.0,
            2.0**-25,
            2.0**-24,
            1.5 * 2.0**-24,
            2.0**-14,
            65504.0,
            65519.0,
            65520.0,
            65536.0,
            1e-8,
            3.0e38,
            numpy.inf,
            -numpy.inf,
        ],
        dtype=numpy.float32,
    )
    neighbours = numpy.concatenate(
        [numpy.nextafter(half_edges, numpy.float32(numpy.inf)), numpy.nextafter(half_edges, numpy.float32(-numpy.inf))]
    )
    random_bits = numpy.random.default_rng(5).integers(0, 2**32, 200_000, dtype=numpy.uint64)
    random_values = random_bits.astype(numpy.uint32).view(numpy.float32)
    values = numpy.concatenate([half_edges, neighbours, random_values])
    return values[~numpy.isnan(values)]


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_float32_to_16_bit_rounding_matches_numpy_on_edges_and_random_bits(half):
    values = _float32_edge_values()
    flat = numpy.zeros(values.size, dtype=_dtype(half))
    run(pack_launch([values], flat, [0], 1.0))
    with numpy.errstate(over="ignore"):  # values past the 16-bit range round to infinity
        expected = ref.flush(values).astype(flat.dtype)  # the multiply by 1 flushes subnormals (-ftz=true)
    ref.assert_bits_equal(flat, expected, f"float32 -> {half}")


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_every_16_bit_pattern_widens_to_float32_like_numpy(half):
    patterns = numpy.arange(2**16, dtype=numpy.uint16).view(_dtype(half))
    destination = numpy.zeros(patterns.size, dtype=numpy.float32)
    run(unpack_launch(patterns, [destination], [0], 1.0))
    finite = ~numpy.isnan(destination)
    expected = ref.flush(patterns.astype(numpy.float32))  # bfloat16 subnormals widen to float32 ones
    ref.assert_bits_equal(destination[finite], expected[finite], f"{half} -> float32")
    assert numpy.array_equal(~finite, numpy.isnan(patterns.astype(numpy.float32)))


def test_nan_rounds_to_nan_in_16_bit_types():
    values = numpy.array([numpy.nan, -numpy.nan], dtype=numpy.float32)
    flat = numpy.zeros(2, dtype=numpy.float16)
    run(pack_launch([values], flat, [0], 1.0))
    assert numpy.isnan(flat).all()


# (parameter dtype, state dtype, with float32 master weights) of each optimizer kernel's cases.
ADAM_TYPES = [
    ("float32", "float32", False),
    ("float64", "float64", False),
    ("float16", "float32", False),
    ("bfloat16", "float32", False),
    ("float16", "float32", True),
    ("bfloat16", "float32", True),
]
MOMENTUM_TYPES = ADAM_TYPES + [("float16", "float16", False), ("bfloat16", "bfloat16", False)]
SGD_TYPES = [(name, name, master) for name, _, master in ADAM_TYPES]
OPTIMIZER_SHAPES = [(None, None), (1, 1), (32, 3), (1024, 2)]
OPTIMIZER_SIZES = ["one", "257", "with-empties", "random"]


def _types_id(types: tuple) -> str:
    return f"{types[0]}-{types[1]}" + ("-master" if types[2] else "")


class _OptimizerCase:
    """Tensors of one optimizer launch, and the same tensors stepped by the NumPy reference."""

    def __init__(self, case: str, types: tuple, num_states: int) -> None:
        param_name, state_name, with_master = types
        self.sizes = ref.SIZE_CASES[case]
        self.rng = numpy.random.default_rng(sum(self.sizes) + num_states)
        self.param_dtype = _dtype(param_name)
        start = ref.random_tensors(self.rng, self.sizes, numpy.float32)
        # a master differs from its parameter: the parameter is the master rounded
        self.masters = [m.copy() for m in start] if with_master else None
        self.params = [m.astype(self.param_dtype) for m in start]
        self.states = [[numpy.zeros(p.shape, _dtype(state_name)) for p in self.params] for _ in range(num_states)]
        self.expected = [
            [p.copy() for p in self.params],
            *[[s.copy() for s in table] for table in self.states],
            [m.copy() for m in self.masters] if with_master else [None] * len(start),
        ]

    def grads(self) -> list:
        return ref.random_tensors(self.rng, self.sizes, self.param_dtype)

    def step_reference(self, step, grads: list) -> None:
        """Replace the expected tensors by ``step(param, grad, *states, master) -> new ones``."""
        rows = [step(*row[:1], grad, *row[1:]) for row, grad in zip(zip(*self.expected), grads)]
        self.expected = [list(column) for column in zip(*rows)]

    def check(self, label: str) -> None:
        actual = [self.params, *self.states, self.masters or [None] * len(self.params)]
        for role, (got_table, wanted_table) in enumerate(zip(actual, self.expected)):
            for index, (got, wanted) in enumerate(zip(got_table, wanted_table)):
                if wanted is None:
                    assert got is None
                else:
                    ref.assert_bits_equal(got, wanted, f"{label}, tensor {index}, table {role}")


ADAM_VARIANTS = {
    "adam": dict(weight_decay=0.0, decoupled=False),
    "adam-l2": dict(weight_decay=0.01, decoupled=False),
    "adamw": dict(weight_decay=0.01, decoupled=True),
}


@pytest.mark.parametrize("shape", OPTIMIZER_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("case", OPTIMIZER_SIZES + ["65536"])
@pytest.mark.parametrize("variant", sorted(ADAM_VARIANTS))
@pytest.mark.parametrize("types", ADAM_TYPES, ids=_types_id)
def test_fused_adam_matches_numpy_bit_for_bit_over_three_steps(types, variant, case, shape):
    data = _OptimizerCase(case, types, num_states=2)
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, **ADAM_VARIANTS[variant])
    for step in (1, 2, 3):
        grads = data.grads()
        pows = dict(beta1_pow=hyper["beta1"] ** step, beta2_pow=hyper["beta2"] ** step)
        run(
            fused_adam_launch(
                data.params,
                grads,
                *data.states,
                masters=data.masters,
                **hyper,
                **pows,
                block_size=shape[0],
                grid_size=shape[1],
            )
        )
        data.step_reference(
            lambda p, g, m1, m2, master: ref.adam_step(p, g, m1, m2, master=master, **hyper, **pows), grads
        )
        data.check(f"step {step}")


@pytest.mark.parametrize("shape", OPTIMIZER_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("case", OPTIMIZER_SIZES)
@pytest.mark.parametrize("weight_decay", [0.0, 0.01], ids=["plain", "l2"])
@pytest.mark.parametrize("types", SGD_TYPES, ids=_types_id)
def test_sgd_kernel_matches_numpy_bit_for_bit_over_three_steps(types, weight_decay, case, shape):
    data = _OptimizerCase(case, types, num_states=0)
    for step in (1, 2, 3):
        grads = data.grads()
        run(
            sgd_launch(
                data.params,
                grads,
                masters=data.masters,
                lr=0.1,
                weight_decay=weight_decay,
                block_size=shape[0],
                grid_size=shape[1],
            )
        )
        data.step_reference(
            lambda p, g, master: ref.sgd_step(p, g, lr=0.1, weight_decay=weight_decay, master=master), grads
        )
        data.check(f"step {step}")


@pytest.mark.parametrize("shape", OPTIMIZER_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("case", OPTIMIZER_SIZES)
@pytest.mark.parametrize("nesterov", [False, True], ids=["heavy-ball", "nesterov"])
@pytest.mark.parametrize("types", MOMENTUM_TYPES, ids=_types_id)
def test_momentum_kernel_matches_numpy_bit_for_bit_over_three_steps(types, nesterov, case, shape):
    data = _OptimizerCase(case, types, num_states=1)
    hyper = dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
    for step in (1, 2, 3):
        grads = data.grads()
        run(
            momentum_launch(
                data.params, grads, *data.states, masters=data.masters, **hyper, block_size=shape[0], grid_size=shape[1]
            )
        )
        data.step_reference(lambda p, g, v, master: ref.momentum_step(p, g, v, master=master, **hyper), grads)
        data.check(f"step {step}")


# --- subnormals: CuPy compiles with -ftz=true, which the host runs model ---------------------


def _tiny(rng: numpy.random.Generator, shapes: list, dtype: numpy.dtype) -> list:
    """Arrays of ``shapes`` with values from 1e-44 to 1e-15 in magnitude, either sign: float32
    subnormals, and normal values whose products are subnormal."""
    return [(10.0 ** rng.uniform(-44, -15, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype) for shape in shapes]


def test_float_kernels_flush_subnormals_as_cupys_ftz_does_and_double_kernels_keep_them():
    """Adam's second moment from a gradient of 1e-20: (1 - beta2) * g * g is subnormal in float32,
    which the GPU flushes to 0 (NumPy keeps it); float64 keeps its own subnormals."""
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, beta1_pow=0.9, beta2_pow=0.999, weight_decay=0.0)
    for dtype, gradient in ((numpy.float32, 1e-20), (numpy.float64, 1e-160)):
        param, grad = numpy.ones(4, dtype), numpy.full(4, gradient, dtype)
        moment1, moment2 = numpy.zeros(4, dtype), numpy.zeros(4, dtype)
        run(fused_adam_launch([param], [grad], [moment1], [moment2], **hyper))
        with numpy.errstate(under="ignore"):
            plain = dtype(1 - 0.999) * grad * grad  # NumPy's m2, not flushed
        assert 0 < plain[0] < numpy.finfo(dtype).tiny
        assert (moment2 == 0).all() if dtype == numpy.float32 else (moment2 == plain).all(), moment2
    values = numpy.array([1e-40, -1e-40, 1e-30], numpy.float32)
    flat = numpy.full(3, 7.0, numpy.float32)
    run(pack_launch([values], flat, [0], 1.0))
    ref.assert_bits_equal(flat, numpy.array([0.0, -0.0, 1e-30], numpy.float32), "pack of subnormals")


@pytest.mark.parametrize("types", MOMENTUM_TYPES, ids=_types_id)
def test_optimizer_kernels_match_the_ftz_reference_on_subnormal_data(types):
    """Tiny gradients, parameters and states, three steps of each optimizer: the kernels equal the
    reference that flushes float32 subnormals (:func:`kernel_host.numpy_reference.flush`)."""
    param_name, state_name, with_master = types
    rng = numpy.random.default_rng(3)
    sizes = [(n,) for n in ref.SIZE_CASES["random-small"]]
    param_dtype, state_dtype = _dtype(param_name), _dtype(state_name)
    start = _tiny(rng, sizes, numpy.float32)
    masters = [m.copy() for m in start] if with_master else None
    params = [m.astype(param_dtype) for m in start]
    velocities = [v.astype(state_dtype) for v in _tiny(rng, sizes, numpy.float32)]
    expected = [[p.copy() for p in params], [v.copy() for v in velocities], masters and [m.copy() for m in masters]]
    hyper = dict(lr=0.1, momentum=0.9, weight_decay=1e-30, nesterov=True)
    for step in (1, 2, 3):
        grads = _tiny(rng, sizes, param_dtype)
        run(momentum_launch(params, grads, velocities, masters=masters, **hyper))
        rows = [
            ref.momentum_step(p, g, v, master=None if masters is None else expected[2][i], **hyper)
            for i, (p, g, v) in enumerate(zip(expected[0], grads, expected[1]))
        ]
        expected = [[row[0] for row in rows], [row[1] for row in rows], masters and [row[2] for row in rows]]
        for index in range(len(sizes)):
            ref.assert_bits_equal(params[index], expected[0][index], f"step {step}, parameter {index}")
            ref.assert_bits_equal(velocities[index], expected[1][index], f"step {step}, velocity {index}")
            if masters is not None:
                ref.assert_bits_equal(masters[index], expected[2][index], f"step {step}, master {index}")


@pytest.mark.parametrize("types", ADAM_TYPES, ids=_types_id)
def test_fused_adam_matches_the_ftz_reference_on_subnormal_data(types):
    data = _OptimizerCase("random-small", types, num_states=2)
    data.grads = lambda: _tiny(data.rng, [p.shape for p in data.params], data.param_dtype)
    hyper = dict(lr=1e-30, beta1=0.9, beta2=0.999, epsilon=1e-30, weight_decay=1e-30, decoupled=False)
    for step in (1, 2, 3):
        grads = data.grads()
        pows = dict(beta1_pow=hyper["beta1"] ** step, beta2_pow=hyper["beta2"] ** step)
        run(fused_adam_launch(data.params, grads, *data.states, masters=data.masters, **hyper, **pows))
        data.step_reference(
            lambda p, g, m1, m2, master: ref.adam_step(p, g, m1, m2, master=master, **hyper, **pows), grads
        )
        data.check(f"step {step}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_pack_and_unpack_match_the_ftz_reference_on_subnormal_data(dtype):
    rng = numpy.random.default_rng(9)
    sizes = ref.SIZE_CASES["block-edges"]
    sources = _tiny(rng, [(n,) for n in sizes], _dtype(dtype))
    offsets, size = ref.padded_offsets(sizes)
    flat = numpy.full(size, ref.SENTINEL, numpy.float32 if dtype == "bfloat16" else _dtype(dtype))
    expected = ref.pack(sources, flat, offsets, 0.5)
    run(pack_launch(sources, flat, offsets, 0.5))
    ref.assert_bits_equal(flat, expected, f"pack {dtype}")
    destinations = [numpy.zeros_like(source) for source in sources]
    expected = ref.unpack(flat, destinations, offsets, 3.0)
    run(unpack_launch(flat, destinations, offsets, 3.0))
    for index, (got, wanted) in enumerate(zip(destinations, expected)):
        ref.assert_bits_equal(got, wanted, f"unpack {dtype}, tensor {index}")


def test_adam_scalars_follow_paddles_bias_correction():
    lr_t, eps_hat = adam_scalars(lr=0.1, beta1_pow=0.9**4, beta2_pow=0.999**4, epsilon=1e-8)
    assert lr_t == 0.1 * (1 - 0.999**4) ** 0.5 / (1 - 0.9**4)
    assert eps_hat == 1e-8 * (1 - 0.999**4) ** 0.5


def test_launch_shape_covers_every_element_with_at_least_one_block():
    assert launch_shape(0, None, None) == ((1, 1, 1), (256, 1, 1))
    assert launch_shape(257, None, None) == ((2, 1, 1), (256, 1, 1))
    assert launch_shape(10**9, 512, None) == ((4096, 1, 1), (512, 1, 1))
    assert launch_shape(10, 64, 9) == ((9, 1, 1), (64, 1, 1))


@pytest.mark.parametrize("block_size, grid_size", [(0, None), (1025, None), (64, 0), (2.5, None)])
def test_launch_shape_rejects_impossible_shapes(block_size, grid_size):
    with pytest.raises(ValueError):
        launch_shape(100, block_size, grid_size)


def test_pack_arguments_are_validated():
    a, b = numpy.ones(4, numpy.float32), numpy.ones(3, numpy.float32)
    flat = numpy.zeros(8, numpy.float32)
    with pytest.raises(ValueError, match="offsets"):
        pack_launch([a, b], flat, [0])
    with pytest.raises(ValueError, match="does not fit"):
        pack_launch([a, b], flat, [0, 6])
    with pytest.raises(ValueError, match="does not fit"):
        pack_launch([a], flat, [-1])
    with pytest.raises(ValueError, match="C-contiguous"):
        pack_launch([numpy.ones((4, 4), numpy.float32)[:, 0]], flat, [0])
    with pytest.raises(TypeError, match="mix dtypes"):
        pack_launch([a, b.astype(numpy.float64)], flat, [0, 4])
    with pytest.raises(TypeError, match="no float64 -> float32"):
        pack_launch([a.astype(numpy.float64)], flat, [0])
    with pytest.raises(TypeError, match="int32"):
        unpack_launch(flat, [a.astype(numpy.int32)], [0])


def test_fused_adam_arguments_are_validated():
    p = numpy.ones(4, numpy.float32)
    hyper = dict(lr=0.1, beta1=0.9, beta2=0.99, epsilon=1e-8, beta1_pow=0.9, beta2_pow=0.99)
    with pytest.raises(ValueError, match="one entry per parameter"):
        fused_adam_launch([p], [p], [p], [], **hyper)
    with pytest.raises(ValueError, match="at least one"):
        fused_adam_launch([], [], [], [], **hyper)
    with pytest.raises(ValueError, match="differ in size"):
        fused_adam_launch([p], [numpy.ones(3, numpy.float32)], [p], [p], **hyper)
    with pytest.raises(TypeError, match="one dtype"):
        fused_adam_launch([p], [p.astype(numpy.float64)], [p], [p], **hyper)
    with pytest.raises(TypeError, match="one dtype"):
        half = p.astype(numpy.float16)
        fused_adam_launch([half], [half], [half], [half], **hyper)


def test_optimizer_launch_arguments_are_validated():
    p = numpy.ones(4, numpy.float32)
    bf = p.astype(_dtype("bfloat16"))
    adam = dict(lr=0.1, beta1=0.9, beta2=0.99, epsilon=1e-8, beta1_pow=0.9, beta2_pow=0.99)
    with pytest.raises(TypeError, match="master weights must be float32"):
        sgd_launch([bf], [bf], masters=[bf], lr=0.1)
    with pytest.raises(TypeError, match="params and grads of one dtype"):
        sgd_launch([p], [bf], lr=0.1)
    with pytest.raises(TypeError, match="states of one dtype"):
        momentum_launch([p], [p], [p.astype(numpy.float64)], lr=0.1, momentum=0.9)
    with pytest.raises(TypeError, match="states of one dtype"):
        fused_adam_launch([bf], [bf], [bf], [bf], **adam)  # Adam's moments are float32
    with pytest.raises(ValueError, match="one entry per parameter"):
        sgd_launch([p], [p], masters=[], lr=0.1)
    with pytest.raises(ValueError, match="differ in size"):
        momentum_launch([p], [p], [numpy.ones(3, numpy.float32)], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="at least one"):
        sgd_launch([], [], lr=0.1)


def test_translation_units_inline_the_shared_header():
    for source in kernel_sources():
        unit = translation_unit(source)
        assert '#include "common.cuh"' not in unit
        assert "find_tensor" in unit
    with pytest.raises(ValueError, match="unknown kernel source"):
        translation_unit("missing.cu")


def test_importing_the_kernels_package_does_not_import_cupy():
    code = "import sys, minidp.core.kernels; sys.exit(1 if 'cupy' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def _host_function(source, name, place):
    """Stands in for minidp.core.kernels._function: the kernel runs on the host runner."""
    assert place == "cpu"
    return lambda grid, block, args: run(KernelLaunch(source, name, grid, block, args))


def test_public_wrappers_build_and_launch_the_right_kernels(monkeypatch):
    monkeypatch.setattr(minidp.core.kernels, "_function", _host_function)
    sizes = ref.SIZE_CASES["random-small"]
    grads = ref.random_tensors(numpy.random.default_rng(8), sizes, numpy.float32)
    offsets, flat_size = ref.padded_offsets(sizes)
    flat = numpy.zeros(flat_size, numpy.float16)
    expected_flat = ref.pack(grads, flat, offsets, 0.5)
    minidp.core.kernels.pack(grads, flat, offsets, 0.5)
    ref.assert_bits_equal(flat, expected_flat, "pack")

    destinations = [numpy.zeros_like(g) for g in grads]
    minidp.core.kernels.launch(unpack_launch(flat, destinations, offsets))
    for actual, wanted in zip(destinations, ref.unpack(flat, destinations, offsets, 1.0)):
        ref.assert_bits_equal(actual, wanted, "unpack")

    params = ref.random_tensors(numpy.random.default_rng(9), sizes, numpy.float32)
    moments = [[numpy.zeros_like(p) for p in params] for _ in range(2)]
    hyper = dict(
        lr=0.1, beta1=0.9, beta2=0.99, epsilon=1e-8, beta1_pow=0.9, beta2_pow=0.99, weight_decay=0.1, decoupled=True
    )
    expected = [
        ref.adam_step(p, g, numpy.zeros_like(p), numpy.zeros_like(p), **hyper)[0] for p, g in zip(params, grads)
    ]
    minidp.core.kernels.fused_adam(params, grads, *moments, **hyper)
    for actual, wanted in zip(params, expected):
        ref.assert_bits_equal(actual, wanted, "fused_adam")

    expected = [ref.sgd_step(p, g, lr=0.1, weight_decay=0.01)[0] for p, g in zip(params, grads)]
    minidp.core.kernels.sgd(params, grads, lr=0.1, weight_decay=0.01)
    for actual, wanted in zip(params, expected):
        ref.assert_bits_equal(actual, wanted, "sgd")

    velocities = [numpy.full_like(p, 0.5) for p in params]
    expected = [
        ref.momentum_step(p, g, v, lr=0.1, momentum=0.9, weight_decay=0.0, nesterov=True)
        for p, g, v in zip(params, grads, velocities)
    ]
    minidp.core.kernels.momentum(params, grads, velocities, lr=0.1, momentum=0.9, nesterov=True)
    for actual, velocity, (wanted, wanted_velocity, _) in zip(params, velocities, expected):
        ref.assert_bits_equal(actual, wanted, "momentum")
        ref.assert_bits_equal(velocity, wanted_velocity, "momentum velocity")


def test_host_runner_rejects_arguments_that_do_not_match_the_kernel_signature():
    source = numpy.ones(4, numpy.float32)
    plan = pack_launch([source], numpy.zeros(4, numpy.float32), [0], 0.5)
    scale_as_double = plan.args[:5] + (numpy.float64(0.5),) + plan.args[6:]
    as_double = dataclasses.replace(plan, args=scale_as_double)
    with pytest.raises(TypeError, match="bytes"):
        run(as_double)
    with pytest.raises(TypeError, match="bytes"):
        run(dataclasses.replace(plan, args=plan.args[:-1]))


class _RecordingDevice:
    """Stands in for a cupy.cuda.Device: records which device is current."""

    current = [0]

    def __init__(self, device_id: int) -> None:
        self.id = device_id

    def __enter__(self):
        self.previous = self.current[0]
        self.current[0] = self.id
        return self

    def __exit__(self, *exc) -> None:
        self.current[0] = self.previous


class _DeviceArray:
    """A stand-in for a CuPy array on device ``device_id``."""

    def __init__(self, device_id: int) -> None:
        self.device = _RecordingDevice(device_id)


class _CountingModule:
    """Stands in for cupy.RawModule: counts get_function calls; its kernels record the current
    device when fetched and when called."""

    fetched: list = []
    called: list = []

    def __init__(self, source: str) -> None:
        self.source = source

    def get_function(self, name: str):
        self.fetched.append((self.source, name, _RecordingDevice.current[0]))
        return lambda grid, block, args: self.called.append((name, _RecordingDevice.current[0]))


@pytest.fixture
def counting_module(monkeypatch):
    minidp.core.kernels._function.cache_clear()
    _CountingModule.fetched, _CountingModule.called = [], []
    monkeypatch.setattr(minidp.core.kernels, "_raw_module", _CountingModule)
    yield _CountingModule
    minidp.core.kernels._function.cache_clear()


def test_launch_fetches_each_kernel_once_per_device(counting_module):
    name = NAME_EXPRESSIONS["bucket.cu"][0]
    for device_id in (1, 1, 2, 1):
        minidp.core.kernels.launch(KernelLaunch("bucket.cu", name, (1, 1, 1), (1, 1, 1), (_DeviceArray(device_id),)))
    assert counting_module.fetched == [("bucket.cu", name, 1), ("bucket.cu", name, 2)]
    assert len(counting_module.called) == 4


def test_launch_makes_the_device_of_its_data_current(counting_module):
    name = NAME_EXPRESSIONS["fused_adam.cu"][0]
    assert _RecordingDevice.current == [0]
    minidp.core.kernels.launch(KernelLaunch("fused_adam.cu", name, (1, 1, 1), (1, 1, 1), (_DeviceArray(3),)))
    assert counting_module.called == [(name, 3)]
    assert _RecordingDevice.current == [0], "the previous device is current again"
