"""``minidp.batch``: Paddle's reader decorator that groups a sample reader's output into lists."""

from __future__ import annotations

from typing import Callable, Iterator, TypeVar

Sample = TypeVar("Sample")


def batch(
    reader: Callable[[], Iterator[Sample]], batch_size: int, drop_last: bool = False
) -> Callable[[], Iterator[list]]:
    """A reader yielding lists of ``batch_size`` samples from ``reader()`` (the last one shorter
    unless ``drop_last``)."""
    if not callable(reader):
        raise TypeError(f"batch: reader must be a function that returns an iterator of samples, got {reader!r}")
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError(f"batch: batch_size must be a positive int, got {batch_size}")

    def batch_reader() -> Iterator[list]:
        group: list = []
        for sample in reader():
            group.append(sample)
            if len(group) == batch_size:
                yield group
                group = []
        if group and not drop_last:
            yield group

    return batch_reader
