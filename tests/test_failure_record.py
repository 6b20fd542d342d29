"""minidp.core.distributed.failure_record: the record a failing rank leaves, and the peer it blames."""

import os
import time

from minidp.core.distributed.failure_record import (
    PeerFailedError,
    blamed_rank,
    read_failure_records,
    write_failure_record,
)


def test_failure_records_name_the_blamed_peer_through_the_exception_chain(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDP_FAILURE_DIR", str(tmp_path))
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    try:
        try:
            raise PeerFailedError("NCCL error: remote process exited or there was a network error", blamed_rank=5)
        except PeerFailedError:
            raise RuntimeError("all_reduce failed")
    except RuntimeError as error:
        path = write_failure_record(error)
    records = read_failure_records(str(tmp_path))
    assert path == str(tmp_path / "rank-3.json") and list(records) == [3]
    record = records[3]
    assert record.blamed_rank == 5 and record.error == "RuntimeError: all_reduce failed"
    assert abs(record.time - time.time()) < 60 and record.pid == os.getpid()
    assert blamed_rank(ValueError("lost the connection to rank 2")) is None
