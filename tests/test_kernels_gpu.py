"""The kernels launched for real through cupy.RawModule, against NumPy. Needs a CUDA device.

Compiled with --fmad=false, every float32 operation is rounded as in NumPy, so results are
compared bit for bit. CuPy adds -ftz=true to every compile, so float32 operations flush
subnormals to zero: the NumPy reference models that (``numpy_reference.flush``), and one test
feeds subnormal data to check that the model is the GPU's behaviour.
"""

from __future__ import annotations

import ml_dtypes
import numpy
import pytest

from kernel_host import numpy_reference as ref
from minidp.core import backend, kernels
from minidp.core.kernels import launch_args
from minidp.core.kernels.launch_args import unpack_launch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not backend.is_compiled_with_cuda(), reason="no CUDA device visible to CuPy (no GPU, driver or cupy)"
    ),
]


@pytest.fixture(scope="module")
def cupy():
    import cupy

    return cupy


@pytest.mark.parametrize("case", sorted(ref.SIZE_CASES))
@pytest.mark.parametrize("world_size", [1, 3, 8])
def test_pack_and_unpack_on_device_match_numpy(cupy, case, world_size):
    sizes = ref.SIZE_CASES[case]
    sources = ref.random_tensors(numpy.random.default_rng(1), sizes, numpy.float32)
    offsets, flat_size = ref.padded_offsets(sizes)
    flat = numpy.full(flat_size, ref.SENTINEL, dtype=numpy.float32)
    expected_flat = ref.pack(sources, flat, offsets, 1 / world_size)
    device_flat = cupy.asarray(flat)
    kernels.pack([cupy.asarray(s) for s in sources], device_flat, offsets, 1 / world_size)
    ref.assert_bits_equal(device_flat.get(), expected_flat, "pack")

    destinations = [cupy.zeros(s.shape, dtype=numpy.float32) for s in sources]
    kernels.launch(unpack_launch(device_flat, destinations, offsets, world_size))
    host_destinations = [numpy.zeros_like(s) for s in sources]
    expected = ref.unpack(expected_flat, host_destinations, offsets, world_size)
    for index, (actual, wanted) in enumerate(zip(destinations, expected)):
        ref.assert_bits_equal(actual.get(), wanted, f"unpack tensor {index}")


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64], ids=["fp32", "fp64"])
def test_subnormals_on_device_follow_the_ftz_reference(cupy, dtype):
    """float32 subnormals (inputs and products) flush to zero under CuPy's -ftz=true; float64's stay."""
    values = numpy.array([1e-40, -1e-40, 1e-20, 1e-300, -1e-310, 1.0], dtype)
    flat = numpy.zeros(values.size, dtype)
    expected = ref.pack([values], flat, [0], 1e-20)
    device_flat = cupy.asarray(flat)
    kernels.pack([cupy.asarray(values)], device_flat, [0], 1e-20)
    ref.assert_bits_equal(device_flat.get(), expected, "pack of subnormals")
    assert (expected[:3] == 0).all() if dtype == numpy.float32 else (expected[:3] != 0).all()


@pytest.mark.parametrize(
    "pair", [("float32", "float16"), ("float16", "float32"), ("float64", "float64")], ids="->".join
)
def test_casting_pack_on_device_matches_numpy(cupy, pair):
    in_dtype, out_dtype = (numpy.dtype(name) for name in pair)
    sizes = ref.SIZE_CASES["random"]
    sources = ref.random_tensors(numpy.random.default_rng(2), sizes, in_dtype)
    offsets, flat_size = ref.padded_offsets(sizes)
    flat = numpy.zeros(flat_size, dtype=out_dtype)
    expected = ref.pack(sources, flat, offsets, 0.25)
    device_flat = cupy.asarray(flat)
    kernels.pack([cupy.asarray(s) for s in sources], device_flat, offsets, 0.25)
    ref.assert_bits_equal(device_flat.get(), expected, f"pack {pair}")


@pytest.mark.parametrize("decoupled", [False, True], ids=["adam-l2", "adamw"])
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64], ids=["fp32", "fp64"])
def test_fused_adam_on_device_matches_numpy(cupy, dtype, decoupled):
    sizes = ref.SIZE_CASES["random"]
    rng = numpy.random.default_rng(4)
    params = ref.random_tensors(rng, sizes, dtype)
    grads = ref.random_tensors(rng, sizes, dtype)
    moment1s = [numpy.full_like(p, 0.1) for p in params]
    moment2s = [numpy.full_like(p, 0.2) for p in params]
    hyper = dict(
        lr=0.01,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        beta1_pow=0.9**5,
        beta2_pow=0.999**5,
        weight_decay=0.01,
        decoupled=decoupled,
    )
    device = [[cupy.asarray(a) for a in table] for table in (params, grads, moment1s, moment2s)]
    kernels.fused_adam(*device, **hyper)
    for index in range(len(sizes)):
        wanted = ref.adam_step(params[index], grads[index], moment1s[index], moment2s[index], **hyper)
        actual = (device[0][index], device[2][index], device[3][index])
        for name, a, w in zip(("param", "moment1", "moment2"), actual, wanted):
            ref.assert_bits_equal(a.get(), w, f"tensor {index}, {name}")


