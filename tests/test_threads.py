"""The element-wise thread pool (minidp/core/threads.py): when it splits work, and that splitting
changes no result."""

import threading

import numpy as np
import pytest

from minidp.core import threads

LARGE = threads.MIN_ELEMENTS + 3  # odd, so the ranges differ in length


@pytest.fixture
def configured(monkeypatch):
    """set_num_threads for one test; the setting is restored afterwards."""
    monkeypatch.setattr(threads, "_configured", None)
    return threads.set_num_threads


def record(array, count):
    """The ranges for_each_chunk hands out and the threads that ran them."""
    calls = []
    threads.for_each_chunk(array, count, lambda a, b: calls.append((a, b, threading.get_ident())))
    return sorted(calls)


@pytest.mark.parametrize("count, parts", [(1, 4), (7, 2), (7, 3), (10, 10), (65539, 2), (5, 1)])
def test_chunks_cover_the_range_in_order(count, parts):
    ranges = threads.chunks(count, parts)
    assert len(ranges) == min(count, parts)
    assert ranges[0][0] == 0 and ranges[-1][1] == count
    assert all(a < b for a, b in ranges) and all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    lengths = [b - a for a, b in ranges]
    assert max(lengths) - min(lengths) <= 1


def test_large_arrays_are_split_over_the_threads(configured):
    configured(3)
    calls = record(np.zeros(LARGE), LARGE)
    assert [(a, b) for a, b, _ in calls] == threads.chunks(LARGE, 3)
    assert calls[0][2] == threading.get_ident()  # the caller runs the first range itself
    assert all(ident != threading.get_ident() for *_, ident in calls[1:])  # the pool the others


def test_no_split_with_one_thread_small_arrays_or_other_libraries(configured):
    configured(1)
    assert [(a, b) for a, b, _ in record(np.zeros(LARGE), LARGE)] == [(0, LARGE)]
    configured(2)
    small = threads.MIN_ELEMENTS - 1
    assert [(a, b) for a, b, _ in record(np.zeros(small), small)] == [(0, small)]
    not_numpy = [0.0] * LARGE  # what a CuPy array would be: not a numpy.ndarray
    assert [(a, b) for a, b, _ in record(not_numpy, LARGE)] == [(0, LARGE)]


def test_chunked_results_equal_unchunked(configured):
    x = np.random.default_rng(0).standard_normal((LARGE // 8 + 1, 8)).astype(np.float32)
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    configured(2)
    out = np.empty_like(x)

    def softmax_rows(start, stop):
        e = np.exp(x[start:stop] - x[start:stop].max(axis=1, keepdims=True))
        out[start:stop] = e / e.sum(axis=1, keepdims=True)

    threads.for_each_chunk(x, x.shape[0], softmax_rows)
    np.testing.assert_array_equal(out, expected)


def test_nested_calls_run_inline_and_errors_reach_the_caller(configured):
    configured(2)
    x = np.zeros(LARGE)
    inner = []

    def outer(start, stop):
        inner.extend((a, b) for a, b, _ in record(x, stop - start))

    threads.for_each_chunk(x, LARGE, outer)
    assert sorted(inner) == [(0, n) for n in sorted(b - a for a, b in threads.chunks(LARGE, 2))]

    def fail_in_second_range(start, stop):
        if start:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        threads.for_each_chunk(x, LARGE, fail_in_second_range)


def test_thread_count_setting(configured, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.get_num_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    assert threads.get_num_threads() >= 1
    configured(5)
    assert threads.get_num_threads() == 5
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="count must be an int >= 1"):
            threads.set_num_threads(bad)
