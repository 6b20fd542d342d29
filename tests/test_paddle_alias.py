"""The alias finder: ``paddle`` and ``paddle.*`` are minidp's very modules while it is installed,
a module minidp lacks fails at its import with a clear error, a real Paddle already imported is
not shadowed, and nothing is left behind for an interpreter started without it."""

import importlib
import importlib.util
import subprocess
import sys
import types

import pytest

import minidp
import minidp.nn.functional
from minidp import paddle_alias
from minidp.core.distributed.launch.main import LaunchError, build_parser, make_plan
from minidp.distributed.launch import PADDLE_RANK_RUNNER


@pytest.fixture
def aliased():
    """The alias installed in this process for one test, then removed with every ``paddle`` module."""
    before = list(sys.meta_path)
    paddle_alias.install()
    yield
    sys.meta_path[:] = before
    for name in [name for name in sys.modules if name == "paddle" or name.startswith("paddle.")]:
        del sys.modules[name]


def test_paddle_names_are_the_minidp_modules_themselves(aliased):
    import paddle
    import paddle.nn as nn
    import paddle.nn.functional as F
    from paddle.distributed import fleet
    from paddle.io import DataLoader

    assert paddle is minidp and nn is minidp.nn and F is minidp.nn.functional
    assert fleet is importlib.import_module("minidp.distributed.fleet")
    assert DataLoader is minidp.io.DataLoader
    assert sys.modules["paddle.nn.functional"] is minidp.nn.functional
    assert minidp.nn.__name__ == "minidp.nn"  # the modules keep their own names and specs
    assert paddle_alias.installed()


def test_install_is_idempotent_and_other_names_pass_by(aliased):
    paddle_alias.install()
    assert sum(isinstance(f, paddle_alias.PaddleAliasFinder) for f in sys.meta_path) == 1
    finder = paddle_alias.PaddleAliasFinder()
    assert finder.find_spec("paddlex") is None and finder.find_spec("numpy") is None
    assert paddle_alias.minidp_name("paddle.io") == "minidp.io" and paddle_alias.minidp_name("paddles") is None


def test_a_module_minidp_lacks_is_a_clear_import_error(aliased):
    assert importlib.util.find_spec("minidp.geometric") is None
    with pytest.raises(ModuleNotFoundError, match=r"'paddle.geometric'.*does not provide paddle.geometric") as info:
        import paddle.geometric  # noqa: F401
    assert info.value.name == "paddle.geometric"
    with pytest.raises(ImportError, match="No module named .paddle.geometric.: .* does not provide paddle.geometric "):
        from paddle.geometric.message_passing import send_recv  # noqa: F401


def test_a_missing_dependency_of_a_minidp_module_keeps_its_own_error(aliased, monkeypatch):
    def import_module(name):
        raise ModuleNotFoundError("No module named 'cupy'", name="cupy")

    monkeypatch.setattr(paddle_alias.importlib, "import_module", import_module)
    with pytest.raises(ModuleNotFoundError, match="No module named 'cupy'"):
        paddle_alias.PaddleAliasFinder().find_spec("paddle.device")


def test_a_real_paddle_already_imported_is_not_shadowed(monkeypatch):
    monkeypatch.setitem(sys.modules, "paddle", types.ModuleType("paddle"))
    with pytest.raises(RuntimeError, match="paddle is already imported in this process"):
        paddle_alias.install()
    assert not paddle_alias.installed()


def test_a_fresh_interpreter_without_the_runner_has_no_alias():
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('paddle')\n"
        "print('none' if spec is None else spec.origin)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    found = done.stdout.strip()
    assert found == "none" or "minidp" not in found, found  # no paddle, or a real one


def test_the_launcher_runs_ranks_through_the_module_it_is_given(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    default = make_plan(build_parser().parse_args([str(script)]))
    try:
        assert default.command[3] == "minidp.core.distributed.launch.run_rank"
    finally:
        default.release()
    aliased = make_plan(build_parser().parse_args(["--rank_runner", PADDLE_RANK_RUNNER, str(script), "x"]))
    try:
        assert aliased.command[3:] == ["minidp.run", str(script), "x"]
    finally:
        aliased.release()
    with pytest.raises(LaunchError, match="--rank_runner module 'no.such.runner' not found"):
        make_plan(build_parser().parse_args(["--rank_runner", "no.such.runner", str(script)]))
