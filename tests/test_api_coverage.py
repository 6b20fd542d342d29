"""tools/api_coverage.py: the count of Paddle's public names that minidp offers, and the report
docs/api_coverage.md that it writes, which must match the code and the committed snapshot."""

import fnmatch
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import api_coverage

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_report_is_what_the_tool_writes_from_the_committed_snapshot():
    table = api_coverage.coverage(api_coverage.load_snapshot())
    version = json.loads(api_coverage.SNAPSHOT.read_text())["paddle_version"]
    assert not [name for row in table.values() for name in row["stale"]]
    assert api_coverage.REPORT.read_text() == api_coverage.render(table, version), (
        "docs/api_coverage.md is out of date: run python tools/api_coverage.py"
    )


def test_help_needs_neither_paddle_nor_any_installed_package():
    # -S -I: no site-packages, so neither Paddle nor NumPy nor minidp can be imported
    done = subprocess.run(
        [sys.executable, "-S", "-I", "tools/api_coverage.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--refresh PADDLE_PYTHON" in done.stdout and "--check" in done.stdout


def test_the_namespaces_real_scripts_import_are_counted_and_recorded():
    wanted = {
        "paddle.metric",
        "paddle.vision",
        "paddle.vision.transforms",
        "paddle.vision.models",
        "paddle.vision.datasets",
        "paddle.amp",
        "paddle.jit",
        "paddle.static",
        "paddle.distribution",
        "paddle.hapi",
        "paddle.callbacks",
        "paddle.utils",
        "paddle.base",
        "paddle.nn.initializer",
        "paddle.regularizer",
        "paddle.autograd",
        "paddle.device",
        "paddle.distributed.fleet",
        "paddle.Tensor",
    }
    assert wanted <= set(api_coverage.NAMESPACES)
    assert set(api_coverage.load_snapshot()) == set(api_coverage.NAMESPACES)
    not_counted = {ns for group in api_coverage.NOT_COUNTED for ns in group}
    assert not not_counted & set(api_coverage.NAMESPACES)


def test_every_exclusion_names_a_counted_namespace_and_matches_a_recorded_name():
    snapshot = api_coverage.load_snapshot()
    for reason, groups in api_coverage.EXCLUDED:
        for namespace, patterns in groups.items():
            assert namespace in snapshot, (reason, namespace)
            dead = [p for p in patterns if not fnmatch.filter(snapshot[namespace], p)]
            assert not dead, (namespace, dead)


def test_static_keeps_only_input_spec_and_create_parameter_in_scope():
    row = api_coverage.coverage(api_coverage.load_snapshot())["paddle.static"]
    assert sorted(row["have"] + row["lack"]) == ["InputSpec", "create_parameter"]
    assert len(row["excluded"]) == 1 and "Static graph" in next(iter(row["excluded"]))


def test_fleet_counts_the_functions_data_parallel_scripts_call():
    row = api_coverage.coverage(api_coverage.load_snapshot())["paddle.distributed.fleet"]
    for name in ("init", "distributed_model", "distributed_optimizer", "worker_index", "DistributedStrategy"):
        assert name in row["have"]
    assert "init_server" in row["excluded"][next(r for r in row["excluded"] if "Parameter-server" in r)]


def test_a_name_minidp_lacks_is_counted_and_listed_as_missing():
    snapshot = api_coverage.load_snapshot()
    snapshot["paddle.nn"] = [*snapshot["paddle.nn"], "NoSuchLayerInMinidp"]
    row = api_coverage.coverage(snapshot)["paddle.nn"]
    assert row["lack"] == ["NoSuchLayerInMinidp"] and "Linear" in row["have"]
    report = api_coverage.render(api_coverage.coverage(snapshot), "3.3.1")
    assert "`paddle.nn` (1): `NoSuchLayerInMinidp`" in report


def test_a_namespace_minidp_does_not_have_counts_every_name_as_missing(monkeypatch):
    monkeypatch.setitem(api_coverage.NAMESPACES, "paddle.nosuch", "minidp.nosuch")
    snapshot = {namespace: [] for namespace in api_coverage.NAMESPACES}
    snapshot["paddle.nosuch"] = ["Thing", "helper"]
    row = api_coverage.coverage(snapshot)["paddle.nosuch"]
    assert row["have"] == [] and row["lack"] == ["Thing", "helper"]
    assert "| `paddle.nosuch` | 2 | 0 | 2 | 0 | 0.0% |" in api_coverage.render(api_coverage.coverage(snapshot), "x")


def test_an_excluded_name_that_minidp_has_is_reported_as_stale():
    snapshot = {namespace: [] for namespace in api_coverage.NAMESPACES}
    excluded_name = next(
        name for name in api_coverage.load_snapshot()["paddle"] if api_coverage._excluded("paddle", name)
    )
    snapshot["paddle"] = [excluded_name, "to_tensor"]
    row = api_coverage.coverage(snapshot)["paddle"]
    assert row["have"] == ["to_tensor"] and row["stale"] == []
    api_coverage.EXCLUDED.append(("a test's exclusion", {"paddle": ["to_tensor"]}))
    try:
        assert api_coverage.coverage(snapshot)["paddle"]["stale"] == ["to_tensor"]
    finally:
        api_coverage.EXCLUDED.pop()


def test_refresh_records_all_or_public_attributes_without_submodules(tmp_path, monkeypatch):
    # a stand-in for Paddle: one namespace with __all__, one without, one whose __all__ is too short
    package = tmp_path / "paddle"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            __version__ = "9.9"
            __all__ = ["to_tensor"]
            class Tensor:
                def mean(self): ...
                def _hidden(self): ...
            def to_tensor(x): ...
            """
        )
    )
    (package / "plain.py").write_text("import os\n\nclass Model: ...\n\ndef summary(): ...\n")
    (package / "fleet.py").write_text("import os\n\n__all__ = ['Strategy']\n\nclass Strategy: ...\n\ninit = print\n")
    monkeypatch.setattr(
        api_coverage,
        "NAMESPACES",
        {"paddle": "minidp", "paddle.Tensor": "minidp.Tensor", "paddle.plain": "x", "paddle.fleet": "x"},
    )
    monkeypatch.setattr(api_coverage, "BY_ATTRIBUTES", ("paddle.fleet",))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    out = tmp_path / "snapshot.json"
    api_coverage.refresh_snapshot(sys.executable, out)
    recorded = json.loads(out.read_text())
    assert recorded["paddle_version"] == "9.9"
    assert recorded["namespaces"] == {
        "paddle": ["to_tensor"],
        "paddle.Tensor": ["mean"],
        "paddle.plain": ["Model", "summary"],
        "paddle.fleet": ["Strategy", "init"],
    }
