"""Compile gate for minidp's CUDA kernels: every source, sm_80 and sm_90, NVRTC and nvcc.

No GPU and no CuPy are needed. Each ``minidp/core/kernels/*.cu`` translation unit (headers inlined,
exactly the text ``cupy.RawModule`` receives) is compiled

* by NVRTC, the compiler the GPU path runs: ``libnvrtc`` of the pip wheel
  ``nvidia-cuda-nvrtc-cu12`` (the library CuPy loads) called through ctypes, with the options
  and name expressions ``cupy.RawModule`` gives it (see :func:`nvrtc_options`) and the CUDA
  headers (``cuda_fp16.h``, ``cuda_bf16.h``) of the wheel ``nvidia-cuda-runtime-cu12``, the
  folder CuPy passes too. Every name expression must lower to a kernel of the cubin;
* by ``nvcc -ptx -Werror all-warnings`` (found on PATH first) with the same options, plus a
  table that takes the address of every name expression so that each template instantiation
  is compiled.

Any error or warning fails; a probe with a deliberate warning checks that each compiler's
warnings are seen. A compiler that is not installed is skipped with the reason, except under
CI (``CI=true``), where it fails the gate: CI has nvcc and installs NVRTC with the test extra,
so a missing one means the check silently stopped running. Exit status: 0 when everything
that ran passed, 1 on a failure, 3 when neither compiler is installed outside CI (nothing was
checked). One line per file and target.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minidp.core.kernels import COMPILE_OPTIONS, kernel_sources, translation_unit  # noqa: E402
from minidp.core.kernels.launch_args import NAME_EXPRESSIONS  # noqa: E402

ARCHS = ("80", "90")
NOTHING_CHECKED = 3
# Compiled first by each compiler: it must be rejected, proving that warnings do fail the gate.
WARNING_PROBE = 'extern "C" __global__ void minidp_probe(float* x) { int unused = 0; x[0] = 1.0f; }'
# CuPy appends -ftz=true to every NVRTC compile; nvcc gets it too so both see the same code.
NVCC_EXTRA_OPTIONS = ("-ftz=true", "-Werror", "all-warnings")
NVCC_LOCATIONS = ("/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc")
# The pip wheels (namespace packages under ``nvidia``) and the files the gate takes from them.
NVRTC_WHEEL = ("nvidia.cuda_nvrtc", "nvidia-cuda-nvrtc-cu12", "lib/libnvrtc.so.12")
HEADERS_WHEEL = ("nvidia.cuda_runtime", "nvidia-cuda-runtime-cu12", "include/cuda_fp16.h")
NVRTC_SUCCESS = 0
NVRTC_ERROR_COMPILATION = 6

Runner = Callable[[str, Sequence[str], str], str]


class CompileFailure(Exception):
    """A kernel source did not compile cleanly; the message holds the compiler's log."""


class CompilerMissing(Exception):
    """A compiler the gate runs is not installed here; the message says how to get it."""