def _bfloat16_case(rng, sizes):
    """bfloat16 parameters and gradients with float32 master weights (the parameters rounded)."""
    bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
    masters = ref.random_tensors(rng, sizes, numpy.float32)
    grads = [g.astype(bfloat16) for g in ref.random_tensors(rng, sizes, numpy.float32)]
    return [m.astype(bfloat16) for m in masters], grads, masters


def test_bfloat16_adam_with_master_weights_on_device_matches_numpy(cupy):
    params, grads, masters = _bfloat16_case(numpy.random.default_rng(6), ref.SIZE_CASES["random"])
    moments = [[numpy.full(p.shape, 0.1, numpy.float32) for p in params] for _ in range(2)]
    hyper = dict(
        lr=0.01,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        beta1_pow=0.9**2,
        beta2_pow=0.999**2,
        weight_decay=0.01,
        decoupled=True,
    )
    device = [[cupy.asarray(a) for a in table] for table in (params, grads, masters, *moments)]
    kernels.fused_adam(device[0], device[1], device[3], device[4], masters=device[2], **hyper)
    for index, row in enumerate(zip(params, grads, *moments, masters)):
        wanted = ref.adam_step(*row[:4], master=row[4], **hyper)
        for name, table, w in zip(("param", "moment1", "moment2", "master"), (0, 3, 4, 2), wanted):
            ref.assert_bits_equal(device[table][index].get(), w, f"tensor {index}, {name}")


@pytest.mark.parametrize("nesterov", [False, True], ids=["heavy-ball", "nesterov"])
def test_sgd_and_momentum_on_device_match_numpy(cupy, nesterov):
    rng = numpy.random.default_rng(7)
    sizes = ref.SIZE_CASES["random"]
    params, grads, masters = _bfloat16_case(rng, sizes)
    device = [[cupy.asarray(a) for a in table] for table in (params, grads, masters)]
    kernels.sgd(device[0], device[1], masters=device[2], lr=0.1, weight_decay=0.01)
    for index, (p, g, m) in enumerate(zip(params, grads, masters)):
        wanted_param, wanted_master = ref.sgd_step(p, g, lr=0.1, weight_decay=0.01, master=m)
        ref.assert_bits_equal(device[0][index].get(), wanted_param, f"sgd param {index}")
        ref.assert_bits_equal(device[2][index].get(), wanted_master, f"sgd master {index}")

    params = ref.random_tensors(rng, sizes, numpy.float32)
    grads = ref.random_tensors(rng, sizes, numpy.float32)
    velocities = [numpy.full_like(p, 0.5) for p in params]
    device = [[cupy.asarray(a) for a in table] for table in (params, grads, velocities)]
    kernels.momentum(device[0], device[1], device[2], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
    for index, (p, g, v) in enumerate(zip(params, grads, velocities)):
        wanted = ref.momentum_step(p, g, v, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
        ref.assert_bits_equal(device[0][index].get(), wanted[0], f"momentum param {index}")
        ref.assert_bits_equal(device[2][index].get(), wanted[1], f"momentum velocity {index}")


def test_each_kernel_is_fetched_once(cupy, monkeypatch):
    kernels._function.cache_clear()
    fetched = []
    real = kernels._raw_module

    class Counting:
        def __init__(self, source):
            self.module = real(source)

        def get_function(self, name):
            fetched.append(name)
            return self.module.get_function(name)

    monkeypatch.setattr(kernels, "_raw_module", Counting)
    flat = cupy.zeros(8, numpy.float32)
    for _ in range(3):
        kernels.pack([cupy.ones(4, numpy.float32)], flat, [2], 0.5)
    assert fetched == ["minidp_pack<float, float>"]
    kernels._function.cache_clear()


@pytest.mark.skipif(backend.cuda_device_count() < 2, reason="needs two GPUs")
def test_kernels_run_on_the_device_of_their_data(cupy):
    params = ref.random_tensors(numpy.random.default_rng(8), [5, 300], numpy.float32)
    with cupy.cuda.Device(1):
        device = [cupy.asarray(p) for p in params]
        grads = [cupy.ones_like(p) for p in device]
    with cupy.cuda.Device(0):
        plan = launch_args.sgd_launch(device, grads, lr=0.5)
        assert all(arg.device.id == 1 for arg in plan.args if isinstance(arg, cupy.ndarray))
        kernels.launch(plan)
        assert cupy.cuda.Device().id == 0
    for actual, start in zip(device, params):
        ref.assert_bits_equal(actual.get(), start - numpy.float32(0.5), "sgd on device 1")
