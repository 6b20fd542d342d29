"""tools/report.py renders docs/benchmarks.md from the benchmarks' results (a fixed fixture here;
running the full benchmarks takes minutes and is done by hand), with the date, commit and machine
of its run, leaves the committed page alone on a quick run and appends sections made by other
tools; and bench_dp.py's sweep over world size and bucket size runs for real on a tiny model."""

import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from jobs import TOKEN_VARIABLE, wait_until_gone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import bench_dp
import report

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "benchmarks_report.json")


@pytest.fixture
def page():
    with open(FIXTURE) as handle:
        data = json.load(handle)
    return report.render(data["machine"], data, "quick")


def test_names_the_machine_and_how_it_was_made(page):
    assert page.startswith("# Benchmarks\n")
    assert "`python tools/report.py --quick`" in page
    for line in (
        "- cpu: Test CPU 3000",
        "- cores: 2",
        "- python: 3.11.0",
        "- numpy: 2.0.0",
        "- load average: 1.00 0.50 0.25",
        "- pytorch: 2.3.0",
    ):
        assert line in page.splitlines()


def test_only_a_quick_run_is_flagged_as_noisy(page):
    with open(FIXTURE) as handle:
        data = json.load(handle)
    full = report.render(data["machine"], data, "full")
    assert "A quick run times three message sizes" in page
    assert "A quick run" not in full and "`python tools/report.py` (full run" in full


def test_collective_table_gives_time_and_bus_bandwidth_per_size(page):
    rows = [line for line in page.splitlines() if line.startswith("| 1 MiB |")]
    # 2 ranks: bus bandwidth = 2 * (n - 1) / n * bytes / seconds = 1 MiB / 2 ms
    assert rows == ["| 1 MiB | 2,000 us / 0.52 | 4,000 us / 0.26 |"]
    assert "- minidp gloo at 1 MiB: 2.00x PyTorch gloo's bandwidth" in page
    assert "![all-reduce bandwidth](bench_collectives.png)" in page


def test_data_parallel_tables_give_step_time_and_exposed_communication(page):
    lines = page.splitlines()
    assert "| 2 procs: minidp DataParallel, gloo shared memory | 20.00 | 21.00 | 2.00x | 20.00 |" in lines
    exposed = [line for line in lines if line.startswith("| minidp DataParallel, gloo (shared memory) | ")]
    assert exposed and exposed[0].split(" | ")[1:3] == ["4.00", "3.00"]
    assert any(line.startswith("| PyTorch DDP, gloo | 7.00 | n/a |") for line in lines)
    assert "| minidp DataParallel, mpi | skipped: mpi4py is not installed | | | |" in lines
    assert "![data-parallel step time](bench_dp.png)" in page


def test_engine_output_is_quoted_verbatim(page):
    assert "```\nsummary\n  (a) minidp/numpy  1.050  (target <= 1.10)\n```" in page


def test_sweep_section_has_a_table_per_axis(page):
    lines = page.splitlines()
    assert (
        "## Step time and exposed communication against bucket size and world size (tools/bench_dp.py --sweep)" in lines
    )
    # world size 2, default buckets: steps 20, 22, 24, 26 ms and waits 2, 4, 6, 8 ms
    assert "| 0.0001 MiB | 80 B, 256 B, 64 B, 512 B | 30.00 (30.00-30.00) | 3.00 (3.00-3.00) | 10% |" in lines
    assert "| default (25 / 1 MiB) | 848 B | 23.00 (21.50-24.50) | 5.00 (3.50-6.50) | 22% |" in lines
    assert "| 1 | 0.5 | none (one rank reduces nothing) | 11.00 (10.50-11.50) | 0.00 (0.00-0.00) | 0% |" in lines
    assert "| 2 | 1 | 848 B | 23.00 (21.50-24.50) | 5.00 (3.50-6.50) | 22% |" in lines
    assert "| 4 | 2 (oversubscribed) | 848 B | 100.00 (100.00-100.00) | 50.00 (50.00-50.00) | 50% |" in lines
    assert any(line.startswith("- Oversubscribed: world size 4 runs more ranks than the 2 cores") for line in lines)
    assert "- 2 rank(s), buckets of 8 MiB: FAILED (timed out after 120 s:)" in lines
    assert "![step time and exposed communication against bucket size and world size](bench_dp_sweep.png)" in lines


def test_without_matplotlib_the_report_says_its_plots_were_not_drawn():
    with open(FIXTURE) as handle:
        data = json.load(handle)
    page = report.render(data["machine"], dict(data, plots=False), "full")
    assert "![" not in page
    assert page.count("plot not drawn, matplotlib is not installed") == 3


