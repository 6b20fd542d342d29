"""The mpi backend and bare-mpirun start-up, run under ``mpiexec -n 2``.

The pytest side starts ``mpiexec -n 2 python tests/test_mpi.py MODE DIR``; the
``__main__`` side runs in each MPI rank and writes its report to ``DIR/rank<N>.json`` (separate
files: the ranks' standard outputs interleave).
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dist_utils import REPO, run_mpiexec
from mismatch_cases import check_mismatch_reports

pytestmark = pytest.mark.mpi


def run_under_mpiexec(mode, directory, nprocs=2, timeout=60, extra_env=None):
    """This file's ``__main__`` in MODE on ``nprocs`` ranks; returns each rank's report."""
    out = run_mpiexec(__file__, [mode, str(directory)], nprocs, timeout, extra_env)
    reports = [Path(directory) / f"rank{rank}.json" for rank in range(nprocs)]
    assert all(report.exists() for report in reports), out
    return [json.loads(report.read_text()) for report in reports]


@pytest.mark.timeout(90)
def test_mpi_backend_collectives_under_mpiexec(tmp_path):
    for result in run_under_mpiexec("collectives", tmp_path):
        assert Path(result["minidp_file"]).is_relative_to(REPO), "tested an installed copy"
        assert result["failures"] == [], result
        assert result["backend"] == "mpi" and result["world_size"] == 2
        assert result["launched_by_mpi"]
        assert f"timed out waiting for rank {1 - result['rank']} " in result["timeout_error"]


@pytest.mark.timeout(90)
def test_gloo_under_bare_mpirun_shares_endpoints_over_mpi(tmp_path):
    results = run_under_mpiexec("gloo", tmp_path, extra_env={"PADDLE_DISTRI_BACKEND": "gloo"})
    endpoints = results[0]["trainer_endpoints"]
    assert len(endpoints) == 2 and results[1]["trainer_endpoints"] == endpoints
    for rank, result in enumerate(results):
        assert result["backend"] == "gloo" and result["sum"] == 3.0
        assert result["current_endpoint"] == endpoints[rank]
        assert result["environment_untouched"]


@pytest.mark.timeout(90)
def test_mpi_ranks_that_issue_different_operations_all_raise_naming_both(tmp_path):
    results = run_under_mpiexec("mismatch", tmp_path)
    check_mismatch_reports([result["mismatch"] for result in results])


def mpi_rank_main(mode, out_dir):
    """Runs inside one MPI rank; returns the JSON-able report. ``out_dir`` also carries rank 0's
    word to rank 1 that its timeout has passed."""
    import minidp
    import minidp.distributed as dist
    from minidp.core.distributed.backends.base import ReduceOp
    from mismatch_cases import run_mismatch_cases
    from reduce_cases import check_every_op_and_dtype

    group = dist.init_parallel_env()
    env = dist.ParallelEnv()
    rank, size = dist.get_rank(), dist.get_world_size()
    report = {
        "rank": rank,
        "world_size": size,
        "backend": group.backend,
        "launched_by_mpi": env.launched_by_mpi,
        "current_endpoint": env.current_endpoint,
        "trainer_endpoints": env.trainer_endpoints,
        "minidp_file": minidp.__file__,
        "environment_untouched": not any(
            name in os.environ for name in ("PADDLE_CURRENT_ENDPOINT", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_MASTER")
        ),
    }
    if mode == "mismatch":
        report["mismatch"] = run_mismatch_cases(lambda: dist.new_group(timeout=30).process_group)
        group.process_group.barrier()
        return report
    if mode == "gloo":
        x = minidp.to_tensor(np.array([rank + 1.0]))
        dist.all_reduce(x)
        report["sum"] = float(x.numpy()[0])
        dist.destroy_process_group()
        return report

    pg = group.process_group
    failures = []
    for dtype in ["float16", "float32", "float64", "int32", "int64"]:
        for count in [0, 1, 7, 300_001]:
            for op in ReduceOp:
                mine = (np.arange(count) % 5 + 1 + rank).astype(dtype)
                pg.all_reduce(mine, op)
                parts = [(np.arange(count) % 5 + 1 + r).astype(np.float64) for r in range(size)]
                want = {
                    ReduceOp.SUM: sum(parts),
                    ReduceOp.MAX: np.maximum(*parts),
                    ReduceOp.MIN: np.minimum(*parts),
                    ReduceOp.PROD: parts[0] * parts[1],
                    ReduceOp.AVG: sum(parts) / size,
                }[op]
                if op == ReduceOp.AVG and dtype.startswith("int"):
                    want = np.floor(want)
                if not np.allclose(mine.astype(np.float64), want, rtol=1e-3):
                    failures.append(f"all_reduce {op.name} {dtype} x{count}")
    failures += check_every_op_and_dtype(pg)
    data = np.full(5, rank, np.int64)
    pg.broadcast(data, src=1)
    if not (data == 1).all():
        failures.append("broadcast")
    gathered = np.empty((size, 3), np.float32)
    pg.all_gather(gathered, np.full(3, rank, np.float32))
    if not (gathered == np.arange(size)[:, None]).all():
        failures.append("all_gather")
    out = np.empty(4)
    pg.reduce_scatter(out, np.arange(4.0 * size) + rank, ReduceOp.SUM)
    if not np.allclose(out, 2 * np.arange(4.0 * size)[rank * 4 : rank * 4 + 4] + 1):
        failures.append("reduce_scatter")
    token = np.zeros(3, np.int32)
    if rank == 0:
        pg.send(np.array([4, 5, 6], np.int32), 1)
    else:
        pg.recv(token, 0)
        if token.tolist() != [4, 5, 6]:
            failures.append("send/recv")
    arrays = [np.full(100 + i, float(i + rank)) for i in range(40)]
    works = [pg.all_reduce(a, sync_op=False) for a in arrays]
    for k in reversed(range(len(works))):
        works[k].wait()
        if not all(w.is_completed() for w in works[:k]):
            failures.append("async order")
    if not all((a == 2 * i + 1).all() for i, a in enumerate(arrays)):
        failures.append("async values")
    halves = dist.new_group([1])
    one = minidp.to_tensor(np.array([5.0]))
    if dist.all_reduce(one, group=halves) is None and rank == 1:
        failures.append("subgroup member skipped")

    impatient = dist.new_group()
    impatient.process_group.timeout = 0.5  # set after set-up, which a loaded machine may slow
    timed_out = Path(out_dir) / "rank0-timed-out"
    if rank == 1:  # rank 0 fails first, then rank 1 waits for it in vain
        deadline = time.monotonic() + 60
        while not timed_out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the word is a file another process writes: nothing to wait on
    try:
        impatient.process_group.all_reduce(np.ones(4))
        report["timeout_error"] = "no error"
    except RuntimeError as error:
        report["timeout_error"] = str(error)
    if rank == 0:
        timed_out.touch()
    pg.barrier()
    report["failures"] = failures
    return report


if __name__ == "__main__":
    report = mpi_rank_main(sys.argv[1], sys.argv[2])
    (Path(sys.argv[2]) / f"rank{report['rank']}.json").write_text(json.dumps(report))
