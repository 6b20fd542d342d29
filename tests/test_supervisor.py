"""minidp.core.distributed.supervisor: blaming by failure records, then by time; stopping ranks that
ignore SIGTERM. Ranks are stand-ins without processes."""

import json
import signal

from minidp.core.distributed import supervisor as supervisor_module
from minidp.core.distributed.supervisor import RankHandle, Supervisor


class FakeRank(RankHandle):
    """A rank without a process: the test sets its exit and whether it obeys signals."""

    def __init__(self, rank, obeys=(signal.SIGTERM, signal.SIGKILL)):
        super().__init__(rank, pid=1000 + rank)
        self.code = None
        self.obeys = obeys
        self.received = []

    @property
    def returncode(self):
        return self.code

    def watch(self, events):
        self.events = events

    def _deliver(self, signum):
        self.received.append(signum)
        if signum in self.obeys:
            self.code = -signum

    def wait(self, timeout):
        return self.code is not None

    def exit(self, code):
        self.code = code
        self.events.put(("exit", self.rank))


def supervised(tmp_path, count, **kwargs):
    supervisor = Supervisor(str(tmp_path))
    ranks = [FakeRank(rank, **kwargs) for rank in range(count)]
    for rank in ranks:
        supervisor.add(rank)
    supervisor.watch()
    return supervisor, ranks


def record(tmp_path, rank, when, blamed=None):
    (tmp_path / f"rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "pid": 1000 + rank, "time": when, "error": "E: x", "blamed_rank": blamed})
    )


def test_supervisor_blames_by_records_then_by_time(tmp_path):
    supervisor, ranks = supervised(tmp_path, 4)
    record(tmp_path, 0, 10.0, blamed=2)  # earliest, but blames rank 2, which failed too
    record(tmp_path, 2, 11.0)
    ranks[0].exit(1)
    ranks[2].exit(1)
    ranks[3].exit(-signal.SIGKILL)  # no record: ordered by when its exit was seen (now)
    event = supervisor.wait(5)
    assert event.kind == "failed"
    assert [event.value.culprit.rank] + [r.rank for r in event.value.others] == [2, 3, 0]
    assert event.value.describe() == "rank 2 (pid 1002) exited with code 1"
    supervisor.stop()
    assert ranks[1].received == [signal.SIGTERM]


def test_supervisor_kills_a_rank_that_ignores_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(supervisor_module, "STOP_GRACE_SECONDS", 0.1)
    supervisor, ranks = supervised(tmp_path, 2, obeys=(signal.SIGKILL,))
    supervisor.stop()
    assert [rank.received for rank in ranks] == [[signal.SIGTERM, signal.SIGKILL]] * 2
    assert supervisor.wait(0.1).kind == "finished"


def test_only_a_record_blaming_a_failed_rank_says_a_rank_lost_its_connection(tmp_path):
    supervisor, ranks = supervised(tmp_path, 4)
    record(tmp_path, 0, 10.0)
    record(tmp_path, 1, 11.0)  # its own error, blaming nobody
    record(tmp_path, 2, 12.0, blamed=0)
    ranks[0].exit(1)
    ranks[1].exit(1)
    ranks[2].exit(1)
    ranks[3].exit(3)  # no record
    failure = supervisor.wait(5).value
    assert failure.culprit.rank == 0
    assert failure.others_described() == [
        "rank 1 (pid 1001) failed with its own error: E: x",
        "rank 3 (pid 1003) exited with code 3 without reporting an error",
        "rank 2 failed after it lost its connection to rank 0 (its failure record: E: x)",
    ]
