"""spawn: ranks never joined do not hang the parent's exit, unnamed signals are named."""
import signal
import subprocess
import sys
import time

import pytest


import jobs
import rank_tasks
from minidp.distributed.spawn import RankFailedError, spawn

NEVER_JOINED = f"""
import sys
sys.path.insert(0, {str(jobs.SCRIPTS)!r})
import rank_tasks
from minidp.distributed.spawn import spawn
if __name__ == "__main__":
    context = spawn(rank_tasks.large_array, args=(20,), nprocs=2, join=False)
    print("exiting without join", flush=True)
"""


@pytest.mark.timeout(60)
def test_exiting_without_join_drains_large_results_instead_of_hanging(job_token, tmp_path):
    script = tmp_path / "never_joined.py"
    script.write_text(NEVER_JOINED)
    started = time.monotonic()
    parent = jobs.start([sys.executable, str(script)], job_token)
    try:
        out, err = parent.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        parent.kill()
        parent.communicate()
        pytest.fail("the parent hung at exit: its ranks were blocked sending their results")
    assert parent.returncode == 0, err
    assert "exiting without join" in out
    assert time.monotonic() - started < 30
    assert jobs.wait_until_gone(job_token) == []


@pytest.mark.timeout(30)
def test_a_rank_killed_by_a_signal_without_a_name_is_reported():
    signum = signal.SIGRTMIN + 3  # no name in signal.Signals; its default action terminates
    context = spawn(rank_tasks.kill_rank, args=(1, signum), nprocs=2, join=False)
    with pytest.raises(RankFailedError, match=f"rank 1 .* was killed by signal {signum} "):
        context.join()
    assert context.processes[1].exitcode == -signum
