"""tools/api_coverage.py: the count of Paddle's public names that minidp offers, and the report
docs/api_coverage.md that it writes, which must match the code as it is."""

import subprocess
import sys
from pathlib import Path

import api_coverage

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_report_matches_the_code():
    done = subprocess.run(
        [sys.executable, "tools/api_coverage.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_name_minidp_lacks_is_counted_and_listed_as_missing():
    snapshot = api_coverage.load_snapshot()
    snapshot["paddle.nn"] = [*snapshot["paddle.nn"], "NoSuchLayerInMinidp"]
    row = api_coverage.coverage(snapshot)["paddle.nn"]
    assert row["lack"] == ["NoSuchLayerInMinidp"] and "Linear" in row["have"]
    report = api_coverage.render(api_coverage.coverage(snapshot), "3.3.1")
    assert "`paddle.nn` (1): `NoSuchLayerInMinidp`" in report


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