def running_in_ci() -> bool:
    """Whether the environment says this is a CI run (``CI=true``, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def wheel_file(wheel: tuple[str, str, str]) -> Path:
    """The file ``wheel[2]`` of the installed pip wheel ``wheel``; CompilerMissing without it."""
    package, distribution, relative = wheel
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / relative).is_file():
            return Path(folder) / relative
    raise CompilerMissing(f"no {relative} from {distribution}; pip install -e '.[kernels]' (or '.[test]')")


def nvrtc_options(include: Path, arch: str) -> list[str]:
    """What ``cupy.RawModule`` passes NVRTC for the loader's options, in CuPy's order (CuPy 14):
    the loader's options, its compile cache's ``--std=c++17``, the CUDA headers' folder (CuPy
    adds its own headers' folders too, which the kernels do not include), ``-ftz=true``, the
    target, and the execution space its NVRTC path sets."""
    return [
        *COMPILE_OPTIONS,
        "--std=c++17",
        f"-I{include}",
        "-ftz=true",
        f"-arch=sm_{arch}",
        "--device-as-default-execution-space",
    ]


class Nvrtc:
    """The NVRTC library, called through ctypes: version and compile-to-cubin."""

    def __init__(self, library: Path, include: Path) -> None:
        self.library = library
        self.include = include
        self._lib = ctypes.CDLL(str(library))
        self._lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        self._lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]

    def _call(self, function: str, *args: object, accepted: tuple[int, ...] = (NVRTC_SUCCESS,)) -> int:
        """Call ``function``; raise RuntimeError when its result is not in ``accepted``."""
        result = getattr(self._lib, function)(*args)
        if result not in accepted:
            message = self._lib.nvrtcGetErrorString(result).decode()
            raise RuntimeError(f"{function} failed: {message} ({self.library})")
        return result

    def version(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("nvrtcVersion", ctypes.byref(major), ctypes.byref(minor))
        return f"{major.value}.{minor.value}"

    def _bytes(self, program: ctypes.c_void_p, what: str) -> bytes:
        """The program's log (``what="ProgramLog"``) or cubin (``"CUBIN"``)."""
        size = ctypes.c_size_t()
        self._call(f"nvrtcGet{what}Size", program, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        self._call(f"nvrtcGet{what}", program, buffer)
        return buffer.raw

    def compile(self, code: str, names: Sequence[str], options: Sequence[str]) -> tuple[bytes, dict[str, str]]:
        """Compile ``code`` with ``names`` as name expressions; return the cubin and each
        expression's lowered (mangled) name. CompileFailure on an error or any warning."""
        program = ctypes.c_void_p()
        self._call("nvrtcCreateProgram", ctypes.byref(program), code.encode(), b"kernels.cu", 0, None, None)
        try:
            for name in names:
                self._call("nvrtcAddNameExpression", program, name.encode())
            encoded = [option.encode() for option in options]
            result = self._call(
                "nvrtcCompileProgram",
                program,
                len(encoded),
                (ctypes.c_char_p * len(encoded))(*encoded),
                accepted=(NVRTC_SUCCESS, NVRTC_ERROR_COMPILATION),
            )
            log = self._bytes(program, "ProgramLog").rstrip(b"\0").decode().strip()
            if result != NVRTC_SUCCESS or log:
                raise CompileFailure(log or "NVRTC reported a compile error with an empty log")
            lowered = {}
            for name in names:
                mangled = ctypes.c_char_p()
                self._call("nvrtcGetLoweredName", program, name.encode(), ctypes.byref(mangled))
                lowered[name] = mangled.value.decode()
            return self._bytes(program, "CUBIN"), lowered
        finally:
            self._call("nvrtcDestroyProgram", ctypes.byref(program))


def load_nvrtc() -> Nvrtc:
    """NVRTC from its pip wheel, with the CUDA headers' wheel; CompilerMissing otherwise."""
    return Nvrtc(wheel_file(NVRTC_WHEEL), wheel_file(HEADERS_WHEEL).parent)


def compile_with_nvrtc(nvrtc: Nvrtc, code: str, names: Sequence[str], arch: str) -> str:
    """Compile ``code`` for ``sm_<arch>`` as ``cupy.RawModule`` would; return a summary."""
    cubin, lowered = nvrtc.compile(code, names, nvrtc_options(nvrtc.include, arch))
    absent = [name for name, mangled in lowered.items() if mangled.encode() not in cubin]
    if absent:
        raise CompileFailure(f"the cubin has no kernel for {absent}")
    return f"{len(lowered)} kernels, {len(cubin)} bytes of cubin"


def setup_nvrtc() -> tuple[str, Runner]:
    """The NVRTC runner and the line that describes it; CompilerMissing when not installed."""
    nvrtc = load_nvrtc()
    options = " ".join(nvrtc_options(nvrtc.include, "ARCH"))
    return (f"NVRTC {nvrtc.version()} ({nvrtc.library}): {options}", functools.partial(compile_with_nvrtc, nvrtc))


def find_nvcc() -> str:
    """nvcc on PATH, else in the usual CUDA install locations; CompilerMissing otherwise."""
    for candidate in (shutil.which("nvcc"), *NVCC_LOCATIONS):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise CompilerMissing(f"no nvcc on PATH or at {', '.join(NVCC_LOCATIONS)}")


def nvcc_version(nvcc: str) -> str:
    """The release line of ``nvcc --version``."""
    output = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    return next((line.strip() for line in output.splitlines() if "release" in line), output.strip())


def nvcc_unit(code: str, names: Sequence[str]) -> str:
    """``code`` plus a table that forces every instantiation in ``names``."""
    addresses = ",\n".join(f"    (void*)&{name}" for name in names)
    return f"{code}\nvoid* minidp_check_kernels_instances[] = {{\n{addresses}\n}};\n"


def nvcc_command(nvcc: str, unit_path: str, arch: str, ptx_path: str) -> list[str]:
    """The exact nvcc command the gate runs."""
    return [nvcc, "-ptx", f"-arch=sm_{arch}", *COMPILE_OPTIONS, *NVCC_EXTRA_OPTIONS, "-o", ptx_path, unit_path]


def compile_with_nvcc(nvcc: str, code: str, names: Sequence[str], arch: str) -> str:
    """Compile ``code`` to PTX for ``sm_<arch>`` with nvcc; return a summary."""
    with tempfile.TemporaryDirectory(prefix="minidp_check_kernels_") as directory:
        unit_path = os.path.join(directory, "kernels.cu")
        ptx_path = os.path.join(directory, "kernels.ptx")
        Path(unit_path).write_text(nvcc_unit(code, names), encoding="utf-8")
        result = subprocess.run(
            nvcc_command(nvcc, unit_path, arch, ptx_path), capture_output=True, text=True, timeout=300
        )
        log = (result.stdout + result.stderr).strip()
        if result.returncode != 0 or log:
            raise CompileFailure(log or f"nvcc exited with status {result.returncode}")
        entries = Path(ptx_path).read_text(encoding="utf-8").count(".entry ")
    expected = len(names)
    if entries != expected:
        raise CompileFailure(f"PTX has {entries} kernels, the loader declares {expected}")
    return f"{entries} kernels"


def setup_nvcc() -> tuple[str, Runner]:
    """The nvcc runner and the line that describes it; CompilerMissing when not installed."""
    nvcc = find_nvcc()
    command = " ".join(nvcc_command(nvcc, "SOURCE.cu", "ARCH", "OUT.ptx"))
    return f"{nvcc_version(nvcc)}: {command}", functools.partial(compile_with_nvcc, nvcc)


SETUPS = {"nvrtc": setup_nvrtc, "nvcc": setup_nvcc}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arch", action="append", choices=ARCHS, help="compute capability to target (repeatable; default: all)"
    )
    parser.add_argument(
        "--compiler", action="append", choices=tuple(SETUPS), help="compiler to run (repeatable; default: both)"
    )
    args = parser.parse_args(argv)
    archs = args.arch or list(ARCHS)

    failures = 0
    runners = {}
    for compiler_name in args.compiler or list(SETUPS):
        try:
            description, runners[compiler_name] = SETUPS[compiler_name]()
        except CompilerMissing as missing:
            if running_in_ci():
                failures += 1
                print(f"FAIL {compiler_name}: {missing} (CI=true: a missing compiler fails)")
            else:
                print(f"SKIP {compiler_name}: {missing}")
        else:
            print(f"{compiler_name}: {description}")
    if not runners:
        print("nothing checked: no kernel compiler is installed")
        return 1 if failures else NOTHING_CHECKED

    for compiler_name, run in runners.items():
        try:
            run(WARNING_PROBE, ["minidp_probe"], archs[0])
        except CompileFailure:
            print(f"PASS {compiler_name} rejects a kernel with an unused variable")
        else:
            failures += 1
            print(f"FAIL {compiler_name} accepted a kernel with an unused variable: its warnings would go unnoticed")
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
