"""Freed host memory kept for reuse (``minidp/core/host_memory.py``): importing minidp sets glibc's
malloc so that arrays freed by one training step are reused by the next without page faults."""

import ctypes
import resource

import numpy as np
import pytest

import minidp  # noqa: F401  (importing minidp applies the setting)
from minidp.core import host_memory

glibc = hasattr(ctypes.CDLL(None), "gnu_get_libc_version")


@pytest.mark.skipif(not glibc, reason="the setting acts on glibc's malloc only")
def test_a_step_that_frees_and_allocates_its_arrays_again_reuses_their_pages():
    def step():  # three 20 MiB arrays alive at once, freed together, as a step's activations are
        arrays = [np.ones(5 << 20, np.float32) for _ in range(3)]
        return sum(float(a[0]) for a in arrays)

    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # glibc alone hands the 60 MiB back every time: about 15000 faults a step
    assert faults < 5000, f"{faults} page faults in 5 steps"


@pytest.mark.skipif(not glibc, reason="the setting acts on glibc's malloc only")
def test_keep_freed_memory_sets_glibc_and_can_be_turned_off(monkeypatch):
    assert host_memory.keep_freed_memory()
    monkeypatch.setenv("MINIDP_KEEP_HOST_MEMORY", "0")
    assert not host_memory.keep_freed_memory()
