"""Run minidp's CUDA kernels on the CPU: g++ builds each ``.cu`` source with cuda_host.h.

A launch built by :mod:`minidp.core.kernels.launch_args` from NumPy arrays (so its pointer tables
hold host addresses) is executed by the generated entry point of its kernel, which walks
every block and thread of the grid, flushing subnormals in float kernels as CuPy's -ftz=true
makes the GPU do (see cuda_host.h). Libraries are cached under the temp directory, keyed by
a hash of everything that goes into them, so a test session compiles each source once.

``MINIDP_KERNEL_HOST_SANITIZE=1`` selects a build with ``-fsanitize=address,undefined``;
the process must then have the sanitizer runtimes preloaded (see tools/kernels_sanitize.py).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy

from minidp.core.kernels import translation_unit
from minidp.core.kernels.launch_args import NAME_EXPRESSIONS, KernelLaunch

HEADER = Path(__file__).resolve().with_name("cuda_host.h")
COMPILER = os.environ.get("CXX", "g++")
# -ffp-contract=off: every multiply and add rounded on its own, as in NumPy and in the
# kernels' GPU build (--fmad=false).
BASE_FLAGS = ("-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror")
OPTIMISED_FLAGS = ("-O2",)
SANITIZER_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
SANITIZE_ENV = "MINIDP_KERNEL_HOST_SANITIZE"

_SCALAR_CTYPES = {
    numpy.dtype(numpy.float32): ctypes.c_float,
    numpy.dtype(numpy.float64): ctypes.c_double,
    numpy.dtype(numpy.int32): ctypes.c_int32,
    numpy.dtype(numpy.int64): ctypes.c_int64,
}


def sanitizing() -> bool:
    """Whether this process runs the kernels in their sanitizer build."""
    return os.environ.get(SANITIZE_ENV) == "1"


def flushes_subnormals(name: str) -> bool:
    """Whether kernel ``name`` (a name expression) flushes subnormals on the GPU: CuPy compiles with
    -ftz=true, which affects float operations only, and a kernel computes in double exactly when
    one of its template arguments is double (``Arithmetic`` in common.cuh)."""
    return "double" not in name


def _entry_points(index: int, name: str) -> str:
    flush = "true" if flushes_subnormals(name) else "false"
    return (
        f'extern "C" void minidp_host_launch_{index}(const unsigned int* grid,\n'
        f"        const unsigned int* block, void** args) {{\n"
        f"    minidp_host::launch(&{name}, grid, block, args, {flush});\n}}\n"
        f'extern "C" int minidp_host_signature_{index}(unsigned long long* sizes,\n'
        f"        int capacity) {{\n"
        f"    return minidp_host::signature(&{name}, sizes, capacity);\n}}\n"
    )


def runner_source(source: str) -> str:
    """C++ that includes the kernel translation unit and exports, per kernel, a launcher and
    the byte sizes of its parameters."""
    names = NAME_EXPRESSIONS[source]
    exports = "\n".join(_entry_points(index, name) for index, name in enumerate(names))
    return f'#include "cuda_host.h"\n#include "kernel.cu"\n\n{exports}'


def _compiler_version() -> str:
    result = subprocess.run([COMPILER, "--version"], capture_output=True, text=True, timeout=60)
    return result.stdout


def build(source: str, sanitize: bool) -> Path:
    """Compile ``source`` for the host (or reuse the cached library); return the .so path."""
    flags = BASE_FLAGS + (SANITIZER_FLAGS if sanitize else OPTIMISED_FLAGS)
    unit = translation_unit(source)
    wrapper = runner_source(source)
    key = hashlib.sha256(
        "\0".join((unit, HEADER.read_text(encoding="utf-8"), wrapper, " ".join(flags), _compiler_version())).encode()
    ).hexdigest()[:24]
    directory = Path(tempfile.gettempdir()) / "minidp_kernel_host" / key
    library = directory / f"{Path(source).stem}.so"
    if library.exists():
        return library
    directory.mkdir(parents=True, exist_ok=True)
    # Each build works in its own folder; only the finished library is shared, renamed into
    # place atomically, so concurrent test processes never see a partial file.
    with tempfile.TemporaryDirectory(dir=directory) as work:
        work_path = Path(work)
        (work_path / "kernel.cu").write_text(unit, encoding="utf-8")
        shutil.copyfile(HEADER, work_path / "cuda_host.h")
        (work_path / "runner.cpp").write_text(wrapper, encoding="utf-8")
        command = [COMPILER, *flags, "-o", str(work_path / library.name), str(work_path / "runner.cpp")]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0 or result.stderr.strip():
            raise RuntimeError(f"host build of {source} failed:\n{' '.join(command)}\n{result.stderr}")
        os.replace(work_path / library.name, library)
    return library


@functools.lru_cache(maxsize=None)
def _library(source: str, sanitize: bool) -> ctypes.CDLL:
    return ctypes.CDLL(str(build(source, sanitize)))


def _as_ctype(value: object) -> ctypes._SimpleCData:
    if isinstance(value, numpy.ndarray):
        return ctypes.c_void_p(value.ctypes.data)
    return _SCALAR_CTYPES[numpy.asarray(value).dtype](value)


def _check_signature(library: ctypes.CDLL, index: int, plan: KernelLaunch, values: list) -> None:
    """Raise TypeError unless the arguments match the kernel's parameters in count and size."""
    sizes = (ctypes.c_ulonglong * 64)()
    count = getattr(library, f"minidp_host_signature_{index}")(sizes, len(sizes))
    expected = list(sizes[:count])
    given = [ctypes.sizeof(value) for value in values]
    if given != expected:
        raise TypeError(f"{plan.name} takes parameters of {expected} bytes, the launch passes {given}")


def run(plan: KernelLaunch) -> None:
    """Execute a launch whose arrays are NumPy arrays, on this thread."""
    index = NAME_EXPRESSIONS[plan.source].index(plan.name)
    library = _library(plan.source, sanitizing())
    values = [_as_ctype(arg) for arg in plan.args]
    _check_signature(library, index, plan, values)
    function = getattr(library, f"minidp_host_launch_{index}")
    addresses = (ctypes.c_void_p * max(1, len(values)))(*(ctypes.addressof(v) for v in values))
    grid = (ctypes.c_uint * 3)(*plan.grid)
    block = (ctypes.c_uint * 3)(*plan.block)
    function.restype = None
    function(grid, block, addresses)
