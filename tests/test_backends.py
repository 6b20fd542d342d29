"""The backend table and the one rule that chooses a job's backend (launchers and init_parallel_env)."""

import pytest

import minidp.core.backend
from minidp.core.distributed import backends
from minidp.core.distributed.backends import choose_backend


def test_auto_is_gloo_on_a_cpu_without_an_mpi_launcher(monkeypatch):
    monkeypatch.setattr(minidp.core.backend, "is_compiled_with_cuda", lambda: False)
    assert choose_backend("auto") == choose_backend("") == choose_backend(" AUTO ") == "gloo"


def test_auto_is_nccl_when_gpus_are_asked_for_or_seen(monkeypatch):
    monkeypatch.setattr(minidp.core.backend, "is_compiled_with_cuda", lambda: False)
    assert choose_backend("auto", gpus_requested=True) == "nccl"
    monkeypatch.setattr(minidp.core.backend, "is_compiled_with_cuda", lambda: True)
    assert choose_backend("auto", launched_by_mpi=True) == "nccl"


def test_auto_is_mpi_under_an_mpi_launcher_when_mpi4py_imports(monkeypatch):
    monkeypatch.setattr(minidp.core.backend, "is_compiled_with_cuda", lambda: False)
    monkeypatch.setattr(backends, "mpi4py_available", lambda: True)
    assert choose_backend("auto", launched_by_mpi=True) == "mpi"
    monkeypatch.setattr(backends, "mpi4py_available", lambda: False)
    assert choose_backend("auto", launched_by_mpi=True) == "gloo"


def test_a_named_backend_is_checked_and_kept():
    assert choose_backend("GLOO") == "gloo" and choose_backend("nccl") == "nccl"
    with pytest.raises(ValueError, match="unknown communication backend 'carrier-pigeon'"):
        choose_backend("carrier-pigeon")
    with pytest.raises(TypeError, match="backend must be a string"):
        choose_backend(None)
