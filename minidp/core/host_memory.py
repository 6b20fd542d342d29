"""Freed host memory kept for reuse, so that training steps stop page-faulting.

glibc's malloc serves each big request (from 128 KiB, adapting up to 32 MiB) with fresh pages
mapped from the kernel and unmaps them when the array is freed, and returns free memory at the top
of its heap beyond 128 KiB. A training step allocates and frees the same activation, gradient and
column arrays every time, so every step page-faults through all of them again: measured 30% of a
small CNN's step (3x3 convolutions on 32x32 images, batch 32) and 15% of a 3-D CNN's, all of it
kernel time. Serving requests below 32 MiB from the heap, and trimming it only beyond 256 MiB of
free memory, lets each step reuse the memory the last one freed; the peak resident memory stays
what it was.

:func:`keep_freed_memory` runs once when minidp is imported. It changes the allocator of the whole
process, so it acts on glibc only (elsewhere it does nothing) and ``MINIDP_KEEP_HOST_MEMORY=0``
turns it off.
"""

from __future__ import annotations

import ctypes
import os

#: mallopt's parameter numbers (glibc's malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Requests below this come from the heap (glibc's largest mmap threshold on 64-bit systems).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the top of the heap that stays with the process.
TRIM_THRESHOLD = 256 << 20


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds as above; whether they were set (False off glibc, or
    when ``MINIDP_KEEP_HOST_MEMORY`` is 0)."""
    if os.environ.get("MINIDP_KEEP_HOST_MEMORY", "1").strip() == "0":
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
