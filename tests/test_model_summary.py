"""minidp.hapi.model_summary: ``summary``'s table and totals against Paddle 3.3.1 for three
networks (tests/fixtures/paddle_hapi.json, from tools/record_paddle_hapi.py)."""

import json
import re
from pathlib import Path

import pytest

import minidp
import minidp.nn as nn

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "paddle_hapi.json").read_text())["summary"]


class TwoInputs(nn.Layer):
    def __init__(self):
        super().__init__()
        self.left = nn.Linear(4, 6)
        self.left.weight.stop_gradient = True
        self.right = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
        self.norm = nn.BatchNorm1D(6)
        self.head = nn.Linear(6, 2)

    def forward(self, a, b):
        return self.head(self.norm(self.left(a) + self.right(b)))


CASES = {
    "mlp": (lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), (1, 8)),
    "conv": (
        lambda: nn.Sequential(nn.Conv2D(1, 4, 3), nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(), nn.Linear(36, 10)),
        (2, 1, 8, 8),
    ),
    "two_inputs": (TwoInputs, [(3, 4), (3, 4)]),
}


def _cells(table: str) -> list:
    """The table's lines split into cells, layer numbers dropped (they count every layer the
    process has made, so they differ between the recording and the test)."""
    return [re.split(r"\s{2,}", re.sub(r"-\d+\b", "-#", line).strip()) for line in table.splitlines()]


@pytest.mark.parametrize("name", sorted(CASES))
def test_table_and_totals_match_paddle(name, capsys):
    build, input_size = CASES[name]
    net = build()
    info = minidp.summary(net, input_size)
    assert info == FIXTURE[name]["info"]
    assert _cells(capsys.readouterr().out) == _cells(FIXTURE[name]["table"])
    assert net.training


def test_input_tensors_and_an_unknown_batch_dimension(capsys):
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
    assert minidp.summary(net, input=minidp.ones([5, 8])) == {"total_params": 144, "trainable_params": 144}
    assert "[[5, 8]]" in capsys.readouterr().out
    minidp.summary(net, (None, 8))
    assert "[[1, 8]]" in capsys.readouterr().out


def test_a_layer_without_sublayers_is_its_own_row(capsys):
    assert minidp.summary(nn.Linear(3, 2), 3)["total_params"] == 8
    assert re.search(r"Linear-\d+ +\[\[3\]\] +\[2\]", capsys.readouterr().out)


def test_bad_sizes_are_refused():
    net = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="give input_size"):
        minidp.summary(net)
    with pytest.raises(ValueError, match="only the batch dimension"):
        minidp.summary(net, (None, -1))
    with pytest.raises(ValueError, match="positive ints"):
        minidp.summary(net, (0, 3))
    with pytest.raises(TypeError, match="net must be a minidp.nn.Layer"):
        minidp.summary("net", (1, 3))
    with pytest.raises(ValueError, match="2 input sizes but 3 dtypes"):
        minidp.summary(TwoInputs(), [(3, 4), (3, 4)], dtypes=["float32"] * 3)
