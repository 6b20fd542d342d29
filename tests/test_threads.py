"""The element-wise thread pool (minidp/core/threads.py): when it splits work, and that splitting
changes no result."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import minidp
import minidp.nn.functional as F
from minidp.core import threads

split = threads.chunks

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
    assert threads.get_num_threads() == 1  # opt-in only: see the module docstring
    configured(5)
    assert threads.get_num_threads() == 5
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="count must be an int >= 1"):
            threads.set_num_threads(bad)


def gelu_cross_entropy_adam_step(shape_x, shape_logits, axis):
    """Outputs and gradients of GELU and cross_entropy, and the parameters after two Adam steps."""
    rng = np.random.default_rng(3)
    minidp.seed(3)
    x = minidp.to_tensor(rng.standard_normal(shape_x).astype(np.float32) * 3, stop_gradient=False)
    logits = minidp.to_tensor(rng.standard_normal(shape_logits).astype(np.float32) * 4, stop_gradient=False)
    label_shape = shape_logits[:axis] + shape_logits[axis + 1 :]
    labels = minidp.to_tensor(rng.integers(0, shape_logits[axis], label_shape))
    y = F.gelu(x)
    loss = F.cross_entropy(logits, labels, axis=axis)
    ((y * y).mean() + loss).backward()
    weights = [minidp.create_parameter(list(shape), "float32") for shape in ((257, 257), ())]
    optimizer = minidp.optimizer.AdamW(learning_rate=0.1, parameters=weights, weight_decay=0.1)
    for _ in range(2):
        (weights[0] * weights[0]).sum().backward()
        (weights[1] * weights[1]).backward()
        optimizer.step()
        optimizer.clear_grad()
    return [a.numpy() for a in (y, x.grad, loss, logits.grad, *weights)]


@pytest.mark.parametrize("shape_logits, axis", [((67, 1001), 1), ((3, 7, 3203), 1), ((66001, 2), 0)])
def test_the_split_ops_give_the_unsplit_results(configured, monkeypatch, shape_logits, axis):
    configured(1)
    expected = gelu_cross_entropy_adam_step((5, 13109), shape_logits, axis)
    configured(3)
    splits = []
    monkeypatch.setattr(threads, "chunks", lambda count, parts: splits.append(count) or split(count, parts))
    results = gelu_cross_entropy_adam_step((5, 13109), shape_logits, axis)
    # gelu forward and backward (erf runs inline within), Adam on the large parameter at both
    # steps, cross_entropy forward and backward unless its axis is 0
    assert len(splits) == (4 if axis == 0 else 6)
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_pool(configured):
    configured(2)
    x = np.arange(LARGE, dtype=np.float64)
    out = np.empty_like(x)

    def double(start, stop):
        np.multiply(x[start:stop], 2, out=out[start:stop])

    threads.for_each_chunk(x, LARGE, double)  # the parent's pool now has an idle thread
    child = os.fork()
    if child == 0:  # the inherited pool has no threads: using it would wait forever
        out[:] = 0
        threads.for_each_chunk(x, LARGE, double)
        os._exit(0 if np.array_equal(out, 2 * x) else 1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    pytest.fail("the forked child hung on the pool it inherited")
