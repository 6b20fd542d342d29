"""minidp.device (Paddle's ``paddle.device``): the place functions under the path scripts use."""

import pytest

import minidp

needs_cuda = pytest.mark.skipif(
    not minidp.is_compiled_with_cuda(), reason="no CUDA device visible to CuPy (no GPU, driver or cupy)"
)


def test_device_namespace_is_the_top_level_place_functions():
    assert minidp.device.set_device is minidp.set_device and minidp.device.get_device is minidp.get_device
    assert minidp.device.set_device("cpu") == "cpu" and minidp.device.get_device() == "cpu"
    assert minidp.device.device_count() == minidp.device.cuda.device_count()
    assert minidp.device.is_compiled_with_cuda() == (minidp.device.cuda.device_count() > 0)


@pytest.mark.skipif(minidp.is_compiled_with_cuda(), reason="checks the machine without a CUDA device")
def test_cuda_functions_do_nothing_without_a_device():
    assert minidp.device.cuda.synchronize() is None and minidp.device.cuda.synchronize(0) is None
    assert minidp.device.cuda.empty_cache() is None


@pytest.mark.gpu
@needs_cuda
def test_cuda_functions_wait_for_and_free_device_memory():
    import cupy

    pool = cupy.get_default_memory_pool()
    array = cupy.ones(1 << 20)
    minidp.device.cuda.synchronize("gpu:0")
    del array
    minidp.device.cuda.empty_cache()
    assert pool.free_bytes() == 0