# --- the sweep itself, run for real on a tiny model ------------------------------------------
SMALL_BUCKET, LARGE_BUCKET = 0.0001, 1.0  # MiB: the tiny model's 848 bytes in 3 buckets, in 1
STEPS = 2


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """bench_dp.py --sweep on an MLP 8-16-4, world sizes 1 and 2, two bucket sizes: its JSON,
    its plot's path and the processes of the job still alive afterwards."""
    folder = tmp_path_factory.mktemp("sweep")
    token = uuid.uuid4().hex
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOKEN_VARIABLE, token)
        code = bench_dp.main(
            [
                "--sweep",
                "--nproc",
                "1",
                "2",
                "--bucket-mb",
                str(SMALL_BUCKET),
                str(LARGE_BUCKET),
                "--mlp",
                "8,16,4",
                "--steps",
                str(STEPS),
                "--warmup",
                "1",
                "--rounds",
                "1",
                "--timeout",
                "120",
                "--json",
                str(folder / "sweep.json"),
                "--plot",
                str(folder / "sweep.png"),
            ]
        )
    leftovers = wait_until_gone(token)
    for process in leftovers:
        process.kill()
    assert code == 0
    with open(folder / "sweep.json") as handle:
        return json.load(handle), folder / "sweep.png", leftovers


def test_sweep_measures_every_configuration_with_finite_positive_times(sweep):
    data, _, leftovers = sweep
    assert leftovers == [] and data["failed"] == []
    by_config = {(c["world"], c["bucket_mb"]): c for c in data["configs"]}
    assert sorted(by_config, key=str) == sorted([(1, None), (2, None), (2, SMALL_BUCKET), (2, LARGE_BUCKET)], key=str)
    for (world, _), config in by_config.items():
        assert len(config["step"]) == len(config["wait"]) == STEPS * world
        assert all(math.isfinite(t) and t > 0 for t in config["step"])
        assert all(math.isfinite(w) and 0 <= w < t for w, t in zip(config["wait"], config["step"]))
        if world == 2:
            assert all(w > 0 for w in config["wait"])  # the last bucket is always waited for
    assert by_config[(1, None)]["wait"] == [0.0] * STEPS and by_config[(1, None)]["buckets"] == []
    assert len(by_config[(2, SMALL_BUCKET)]["buckets"]) == 3
    assert by_config[(2, LARGE_BUCKET)]["buckets"] == [848]  # (8*16 + 16 + 16*4 + 4) * 4 bytes
    assert sum(by_config[(2, SMALL_BUCKET)]["buckets"]) == 848


