"""``paddle.device.cuda``: the CUDA device count, synchronisation and the memory cache (CuPy's).

Without CuPy or a device, ``device_count()`` is 0 and ``synchronize``/``empty_cache`` do nothing,
as there is no device work to wait for and no device memory to free.
"""

from typing import Any, Optional

from ..core import backend
from ..core.backend import cuda_device_count as device_count

__all__ = ["device_count", "empty_cache", "synchronize"]


def synchronize(device: Optional[Any] = None) -> None:
    """Wait until the work queued on ``device`` (an index or ``'gpu:N'``; default the current
    CUDA device) is done."""
    if device_count() == 0:
        return
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"gpu:{device}"
    index = None if device is None else int(backend._parse_place(device).split(":")[1])
    backend._cupy().cuda.Device(index).synchronize()


def empty_cache() -> None:
    """Give the CUDA memory that CuPy's pool holds unused back to the driver."""
    if device_count() > 0:
        backend._cupy().get_default_memory_pool().free_all_blocks()
