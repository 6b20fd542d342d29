"""The timeline: MINIDP_TIMELINE and minidp.distributed.timeline record each rank's step as
Chrome-trace JSON, the launcher and spawn merge the ranks, python -m minidp.tools.timeline
draws a step."""

import json
import subprocess
import sys
import uuid

import numpy as np
import pytest


import jobs  # lives in tests/scripts
import timeline_job  # lives in tests/scripts

import minidp
import minidp.distributed as dist
from minidp import nn
from minidp.core import timeline
from minidp.io import DataLoader, TensorDataset
from minidp.tools import timeline as timeline_tool

JOB_SCRIPT = str(jobs.SCRIPTS / "timeline_job.py")
LAUNCH = [sys.executable, "-m", "minidp.distributed.launch", "--nproc_per_node", "2"]
N_PARAMS = 2 * (timeline_job.HIDDEN + 2)


def _run_job(command, directory):
    token = uuid.uuid4().hex
    try:
        done = jobs.finish(jobs.start(command, token, MINIDP_TIMELINE=str(directory)), timeout=120)
    finally:
        for process in jobs.job_processes(token):
            process.kill()
    assert done.returncode == 0, done.stderr
    return directory, done.stderr


@pytest.fixture(scope="module")
def launched_job(tmp_path_factory):
    """The directory of timelines a 2-rank launcher job left, and the launcher's stderr."""
    return _run_job(LAUNCH + [JOB_SCRIPT], tmp_path_factory.mktemp("launched"))


@pytest.fixture(scope="module")
def spawned_job(tmp_path_factory):
    """The directory of timelines a 2-rank job started by spawn left, and the parent's stderr."""
    return _run_job([sys.executable, JOB_SCRIPT, "--spawn"], tmp_path_factory.mktemp("spawned"))


@pytest.fixture(scope="module")
def launched(launched_job):
    return launched_job[0]


@pytest.fixture(scope="module")
def spawned(spawned_job):
    return spawned_job[0]


def _events(path):
    with open(path) as file:
        return json.load(file)["traceEvents"]


def _intervals(events, name):
    return [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == name]


@pytest.mark.parametrize("job", ["launched", "spawned"])
def test_each_rank_writes_its_step_events(job, request):
    directory = request.getfixturevalue(job)
    for rank in (0, 1):
        events = _events(directory / f"rank-{rank}.json")
        assert {e["ph"] for e in events} == {"X", "i", "M"}
        assert {e["pid"] for e in events} == {rank}
        names = [e["name"] for e in events]
        steps = timeline_job.STEPS
        for name in ("next batch", "forward", "backward", "wait for buckets", "optimizer step"):
            assert names.count(name) == steps, name
        assert names.count("grad ready") == N_PARAMS * steps
        buckets = sorted({n for n in names if n.startswith("pack bucket ")})
        assert len(buckets) >= 2
        assert names.count("all_reduce") == names.count("unpack") == len(buckets) * steps
        ready = {e["args"]["param"] for e in events if e["name"] == "grad ready"}
        assert len(ready) == N_PARAMS
        # All-reduces run on the communication thread, which has a track of its own.
        thread_names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        main = {e["tid"] for e in events if e["name"] == "backward"}
        comm = {e["tid"] for e in events if e["name"] == "all_reduce"}
        assert len(main) == len(comm) == 1 and main != comm
        assert thread_names[main.pop()] == "main"
        assert thread_names[comm.pop()].startswith("minidp-gloo")
        for e in events:
            if e["ph"] == "X":
                assert e["dur"] >= 0


def test_some_all_reduce_runs_inside_backward(launched):
    for rank in (0, 1):
        events = _events(launched / f"rank-{rank}.json")
        backwards = _intervals(events, "backward")
        # An all-reduce that starts before backward ends overlaps it; whether it also ends
        # inside depends on how loaded the machine is, so only the start is checked.
        started_inside = [
            (a0, a1) for a0, a1 in _intervals(events, "all_reduce") if any(b0 <= a0 < b1 for b0, b1 in backwards)
        ]
        assert started_inside, f"rank {rank}: no all-reduce started while backward computed"


