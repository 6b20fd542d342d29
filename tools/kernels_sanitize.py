"""Run the host-executed kernel tests under AddressSanitizer and UndefinedBehaviorSanitizer.

The host runner (tests/kernel_host) builds each ``.cu`` source with
``-fsanitize=address,undefined -fno-sanitize-recover=all`` when ``MINIDP_KERNEL_HOST_SANITIZE=1``.
Python itself is not instrumented, so the sanitizer runtimes are preloaded (``LD_PRELOAD``);
NumPy's buffers then come from ASan's allocator and every out-of-bounds read or write of a
kernel, and every undefined operation, aborts the run.

First a self-check launches a pack into a buffer that is too small and expects ASan to stop
it, which proves the instrumentation is live; then pytest runs tests/test_kernels.py
(a few seconds once the builds are cached). Exit status 0 only when both succeed; 3 when
the compiler has no sanitizer runtimes (nothing was checked), except under CI (``CI=true``),
where that is a failure (1), as a missing compiler is for tools/check_kernels.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from check_kernels import running_in_ci

ROOT = Path(__file__).resolve().parent.parent
NOTHING_CHECKED = 3
TIMEOUT_SECONDS = 600

# Packs 4096 floats into a 4095-element buffer: the last write lands in ASan's red zone.
OVERFLOW_PROBE = """
import dataclasses, numpy
from kernel_host.runner import run
from minidp.core.kernels.launch_args import pack_launch
source = numpy.ones(4096, numpy.float32)
plan = pack_launch([source], numpy.zeros(4096, numpy.float32), [0])
run(dataclasses.replace(plan, args=plan.args[:-1] + (numpy.zeros(4095, numpy.float32),)))
"""


def sanitizer_runtimes(compiler: str) -> list[str]:
    """Paths of libasan and libubsan as the compiler links them; empty when it has none."""
    paths = []
    for library in ("libasan.so", "libubsan.so"):
        found = subprocess.run(
            [compiler, f"-print-file-name={library}"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
        if not os.path.isabs(found) or not os.path.exists(found):
            return []
        paths.append(found)
    return paths


def sanitizer_environment(runtimes: list[str]) -> dict[str, str]:
    """The environment of a Python process that loads sanitized kernel builds."""
    env = dict(os.environ)
    env.update(
        LD_PRELOAD=" ".join(runtimes),
        ASAN_OPTIONS="detect_leaks=0:halt_on_error=1",  # CPython's own allocations look leaked
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        MINIDP_KERNEL_HOST_SANITIZE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tests"), str(ROOT), env.get("PYTHONPATH")])),
    )
    return env


def probe_catches_overflow(env: dict[str, str]) -> bool:
    """True when a deliberate heap overflow in a kernel is reported by ASan."""
    result = subprocess.run(
        [sys.executable, "-c", OVERFLOW_PROBE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )
    caught = result.returncode != 0 and "AddressSanitizer: heap-buffer-overflow" in result.stderr
    if not caught:
        print(f"the overflow probe was not caught (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return caught


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Other arguments go to pytest, e.g. -k adam."
    )
    _, pytest_args = parser.parse_known_args(argv)
    runtimes = sanitizer_runtimes(os.environ.get("CXX", "g++"))
    if not runtimes:
        if running_in_ci():
            print("FAIL: the C++ compiler has no libasan/libubsan (CI=true: nothing checked fails)")
            return 1
        print("SKIP: the C++ compiler has no libasan/libubsan")
        return NOTHING_CHECKED
    env = sanitizer_environment(runtimes)
    if not probe_catches_overflow(env):
        return 1
    print("self-check: ASan reports a kernel's heap overflow")
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(ROOT / "tests" / "test_kernels.py"),
        "-q",
        "-p",
        "no:cacheprovider",
        *pytest_args,
    ]
    print(" ".join(command), flush=True)
    return subprocess.run(command, env=env, cwd=ROOT, timeout=TIMEOUT_SECONDS).returncode


if __name__ == "__main__":
    sys.exit(main())
