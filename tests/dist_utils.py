"""Run a function on N real processes on 127.0.0.1, for multi-process tests.

``run_workers(target, nprocs, args, timeout)`` starts ``nprocs`` fresh interpreters (the
``spawn`` start method, so no state leaks from the test process), each with the environment
``spawn`` and the launcher write (the job plan of :mod:`minidp.core.distributed.job`: endpoints on
free ports reserved for the run, the store on rank 0, the job secret; backend 'auto' and GPU i
for rank i unless ``env`` says otherwise), calls ``target(*args)`` in each, and returns the
per-rank return values in rank order. When a rank raises, exits early or the timeout expires,
every process is killed and ``WorkerFailure`` reports the rank and its traceback.

``run_workers_outcomes`` returns every rank's :class:`Outcome` instead of raising (for tests in
which a rank is meant to die). In every case no process outlives the call.

``run_mpiexec(script, args, nprocs, timeout)`` runs a script on MPI ranks under ``mpiexec``
instead, for the mpi backend and the bare-mpirun start-up.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from multiprocessing.connection import wait as wait_for_any
from typing import Any, Callable, Dict, List, Optional, Sequence

import pytest

from minidp.core.distributed.job import plan_local_job

_CONTEXT = multiprocessing.get_context("spawn")
REPO = Path(__file__).resolve().parent.parent
_JOB_VARIABLE_PREFIXES = ("PADDLE_", "MASTER_", "FLAGS_selected")  # what a launcher would set


class WorkerFailure(RuntimeError):
    """A rank failed, died or did not finish in time; the message carries its traceback."""


@dataclass
class Outcome:
    """How one rank ended: its return value, or its error text, and its exit code."""

    rank: int
    ok: bool
    value: Any = None
    error: str = ""
    exitcode: Optional[int] = None


def find_mpiexec() -> Optional[str]:
    """mpiexec of the MPI that mpi4py uses: next to this Python first (pip's mpich puts it
    there), else ``mpiexec`` or ``mpirun`` on PATH; None when there is none."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpiexec") or shutil.which("mpirun")


def run_mpiexec(
    script: str, args: Sequence[str], nprocs: int = 2, timeout: float = 60, env: Optional[Dict[str, str]] = None
) -> str:
    """Run ``python script *args`` on ``nprocs`` ranks under mpiexec and return its output.

    The ranks see none of this process's job variables (PADDLE_*, MASTER_*, FLAGS_selected_*),
    only ``env`` on top, and import minidp from this working tree, not from an installed copy.
    Skips the test without mpi4py or mpiexec; fails it when mpiexec exits non-zero; past
    ``timeout`` kills mpiexec's whole session, ranks included, and raises TimeoutExpired.
    """
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install 'minidp[mpi]')")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec/mpirun found next to python or on PATH")
    rank_env = {k: v for k, v in os.environ.items() if not k.startswith(_JOB_VARIABLE_PREFIXES)}
    rank_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), rank_env.get("PYTHONPATH")]))
    rank_env.update(env or {})
    process = subprocess.Popen(
        [mpiexec, "-n", str(nprocs), sys.executable, script, *args],
        env=rank_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
    assert process.returncode == 0, f"mpiexec exited with {process.returncode}:\n{out}\n{err}"
    return out + err


def _worker_main(conn, env: Dict[str, str], target: Callable, args: Sequence[Any]) -> None:
    os.environ.update(env)
    try:
        result = target(*args)
    except BaseException:
        conn.send(("error", traceback.format_exc()))
    else:
        conn.send(("ok", result))
    finally:
        conn.close()


def _kill_tree(pid: int) -> None:
    """Kill ``pid`` and anything it started (children first, so none is orphaned)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        for child in children:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_workers_outcomes(
    target: Callable,
    nprocs: int,
    args: Sequence[Any] = (),
    timeout: float = 60.0,
    env: Optional[Dict[str, str]] = None,
    stop_on_failure: bool = False,
) -> List[Outcome]:
    """Run ``target(*args)`` on ``nprocs`` processes; return every rank's outcome.

    ``target`` must be importable by name (a module-level function). A rank that has not
    finished when ``timeout`` expires is killed and reported with ``error="timed out"``. With
    ``stop_on_failure``, the first failing rank gets the others killed at once.
    """
    plan = plan_local_job(nprocs, "auto", devices=range(nprocs))
    environments = [{**rank_env, **(env or {})} for rank_env in plan.envs]
    processes, readers = [], []
    outcomes: Dict[int, Outcome] = {}
    try:
        for rank in range(nprocs):
            reader, writer = _CONTEXT.Pipe(duplex=False)
            process = _CONTEXT.Process(
                target=_worker_main,
                name=f"minidp-test-rank{rank}",
                args=(writer, environments[rank], target, tuple(args)),
                daemon=True,
            )
            process.start()
            writer.close()
            processes.append(process)
            readers.append(reader)
        deadline = time.monotonic() + timeout
        while len(outcomes) < nprocs:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            waiting = {r: readers[r] for r in range(nprocs) if r not in outcomes}
            ready = wait_for_any(list(waiting.values()), timeout=remaining)
            for rank, reader in waiting.items():
                if reader not in ready:
                    continue
                try:
                    status, payload = reader.recv()
                except EOFError:
                    processes[rank].join(5)
                    outcomes[rank] = Outcome(
                        rank, False, error="exited without a result", exitcode=processes[rank].exitcode
                    )
                    continue
                processes[rank].join(5)
                outcomes[rank] = Outcome(
                    rank,
                    status == "ok",
                    payload if status == "ok" else None,
                    payload if status != "ok" else "",
                    processes[rank].exitcode,
                )
            if stop_on_failure and any(not o.ok for o in outcomes.values()):
                break
    finally:
        for process in processes:
            if process.is_alive():
                _kill_tree(process.pid)
            process.join(5)
        for reader in readers:
            reader.close()
        plan.release()
    for rank in range(nprocs):
        if rank not in outcomes:
            outcomes[rank] = Outcome(
                rank, False, error="timed out or stopped after another rank failed", exitcode=processes[rank].exitcode
            )
    return [outcomes[rank] for rank in range(nprocs)]


def run_workers(
    target: Callable, nprocs: int, args: Sequence[Any] = (), timeout: float = 60.0, env: Optional[Dict[str, str]] = None
) -> List[Any]:
    """Run ``target(*args)`` on ``nprocs`` processes; return the results in rank order.

    Raises :class:`WorkerFailure` naming the first failing rank (its traceback included).
    """
    outcomes = run_workers_outcomes(target, nprocs, args, timeout, env, stop_on_failure=True)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        real = [o for o in failed if o.error.startswith("Traceback")] or failed
        first = real[0]
        raise WorkerFailure(f"rank {first.rank} of {nprocs} failed (exit code {first.exitcode}):\n{first.error}")
    return [o.value for o in outcomes]
