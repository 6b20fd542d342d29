"""``paddle.device``: where new tensors live, under the module path scripts reach it by.

``minidp.device.set_device('gpu:0')`` is ``minidp.set_device``; ``device_count`` counts the CUDA
devices CuPy sees (0 on a machine without them); :mod:`minidp.device.cuda` holds the
``paddle.device.cuda`` functions training scripts call.
"""

from ..core.backend import get_device, is_compiled_with_cuda, set_device
from ..core.backend import cuda_device_count as device_count
from . import cuda

__all__ = ["cuda", "device_count", "get_device", "is_compiled_with_cuda", "set_device"]
