"""The kernels launched for real through cupy.RawModule, against NumPy. Needs a CUDA device.

Compiled with --fmad=false, every float32 operation is rounded as in NumPy, so results are
compared bit for bit (the test data holds no subnormals, which CuPy's -ftz=true flushes).
"""
from __future__ import annotations

import numpy
import pytest

from kernel_host import numpy_reference as ref
from minidp import backend, kernels
from minidp.kernels.launch_args import unpack_launch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not backend.is_compiled_with_cuda(),
                       reason="no CUDA device visible to CuPy (no GPU, driver or cupy)"),
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


@pytest.mark.parametrize("pair", [("float32", "float16"), ("float16", "float32"),
                                  ("float64", "float64")], ids="->".join)
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
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, beta1_pow=0.9**5,
                 beta2_pow=0.999**5, weight_decay=0.01, decoupled=decoupled)
    device = [[cupy.asarray(a) for a in table] for table in (params, grads, moment1s, moment2s)]
    kernels.fused_adam(*device, **hyper)
    for index in range(len(sizes)):
        wanted = ref.adam_step(params[index], grads[index], moment1s[index], moment2s[index],
                               **hyper)
        actual = (device[0][index], device[2][index], device[3][index])
        for name, a, w in zip(("param", "moment1", "moment2"), actual, wanted):
            ref.assert_bits_equal(a.get(), w, f"tensor {index}, {name}")
