"""Compile gate for minidp's CUDA kernels: every source, sm_80 and sm_90, NVRTC and nvcc.

No GPU is needed. Each ``minidp/kernels/*.cu`` translation unit (headers inlined, exactly the
text ``cupy.RawModule`` receives) is compiled

* by NVRTC through CuPy's own path (``cupy._core.core.compile_with_cache``, the function
  ``RawModule`` calls), with the loader's options and name expressions. CuPy asks the
  current device for its architecture; the gate replaces that query by the target arch, and
  captures the cubin in memory instead of CuPy's on-disk cache. CuPy finds NVRTC through
  ``cuda.pathfinder`` (the pip wheel ``nvidia-cuda-nvrtc-cu12``; CUDA headers such as
  ``cuda_fp16.h`` come from ``nvidia-cuda-runtime-cu12``). After compiling, CuPy loads the
  cubin, which needs a driver: without one that step raises, and the gate accepts that only
  once the cubin has been captured;
* by ``nvcc -ptx -Werror all-warnings`` with the same options, plus a table that takes the
  address of every name expression so that each template instantiation is compiled.

Any error or warning fails; a probe with a deliberate warning checks that each compiler's
warnings are seen. Exit status: 0 when everything that ran passed, 1 on a failure,
3 when neither compiler is installed (nothing was checked). One line per file and target.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minidp.kernels import COMPILE_OPTIONS, kernel_sources, translation_unit  # noqa: E402
from minidp.kernels.launch_args import NAME_EXPRESSIONS  # noqa: E402

ARCHS = ("80", "90")
NOTHING_CHECKED = 3
# Compiled first by each compiler: it must be rejected, proving that warnings do fail the gate.
WARNING_PROBE = 'extern "C" __global__ void minidp_probe(float* x) { int unused = 0; x[0] = 1.0f; }'
# CuPy appends -ftz=true to every NVRTC compile; nvcc gets it too so both see the same code.
NVCC_EXTRA_OPTIONS = ("-ftz=true", "-Werror", "all-warnings")


class CompileFailure(Exception):
    """A kernel source did not compile cleanly; the message holds the compiler's log."""


class _CapturingCache:
    """Stand-in for CuPy's kernel cache: never hits, keeps what CuPy would write to disk."""

    def __init__(self) -> None:
        self.saved: dict[str, bytes] = {}

    def load(self, name: str) -> None:
        return None

    def save(self, name: str, payload: bytes, source: str) -> None:
        self.saved[name] = payload


def nvrtc_unavailable_reason() -> str | None:
    """Why NVRTC through CuPy cannot run here, or None when it can."""
    try:
        import cupy
        from cupy.cuda import nvrtc
    except Exception as error:  # a broken CUDA install raises more than ImportError
        return f"cupy does not import ({error}); pip install 'minidp[kernels]'"
    try:
        nvrtc.getVersion()
    except Exception as error:
        return (f"cupy {cupy.__version__} finds no NVRTC ({error}); "
                "pip install nvidia-cuda-nvrtc-cu12")
    return None


def nvrtc_version() -> str:
    """CuPy and NVRTC versions, for the report line."""
    import cupy
    from cupy.cuda import nvrtc

    major, minor = nvrtc.getVersion()
    return f"cupy {cupy.__version__}, NVRTC {major}.{minor}"


@contextlib.contextmanager
def _cupy_compiling_for(arch: str) -> Iterator[_CapturingCache]:
    """Make CuPy compile for ``arch`` without querying a device, into an in-memory cache."""
    from cupy.cuda import compiler

    saved_arch_query = compiler._get_arch_for_options_for_nvrtc
    saved_cache = compiler._kernel_cache_backend
    cache = _CapturingCache()
    compiler._get_arch_for_options_for_nvrtc = lambda arch=None: (f"-arch=sm_{arch}", "cubin")
    compiler._set_kernel_cache_backend(cache)
    try:
        yield cache
    finally:
        compiler._get_arch_for_options_for_nvrtc = saved_arch_query
        compiler._set_kernel_cache_backend(saved_cache)


def compile_with_nvrtc(code: str, names: Sequence[str], arch: str) -> str:
    """Compile ``code`` for ``sm_<arch>`` along CuPy's RawModule path; return a summary."""
    import cupy
    from cupy._core import core
    from cupy.cuda import compiler

    names = list(names)
    log = io.StringIO()
    with _cupy_compiling_for(arch) as cache:
        try:
            core.compile_with_cache(code, COMPILE_OPTIONS, arch=arch,
                                    prepend_cupy_headers=False, backend="nvrtc",
                                    name_expressions=names, log_stream=log)
        except compiler.CompileException as error:
            raise CompileFailure(str(error)) from None
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError):
            if not cache.saved:
                raise
    if log.getvalue().strip():
        raise CompileFailure(log.getvalue())
    if len(cache.saved) != 1:
        raise CompileFailure(f"expected one compiled module, CuPy produced {len(cache.saved)}")
    decoded = compiler._decode_cache_payload(next(iter(cache.saved.values())), len(names))
    if decoded is None or not decoded[1]:
        raise CompileFailure("CuPy's compiled module does not list every name expression")
    return f"{len(names)} kernels, {len(decoded[1])} bytes of cubin"


