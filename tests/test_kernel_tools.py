"""The kernel checks that live in tools/: the compile gate and the sanitizer run.

Each tool exits 0 when everything it checked passed and 3 when it could check nothing here (no
compiler, outside CI); the test then skips with the tool's own reason. Under CI (``CI=true``) a
missing compiler is a failure of the tool, and so of the test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"

import check_kernels
import kernels_sanitize

NOTHING_CHECKED = 3
BROKEN_SOURCE = "fused_adam.cu"
# Edits of BROKEN_SOURCE that the gate must reject, each with a word its compiler log must hold.
BREAKAGES = {
    "error": (("(sqrt(m2) + eps_hat)));", "(sqrt_misspelt(m2) + eps_hat)));"), "sqrt_misspelt"),
    "warning": (
        ("const C one = static_cast<C>(1);", "const C one = static_cast<C>(1);\n    int minidp_unused = 0;"),
        "minidp_unused",
    ),
}


def run_tool(name: str) -> str:
    """Run ``tools/<name>``; skip if it checked nothing, fail if it failed; return its output."""
    result = subprocess.run([sys.executable, str(TOOLS / name)], capture_output=True, text=True, timeout=280)
    output = result.stdout + result.stderr
    if result.returncode == NOTHING_CHECKED:
        pytest.skip(output.strip())
    assert result.returncode == 0, output[-5000:]
    return output


@pytest.mark.timeout(300)
def test_every_kernel_compiles_for_sm80_and_sm90_without_warnings():
    output = run_tool("check_kernels.py")
    assert "PASS nvrtc" in output or "PASS nvcc" in output, output
    assert "FAIL" not in output, output


@pytest.mark.timeout(300)
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_kernel_source_with_an_error_or_a_warning_fails_the_gate(compiler, breakage, monkeypatch, capsys):
    (old, new), logged = BREAKAGES[breakage]
    clean = check_kernels.translation_unit

    def translation_unit(source: str) -> str:
        text = clean(source)
        return text.replace(old, new) if source == BROKEN_SOURCE else text

    assert clean(BROKEN_SOURCE).count(old) == 1
    monkeypatch.setattr(check_kernels, "translation_unit", translation_unit)
    status = check_kernels.main(["--arch", "80", "--compiler", compiler])
    output = capsys.readouterr().out
    if status == NOTHING_CHECKED:
        pytest.skip(output.strip())
    assert status == 1, output
    failed = output.split(f"FAIL {compiler} sm_80 {BROKEN_SOURCE}\n", 1)
    assert len(failed) == 2 and logged in failed[1], output
    assert f"PASS {compiler} sm_80 bucket.cu" in output, output


def test_a_name_expression_the_source_does_not_define_fails_the_gate(monkeypatch, capsys):
    names = dict(check_kernels.NAME_EXPRESSIONS)
    names[BROKEN_SOURCE] = (*names[BROKEN_SOURCE], "minidp_no_such_kernel<float>")
    monkeypatch.setattr(check_kernels, "NAME_EXPRESSIONS", names)
    monkeypatch.setattr(check_kernels, "kernel_sources", lambda: (BROKEN_SOURCE,))
    status = check_kernels.main(["--arch", "80"])
    output = capsys.readouterr().out
    if status == NOTHING_CHECKED:
        pytest.skip(output.strip())
    assert status == 1, output
    ran = [name for name in ("nvrtc", "nvcc") if f"PASS {name} rejects" in output]
    assert ran and all(f"FAIL {name} sm_80 {BROKEN_SOURCE}" in output for name in ran), output
    assert "minidp_no_such_kernel" in output, output


def _remove_compiler(name: str, monkeypatch) -> None:
    """Make compiler ``name`` look uninstalled: its wheel or its executable cannot be found."""
    if name == "nvrtc":
        monkeypatch.setattr(
            check_kernels, "NVRTC_WHEEL", ("nvidia.minidp_absent_wheel", "nvidia-cuda-nvrtc-cu12", "lib/x.so")
        )
    else:
        monkeypatch.setenv("PATH", "")
        monkeypatch.setattr(check_kernels, "NVCC_LOCATIONS", ("/minidp/absent/nvcc",))


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_missing_compiler_is_skipped_with_its_reason_outside_ci(compiler, monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    _remove_compiler(compiler, monkeypatch)
    assert check_kernels.main(["--compiler", compiler]) == NOTHING_CHECKED
    output = capsys.readouterr().out
    hint = "pip install" if compiler == "nvrtc" else "no nvcc on PATH"
    assert f"SKIP {compiler}: " in output and hint in output, output


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_missing_compiler_fails_the_gate_under_ci(compiler, monkeypatch, capsys):
    monkeypatch.setenv("CI", "true")
    _remove_compiler(compiler, monkeypatch)
    assert check_kernels.main(["--compiler", compiler]) == 1
    assert f"FAIL {compiler}: " in capsys.readouterr().out


@pytest.mark.parametrize("ci, status", [(None, NOTHING_CHECKED), ("true", 1)])
def test_sanitizer_run_without_sanitizer_runtimes_skips_outside_ci_and_fails_under_ci(ci, status, monkeypatch, capsys):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(kernels_sanitize, "sanitizer_runtimes", lambda compiler: [])
    assert kernels_sanitize.main([]) == status
    assert "no libasan/libubsan" in capsys.readouterr().out


class _StopBeforeCompiling(Exception):
    """Raised by the stand-in NVRTC program once it has recorded CuPy's options."""


def test_nvrtc_gets_the_options_cupy_rawmodule_gives_it(monkeypatch):
    cupy = pytest.importorskip(
        "cupy", reason="compared with CuPy's NVRTC call where CuPy is installed (pip install -e '.[gpu]')"
    )
    from cupy.cuda import compiler

    try:
        nvrtc = check_kernels.load_nvrtc()
    except check_kernels.CompilerMissing as missing:
        pytest.skip(str(missing))
    code = check_kernels.translation_unit(BROKEN_SOURCE)
    seen = []

    class RecordingProgram:
        """Stands in for CuPy's NVRTC program: records the options CuPy compiles ``code`` with."""

        def __init__(self, source: str, *args, **kwargs) -> None:
            self.source = source

        def compile(self, options=(), log_stream=None):
            if self.source != code:  # CuPy's probe of the compiler on an empty file
                return b"", None
            seen.append(list(options))
            raise _StopBeforeCompiling

    class NoCache:
        """Stands in for CuPy's kernel cache: never hits, so CuPy always compiles."""

        def load(self, name: str) -> None:
            return None

    monkeypatch.setattr(compiler, "_NVRTCProgram", RecordingProgram)
    monkeypatch.setattr(compiler, "_kernel_cache_backend", NoCache())
    monkeypatch.setattr(compiler, "_get_arch_for_options_for_nvrtc", lambda arch=None: (f"-arch=sm_{arch}", "cubin"))
    monkeypatch.setattr(compiler, "_empty_file_preprocess_cache", {})
    with pytest.raises(_StopBeforeCompiling):
        cupy._core.core.compile_with_cache(
            code,
            check_kernels.COMPILE_OPTIONS,
            arch="80",
            prepend_cupy_headers=False,
            backend="nvrtc",
            name_expressions=list(check_kernels.NAME_EXPRESSIONS[BROKEN_SOURCE]),
        )
    ours = check_kernels.nvrtc_options(nvrtc.include, "80")
    assert [o for o in seen[0] if not o.startswith("-I")] == [o for o in ours if not o.startswith("-I")]
    assert f"-I{nvrtc.include}" in seen[0], "CuPy takes cuda_fp16.h from another folder"