def markdown_tables(text):
    """The tables of ``text``: runs of lines that start with '|', each a list of cell lists."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            assert line.endswith("|"), line
            current.append([cell.strip() for cell in line[1:-1].split("|")])
        elif current:
            tables.append(current)
            current = []
    return tables


def test_sweep_tables_are_well_formed_with_a_row_per_configuration(sweep):
    data, _, _ = sweep
    tables = markdown_tables(bench_dp.sweep_report(data))
    assert len(tables) == 2
    for header, rule, *rows in tables:
        assert all(cell == "---" for cell in rule) and len(rule) == len(header)
        assert all(len(row) == len(header) and all(row) for row in rows)
    by_bucket, by_world = tables
    assert [row[0] for row in by_bucket[2:]] == [
        f"{SMALL_BUCKET:g} MiB",
        f"{LARGE_BUCKET:g} MiB",
        "default (25 / 1 MiB)",
    ]
    assert [row[0] for row in by_world[2:]] == ["1", "2"]
    for row in by_bucket[2:] + by_world[2:]:
        step, wait = (float(cell.split()[0]) for cell in row[-3:-1])
        assert math.isfinite(step) and step > 0 and math.isfinite(wait) and wait >= 0


def test_sweep_plot_is_written_when_matplotlib_exists(sweep):
    pytest.importorskip("matplotlib", reason="matplotlib draws the plot (pip install 'minidp[plot]')")
    _, plot, _ = sweep
    with open(plot, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_sweep_says_it_drew_no_plot(sweep, tmp_path, monkeypatch, capsys):
    data, _, _ = sweep
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    bench_dp.sweep_plot(data, str(tmp_path / "none.png"))
    assert not (tmp_path / "none.png").exists()
    assert "no plot: matplotlib is not installed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--nproc", "2"], "set the sweep's axes and model: add --sweep"),
        (["--sweep", "--nproc", "0"], "--nproc takes world sizes of 1 or more"),
        (["--sweep", "--bucket-mb", "-1"], "--bucket-mb positive sizes"),
        (["--sweep", "--mlp", "784"], "--mlp takes two or more positive layer widths"),
        (["--sweep", "--steps", "0"], "--steps and --rounds must be at least 1"),
    ],
)
def test_sweep_refuses_bad_arguments_before_starting_anything(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_dp.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_describes_the_sweep_without_running_it():
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "bench_dp.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for option in ("--sweep", "--nproc", "--bucket-mb", "--mlp", "--warmup"):
        assert option in done.stdout
    assert "round 1/" not in done.stdout + done.stderr


def test_the_page_gives_the_load_before_and_after_the_run(tmp_path, monkeypatch):
    with open(FIXTURE) as handle:
        data = json.load(handle)
    monkeypatch.setattr(report, "run_benchmarks", lambda settings, docs: data)
    report.main(["--out", str(tmp_path / "benchmarks.md")])
    lines = (tmp_path / "benchmarks.md").read_text().splitlines()
    for key in ("load average", "load average at the end"):
        values = [line.split(": ", 1)[1] for line in lines if line.startswith(f"- {key}: ")]
        assert len(values) == 1 and all(float(x) >= 0 for x in values[0].split()), lines[:12]


@pytest.fixture
def stand_in_benchmarks(monkeypatch):
    """report.main with the fixture's results instead of running the benchmarks; the list
    collects the folder each call was told to draw its plots into."""
    with open(FIXTURE) as handle:
        data = json.load(handle)
    plot_folders = []

    def run_benchmarks(settings, docs):
        plot_folders.append(docs)
        return data

    monkeypatch.setattr(report, "run_benchmarks", run_benchmarks)
    return plot_folders


def test_the_page_gives_the_date_and_commit_of_its_run(tmp_path, stand_in_benchmarks):
    before = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    report.main(["--out", str(tmp_path / "benchmarks.md")])
    lines = (tmp_path / "benchmarks.md").read_text().splitlines()
    dates = [line[len("- date: ") :] for line in lines if line.startswith("- date: ")]
    assert len(dates) == 1 and dates[0].endswith(" UTC"), lines[:12]
    written = datetime.datetime.strptime(dates[0], "%Y-%m-%d %H:%M UTC").replace(tzinfo=datetime.timezone.utc)
    assert before <= written <= datetime.datetime.now(datetime.timezone.utc)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    commits = [line for line in lines if line.startswith("- commit: ")]
    assert len(commits) == 1 and commits[0].startswith(f"- commit: {head.stdout.strip()}"), commits


def test_outside_a_git_checkout_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "REPO", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert report.commit_description() == "unknown (not a git checkout)"


def test_a_quick_run_leaves_the_committed_page_alone(tmp_path, monkeypatch, stand_in_benchmarks, capsys):
    page = tmp_path / "docs" / "benchmarks.md"
    page.parent.mkdir()
    page.write_text("the committed page")
    monkeypatch.setattr(report, "PAGE", page)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the run's folder
    report.main(["--quick"])
    assert page.read_text() == "the committed page"
    written = Path(capsys.readouterr().out.splitlines()[0].removeprefix("wrote "))
    assert written.parent.parent == tmp_path and written.parent != page.parent
    assert stand_in_benchmarks == [written.parent]  # the plots go beside the quick page too
    assert "`python tools/report.py --quick`" in written.read_text()
    report.main([])  # a full run refreshes the page
    assert stand_in_benchmarks[-1] == page.parent and "(full run" in page.read_text()


def test_included_sections_are_appended_under_their_own_heading(tmp_path, stand_in_benchmarks):
    models = tmp_path / "models.md"
    models.write_text("## Model training steps (tools/bench_models.py)\n\n| model | ms |\n|---|---|\n| cnn | 5.0 |\n")
    plain = tmp_path / "notes.md"
    plain.write_text("Measured by hand.\n")
    out = tmp_path / "benchmarks.md"
    report.main(["--out", str(out), "--include", str(models), "--include", str(plain)])
    text = out.read_text()
    sweep = text.index("## Step time and exposed communication against bucket size")
    first = text.index("## Model training steps (tools/bench_models.py)\n\n| model | ms |\n|---|---|\n| cnn | 5.0 |\n")
    assert sweep < first < text.index("## notes.md\n\nMeasured by hand.\n")
    assert text.count("## Model training steps") == 1
    assert "The sections appended after the sweep come from other tools" in text


@pytest.mark.parametrize("content, message", [(None, "cannot read it"), ("\n", "the file is empty")])
def test_an_unusable_include_is_refused_before_anything_runs(tmp_path, stand_in_benchmarks, content, message):
    section = tmp_path / "section.md"
    if content is not None:
        section.write_text(content)
    with pytest.raises(SystemExit, match=f"--include {section}: {message}"):
        report.main(["--out", str(tmp_path / "benchmarks.md"), "--include", str(section)])
    assert stand_in_benchmarks == [] and not (tmp_path / "benchmarks.md").exists()
