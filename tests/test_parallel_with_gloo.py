"""gloo_init_parallel_env / gloo_barrier / gloo_release: Paddle's documented example (processes
that synchronise through a gloo context, no init_parallel_env), on 2 and 3 ranks."""

import os
import time

import pytest

import minidp.distributed as dist
from dist_utils import run_workers


def gloo_context_worker():
    rank, size = int(os.environ["PADDLE_TRAINER_ID"]), int(os.environ["PADDLE_TRAINERS_NUM"])
    endpoint = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.gloo_init_parallel_env(rank, size, endpoint)
    if rank == size - 1:
        time.sleep(0.5)
    started = time.monotonic()
    dist.gloo_barrier()
    waited = time.monotonic() - started
    again = ""
    try:
        dist.gloo_init_parallel_env(rank, size, endpoint)
    except RuntimeError as error:
        again = str(error)
    dist.gloo_barrier()
    dist.gloo_release()
    dist.gloo_release()
    try:
        dist.gloo_barrier()
    except RuntimeError as error:
        return waited, again, str(error), dist.is_initialized()
    return waited, again, "no error", dist.is_initialized()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("size", [2, 3])
def test_gloo_barrier_waits_for_every_rank(size):
    results = run_workers(gloo_context_worker, size, timeout=60, env={"PADDLE_PG_TIMEOUT": "20000"})
    for rank, (waited, again, after_release, initialized) in enumerate(results):
        assert waited > (0.3 if rank < size - 1 else -1)
        assert "already joined a gloo context; call gloo_release() first" in again
        assert after_release.startswith("gloo_barrier needs the gloo context")
        assert initialized is False


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ((0, 1, "127.0.0.1:1"), "rank_num must be an int of at least 2, got 1"),
        ((2, 2, "127.0.0.1:1"), r"rank_id must be an int in 0..1, got 2"),
        ((0, 2, "localhost"), "server_endpoint 'localhost' is not 'ip:port'"),
    ],
)
def test_bad_arguments_are_named(arguments, problem):
    with pytest.raises(ValueError, match=problem):
        dist.gloo_init_parallel_env(*arguments)
