"""The gloo backend's factory picks its transport: shared memory by default, TCP on request."""

import pytest

from minidp.core.distributed.backends import get_backend_factory
from minidp.core.distributed.backends.base import GroupSpec
from minidp.core.distributed.backends.gloo import transport_choice
from minidp.core.distributed.backends.shm import SharedMemoryGlooGroup
from minidp.core.distributed.backends.tcp import GlooProcessGroup


def test_transport_choice_and_the_factory(monkeypatch):
    spec = GroupSpec(name="solo", global_ranks=(0,), global_rank=0, timeout=5.0)
    factory = get_backend_factory("gloo")
    assert type(factory(spec)) is SharedMemoryGlooGroup
    monkeypatch.setenv("MINIDP_TRANSPORT", "tcp")
    assert transport_choice() == "tcp" and type(factory(spec)) is GlooProcessGroup
    monkeypatch.setenv("MINIDP_TRANSPORT", "carrier-pigeon")
    with pytest.raises(ValueError, match="MINIDP_TRANSPORT='carrier-pigeon'"):
        factory(spec)
