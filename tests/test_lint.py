"""The project's habits: the code passes the linter (ruff, configured in pyproject.toml: no unused
or undefined names, no syntax errors, one line length) and keeps its formatter's style, and every
test file is named after the module it specifies (README.md, "one test file per module, named
after it")."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_finds_nothing(command):
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run(
        [ruff, *command, "minidp", "tests", "tools", "examples"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, (
        result.stdout[-4000:]
        + result.stderr[-2000:]
        + "\n(`ruff format minidp tests tools examples` fixes the style; the linter's findings are fixed by hand)"
    )


# Test files that specify no single module, each with the reason. Every other tests/test_*.py is
# named after the module it specifies (tests/faults/ is a suite by kind, outside this rule).
NOT_A_MODULE = {
    "test_docs.py": "the documentation: README.md and docs/*.md run as written",
    "test_lint.py": "the project's habits over all the code: the linter and this naming rule",
    "test_gpu.py": "a suite by kind: everything that needs a real CUDA device (-m gpu)",
    "test_kernels_gpu.py": "minidp/kernels on a real device, apart from test_kernels.py (the "
    "same kernels compiled by g++): all of it skips without a GPU",
    "test_kernel_tools.py": "tools/check_kernels.py and tools/kernels_sanitize.py, the two "
    "kernel checks of tools/, which report the same way",
    "test_paddle_parity.py": "a suite by kind: the cases of paddle_cases.py, every op against the "
    "answers recorded from Paddle 3.3.1",
    "test_ops_grad.py": "a suite by kind: every differentiable op against finite differences over "
    "shapes hypothesis draws",
    "test_arguments.py": "a sweep: every public op and layer against bad arguments (the checks of "
    "ops/_util.py that all of them call)",
    "test_namespace.py": "the public namespaces: the __init__.py of minidp and of its packages",
    "test_bfloat16.py": "one dtype through the ops and layers (its docstring says which and why)",
    "test_digits_example.py": "examples/train_digits.py end to end",
    "test_paddle_scripts.py": "a suite by kind: ordinary Paddle training scripts run unchanged on the whole package",
    "test_mpirun.py": "a bare mpirun start-up: env.py, parallel.py and the mpi backend together",
    "test_layering.py": "the floor plan: the core imports nothing of the surface, and no module imports another "
    "that imports it back",
}


def module_names() -> set:
    """What a test file may be named after: the modules and packages of minidp (public ones:
    no leading underscore), each also as ``<package>_<module>`` to tell apart modules of the
    same name (test_ops_linalg.py for minidp/ops/linalg.py, test_backends_base.py), and the
    scripts of tools/ (test_report.py for tools/report.py)."""
    names = {path.stem for path in (ROOT / "tools").glob("*.py")}
    for path in (ROOT / "minidp").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] in ("__init__", "__main__") else parts
        public = [part for part in parts if not part.startswith("_")]
        if public == list(parts):
            names.update(public)
            names.update(f"{package}_{module}" for package, module in zip(parts, parts[1:]))
    return names


def test_every_test_file_is_named_after_the_module_it_specifies():
    names = module_names()
    files = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    misnamed = sorted(name for name in files - set(NOT_A_MODULE) if name[len("test_") : -len(".py")] not in names)
    assert not misnamed, (
        f"{misnamed} name no module of minidp or tools/ (README.md: one test file per module, "
        "named after it). Rename each after the module it specifies, test_<module>.py for "
        "minidp/**/<module>.py or a package (test_<package>_<module>.py where the bare name is "
        "taken or unclear), or move its tests into the files of their modules; only a file that "
        "truly spans modules goes into NOT_A_MODULE in tests/test_lint.py, with its reason."
    )
    stale = sorted(set(NOT_A_MODULE) - files)
    assert not stale, f"NOT_A_MODULE in tests/test_lint.py lists files that are gone: {stale}"
