"""The process-group base (``minidp/core/distributed/backends/base.py``): AVG, exact division for
floating types (bfloat16 too), truncation toward zero for integers; and the warning of a rank
left waiting for a peer that stopped calling collectives, which names the peer before the rank
fails at the group timeout.

Paddle's AVG is NCCL's ``ncclAvg``, which for integer types sums and then divides with C
semantics (the quotient is truncated toward zero: -7 / 2 == -3, where floor division gives -4).
The CPU backends finish AVG with ``backends/base.py: divide_by_size``; nccl uses ``ncclAvg``.
"""

import ml_dtypes
import numpy as np
import pytest

import join_tasks
from dist_utils import run_workers
from minidp.core.distributed.backends.base import ThreadedProcessGroup, divide_by_size, stall_warning_seconds


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_average_truncates_toward_zero_like_paddle(dtype):
    sums = np.array([-7, 7, -1, 1, -6, 0, np.iinfo(dtype).min + 1], dtype)
    divide_by_size(sums, 2)
    assert sums.tolist() == [-3, 3, 0, 0, -3, 0, (np.iinfo(dtype).min + 1) // 2 + 1]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", ml_dtypes.bfloat16])
def test_floating_average_divides_exactly(dtype):
    sums = np.array([3.5, -7.0, 5.0, -1.0], dtype)
    divide_by_size(sums, 2)
    assert sums.dtype == np.dtype(dtype)
    assert sums.astype(np.float64).tolist() == [1.75, -3.5, 2.5, -0.5]


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_without_join_the_waiting_rank_warns_naming_the_peer_then_times_out(transport):
    env = {
        "PADDLE_DISTRI_BACKEND": "gloo",
        "PADDLE_PG_TIMEOUT": "4000",
        "MINIDP_STALL_WARNING_SECONDS": "1",
        "MINIDP_TRANSPORT": transport,
    }
    results = run_workers(join_tasks.stalled_worker, 2, env=env)
    waiting = results[0]
    stalls = [w for w in waiting["warnings"] if "has waited" in w]
    assert len(stalls) == 1, waiting["warnings"]
    assert "rank 1" in stalls[0] and "stopped calling collectives" in stalls[0]
    assert "timed out waiting for rank 1" in waiting["error"]
    assert 3.5 < waiting["seconds"] < 8
    assert results[1]["warnings"] == []


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_stall_warning_interval_must_be_a_positive_number(monkeypatch, value):
    monkeypatch.setenv("MINIDP_STALL_WARNING_SECONDS", value)
    with pytest.raises(ValueError, match="MINIDP_STALL_WARNING_SECONDS"):
        stall_warning_seconds()


def test_stall_warning_interval_default_and_override(monkeypatch):
    monkeypatch.delenv("MINIDP_STALL_WARNING_SECONDS", raising=False)
    assert stall_warning_seconds() == 60.0
    monkeypatch.setenv("MINIDP_STALL_WARNING_SECONDS", "2.5")
    assert stall_warning_seconds() == 2.5


class _OverwritingGroup(ThreadedProcessGroup):
    """Rank 0 of 2 whose all-gather clears its output before it writes the rows, as a backend
    that does not gather in place may."""

    backend_name = "overwriting"

    def __init__(self, in_place):
        super().__init__(0, 2, name="overwriting", timeout=10.0)
        self.gathers_in_place = in_place

    def _all_gather(self, out_array, array):
        out_array[...] = -1
        out_array[0] = array
        out_array[1] = 5

    def _exchange_fingerprints(self, call, mine):
        return []

    def _close(self):
        pass

    _all_reduce = _broadcast = _reduce_scatter = _barrier = _send = _recv = None  # not used


def test_all_gather_copies_an_input_inside_the_output_unless_the_backend_gathers_in_place():
    # gathering in place, the backend gets the row itself (here it clobbers it: -1)
    for in_place, want_row in ((False, [3, 3]), (True, [-1, -1])):
        group = _OverwritingGroup(in_place)
        out = np.full((2, 2), 3.0)
        group.all_gather(out, out[0])
        assert out.tolist() == [want_row, [5, 5]], in_place
        group.shutdown()
