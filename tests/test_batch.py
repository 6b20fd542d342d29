"""minidp/batch.py: Paddle's ``batch`` groups a reader's items."""

import pytest

import minidp


def test_batch_groups_a_reader():
    def reader():
        yield from range(5)

    assert list(minidp.batch(reader, 2)()) == [[0, 1], [2, 3], [4]]
    assert list(minidp.batch(reader, 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="positive int"):
        minidp.batch(reader, 0)
    with pytest.raises(TypeError, match="reader must be a function"):
        minidp.batch([1, 2], 1)