def find_nvcc() -> str | None:
    """nvcc on PATH, else in the usual CUDA install locations."""
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def nvcc_version(nvcc: str) -> str:
    """The release line of ``nvcc --version``."""
    output = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    return next((line.strip() for line in output.splitlines() if "release" in line), output.strip())


def nvcc_unit(code: str, names: Sequence[str]) -> str:
    """``code`` plus a table that forces every instantiation in ``names``."""
    addresses = ",\n".join(f"    (void*)&{name}" for name in names)
    return (f"{code}\n"
            f"void* minidp_check_kernels_instances[] = {{\n{addresses}\n}};\n")


def nvcc_command(nvcc: str, unit_path: str, arch: str, ptx_path: str) -> list[str]:
    """The exact nvcc command the gate runs."""
    return [nvcc, "-ptx", f"-arch=sm_{arch}", *COMPILE_OPTIONS, *NVCC_EXTRA_OPTIONS,
            "-o", ptx_path, unit_path]


def compile_with_nvcc(nvcc: str, code: str, names: Sequence[str], arch: str) -> str:
    """Compile ``code`` to PTX for ``sm_<arch>`` with nvcc; return a summary."""
    with tempfile.TemporaryDirectory(prefix="minidp_check_kernels_") as directory:
        unit_path = os.path.join(directory, "kernels.cu")
        ptx_path = os.path.join(directory, "kernels.ptx")
        Path(unit_path).write_text(nvcc_unit(code, names), encoding="utf-8")
        result = subprocess.run(nvcc_command(nvcc, unit_path, arch, ptx_path),
                                capture_output=True, text=True, timeout=300)
        log = (result.stdout + result.stderr).strip()
        if result.returncode != 0 or log:
            raise CompileFailure(log or f"nvcc exited with status {result.returncode}")
        entries = Path(ptx_path).read_text(encoding="utf-8").count(".entry ")
    expected = len(names)
    if entries != expected:
        raise CompileFailure(f"PTX has {entries} kernels, the loader declares {expected}")
    return f"{entries} kernels"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", choices=ARCHS,
                        help="compute capability to target (repeatable; default: all)")
    parser.add_argument("--compiler", action="append", choices=("nvrtc", "nvcc"),
                        help="compiler to run (repeatable; default: both)")
    args = parser.parse_args(argv)
    archs = args.arch or list(ARCHS)
    compilers = args.compiler or ["nvrtc", "nvcc"]

    runners = {}
    if "nvrtc" in compilers:
        reason = nvrtc_unavailable_reason()
        if reason:
            print(f"SKIP nvrtc: {reason}")
        else:
            print(f"nvrtc: {nvrtc_version()}, options {' '.join(COMPILE_OPTIONS)} (+ CuPy's)")
            runners["nvrtc"] = compile_with_nvrtc
    if "nvcc" in compilers:
        nvcc = find_nvcc()
        if nvcc is None:
            print("SKIP nvcc: not installed (no nvcc on PATH or in /usr/local/cuda/bin)")
        else:
            command = " ".join(nvcc_command(nvcc, "SOURCE.cu", "ARCH", "OUT.ptx"))
            print(f"nvcc: {nvcc_version(nvcc)}: {command}")
            runners["nvcc"] = functools.partial(compile_with_nvcc, nvcc)
    if not runners:
        print("nothing checked: neither NVRTC nor nvcc is installed")
        return NOTHING_CHECKED

    failures = 0
    for compiler_name, run in runners.items():
        try:
            run(WARNING_PROBE, ["minidp_probe"], archs[0])
        except CompileFailure:
            print(f"PASS {compiler_name} rejects a kernel with an unused variable")
        else:
            failures += 1
            print(f"FAIL {compiler_name} accepted a kernel with an unused variable: "
                  "its warnings would go unnoticed")
    for source in kernel_sources():
        for arch in archs:
            for compiler_name, run in runners.items():
                try:
                    summary = run(translation_unit(source), NAME_EXPRESSIONS[source], arch)
                except CompileFailure as failure:
                    failures += 1
                    print(f"FAIL {compiler_name} sm_{arch} {source}\n{failure}")
                else:
                    print(f"PASS {compiler_name} sm_{arch} {source}: {summary}")
    print(f"{failures} failed" if failures else "all kernels compile cleanly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