@pytest.mark.parametrize("job", ["launched", "spawned"])
def test_the_job_end_merges_the_ranks(job, request):
    directory = request.getfixturevalue(job)
    merged = _events(directory / timeline.MERGED_NAME)
    rows = {e["pid"]: e["args"]["name"] for e in merged if e["name"] == "process_name"}
    assert rows == {0: "rank 0", 1: "rank 1"}
    assert len(merged) == sum(len(_events(directory / f"rank-{r}.json")) for r in (0, 1))


@pytest.mark.parametrize("job", ["launched_job", "spawned_job"])
def test_the_job_end_says_where_the_timeline_is(job, request):
    directory, stderr = request.getfixturevalue(job)
    lines = [line for line in stderr.splitlines() if "timeline written to" in line]
    assert lines == [
        f"minidp: timeline written to {directory / timeline.MERGED_NAME} (open it in Perfetto or chrome://tracing)"
    ]


def test_merge_of_an_empty_directory_writes_nothing(tmp_path):
    assert timeline.merge(str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def _train_steps(steps):
    minidp.seed(0)
    model = nn.Linear(4, 2)
    optimizer = minidp.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    data = TensorDataset([minidp.to_tensor(np.ones((2 * steps, 4), "float32"))])
    for (x,) in DataLoader(data, batch_size=2):
        model(x).sum().backward()
        optimizer.step()


def test_the_context_manager_records_only_its_block(tmp_path):
    assert timeline.recorder is None
    _train_steps(1)
    with dist.timeline(tmp_path) as recorder:
        assert timeline.recorder is recorder
        _train_steps(3)
    assert timeline.recorder is None
    _train_steps(1)
    names = [e["name"] for e in _events(tmp_path / "rank-0.json")]
    for name in ("next batch", "backward", "optimizer step"):
        assert names.count(name) == 3, name


def test_a_span_records_its_block_unless_an_exception_leaves_it(tmp_path):
    with timeline.span("outside any timeline", "test"):
        pass
    with dist.timeline(tmp_path):
        with timeline.span("done", "test", {"elements": 3}):
            pass
        with pytest.raises(ValueError, match="failed"):
            with timeline.span("failed", "test"):
                raise ValueError("failed")
    spans = [(e["name"], e["cat"], e["args"]) for e in _events(tmp_path / "rank-0.json") if e["ph"] == "X"]
    assert spans == [("done", "test", {"elements": 3})]


def test_off_by_default(tmp_path):
    script = (
        "import minidp, minidp.nn as nn; m = nn.Linear(3, 1); m(minidp.ones([2, 3])).sum()"
        ".backward(); print(minidp.core.timeline.recorder)"
    )
    env = jobs.job_environment(uuid.uuid4().hex)
    env.pop(timeline.TIMELINE_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
    assert list(tmp_path.iterdir()) == []


def test_the_plot_command_writes_a_png(launched, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "step.png"
    done = subprocess.run(
        [sys.executable, "-m", "minidp.tools.timeline", str(launched / timeline.MERGED_NAME), "-o", str(out)],
        env=jobs.job_environment(uuid.uuid4().hex),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plot_picks_one_step_per_rank(launched):
    events = _events(launched / timeline.MERGED_NAME)
    for rank in (0, 1):
        chosen = timeline_tool.step_events(events, rank, 1)
        names = [e["name"] for e in chosen]
        assert {e["pid"] for e in chosen} == {rank}
        assert names.count("backward") == names.count("forward") == 1
        assert names.count("optimizer step") == 1
    with pytest.raises(ValueError, match="out of range"):
        timeline_tool.step_events(events, 0, timeline_job.STEPS)


def test_the_plot_names_the_extra_when_matplotlib_is_missing(launched, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit, match=r"minidp\[plot\]"):
        timeline_tool.draw(_events(launched / timeline.MERGED_NAME), str(tmp_path / "x.png"))


def test_the_plot_rejects_a_file_that_is_not_a_trace(tmp_path):
    path = tmp_path / "other.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a Chrome-trace file"):
        timeline_tool.load_events(str(path))
