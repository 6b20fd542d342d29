"""minidp/io/dataloader.py against Paddle 3.3.1: ``loader()`` iterates, and what a ``collate_fn``
returns reaches the loop as Paddle hands it over (tests/fixtures/paddle_protocols.json, recorded by
tools/record_paddle_protocols.py), in the main process and with two worker processes."""

import json
from pathlib import Path

import numpy as np
import pytest

import minidp
from minidp.io.dataloader import arrays_to_tensors
from protocol_cases import COLLATE_CASES, Samples, describe

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_protocols.json").read_text())


def is_tensor(obj):
    return isinstance(obj, minidp.Tensor)


def test_calling_the_loader_iterates_over_it_each_epoch():
    loader = minidp.io.DataLoader(Samples(), batch_size=2)
    for _ in range(2):
        batches = [[x.numpy().tolist(), i.numpy().tolist()] for x, i in loader()]
        assert batches == [[[[0.0, 0.0], [1.0, 1.0]], [0, 1]], [[[2.0, 2.0], [3.0, 3.0]], [2, 3]]]


@pytest.mark.parametrize("workers", [0, 2])
def test_collate_fn_results_reach_the_loop_as_in_paddle(workers):
    for name, collate in COLLATE_CASES.items():
        loader = minidp.io.DataLoader(Samples(), batch_size=2, collate_fn=collate, num_workers=workers)
        batches = [describe(batch, is_tensor) for batch in loader()]
        assert len(batches) == 2, name
        assert batches[0] == FIXTURE["collate"][f"{name}/workers{workers}"], name


def test_unbatched_collate_fn_results_become_tensors_too():
    loader = minidp.io.DataLoader(Samples(), batch_size=None, collate_fn=lambda sample: (sample[0] * 2, sample[1]))
    x, i = next(iter(loader))
    assert isinstance(x, minidp.Tensor) and x.dtype == np.float32 and i == 0
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.0])


def test_arrays_to_tensors_keeps_tensors_and_leaves():
    t = minidp.to_tensor([1.0])
    out = arrays_to_tensors({"t": t, "r": range(2), "s": "ab", "o": {3}})
    assert out["t"] is t and out["r"] == [0, 1] and out["s"] == "ab" and out["o"] == {3}
