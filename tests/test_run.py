"""``python -m minidp.run`` and the launcher's ``--as_paddle``: an unedited Paddle script
(tests/scripts/unedited_paddle.py) trains on minidp as it trained on Paddle 3.3.1
(tests/fixtures/paddle_run_3.3.1.json, written by tools/record_paddle_run.py), on one process,
on 2 launched ranks and on 2 ranks it spawns itself; its log says minidp first; exit codes,
tracebacks and ``__main__`` are Python's."""

import json

import numpy as np
import pytest

from paddle_script_runner import ROOT, parse_result, run_as_paddle

SCRIPT = ROOT / "tests" / "scripts" / "unedited_paddle.py"
PADDLE = json.loads((ROOT / "tests" / "fixtures" / "paddle_run_3.3.1.json").read_text())


def assert_like_paddle(report: dict, paddles: dict) -> None:
    np.testing.assert_allclose(report["losses"], paddles["losses"], rtol=2e-6)
    np.testing.assert_allclose(report["weight"], paddles["weight"], rtol=2e-6)
    assert (report["world_size"], report["name"]) == (paddles["world_size"], "__main__")


def first_line(stderr: str) -> str:
    return stderr.splitlines()[0] if stderr else ""


@pytest.mark.timeout(60)
def test_one_process_trains_as_under_paddle_and_says_it_is_minidp(tmp_path):
    import minidp

    done = run_as_paddle(SCRIPT, ["--exit", "0"], cwd=tmp_path, timeout=50)
    assert done.returncode == 0, done.stderr
    report = parse_result(done.stdout)
    assert_like_paddle(report, PADDLE["one_process"])
    assert report["argv"] == ["--exit", "0"]
    banner = first_line(done.stderr)
    assert banner.startswith("[minidp.run] running ") and f"minidp {minidp.__version__}" in banner
    assert "not PaddlePaddle" in banner


@pytest.mark.timeout(60)
def test_two_launched_ranks_train_as_paddle_launched_them(tmp_path):
    done = run_as_paddle(SCRIPT, nprocs=2, cwd=tmp_path, timeout=50)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_like_paddle(parse_result(done.stdout), PADDLE["two_ranks"])
    for rank in (0, 1):
        assert f"[rank {rank}] [minidp.run] running " in done.stdout


@pytest.mark.timeout(60)
def test_ranks_spawned_by_an_aliased_script_get_the_alias_too(tmp_path):
    done = run_as_paddle(SCRIPT, ["--spawn"], cwd=tmp_path, timeout=50)
    assert done.returncode == 0, done.stdout + done.stderr
    report = parse_result(done.stdout)
    assert report["world_size"] == 2
    np.testing.assert_allclose(report["losses"], PADDLE["two_ranks"]["losses"], rtol=2e-6)


@pytest.mark.timeout(60)
def test_exit_codes_and_tracebacks_are_pythons(tmp_path):
    exited = run_as_paddle(SCRIPT, ["--exit", "3"], cwd=tmp_path, timeout=50)
    assert exited.returncode == 3 and "RESULT " in exited.stdout
    failed = run_as_paddle(SCRIPT, ["--fail"], cwd=tmp_path, timeout=50)
    assert failed.returncode == 1
    trace = failed.stderr.split("Traceback (most recent call last):", 1)[1]
    assert trace.strip().splitlines()[0].startswith(f'File "{SCRIPT}"')
    assert "minidp/run.py" not in trace and "runpy" not in trace
    assert trace.rstrip().endswith("ValueError: failing on purpose after step 0")


@pytest.mark.timeout(60)
def test_a_paddle_module_minidp_lacks_fails_at_its_import_naming_it(tmp_path):
    script = tmp_path / "uses_geometric.py"
    script.write_text("import paddle\nimport paddle.geometric\n")
    done = run_as_paddle(script, cwd=tmp_path, timeout=50)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: No module named 'paddle.geometric'")
    assert "minidp" in last and "does not provide paddle.geometric" in last


@pytest.mark.timeout(30)
def test_a_bare_usage_is_refused(tmp_path):
    done = run_as_paddle(ROOT / "missing.py", cwd=tmp_path, timeout=25)
    assert done.returncode != 0 and "missing.py" in done.stderr
    empty = run_as_paddle("-m", cwd=tmp_path, timeout=25)
    assert empty.returncode == 1 and "usage: python -m minidp.run" in empty.stderr
