"""Containers (``minidp/nn/layers/container.py``): Sequential, LayerList, LayerDict and
ParameterList."""

import numpy as np
import pytest

import minidp
import minidp.nn as nn


def test_sequential_and_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[:2]) == 2
    named = nn.Sequential(("encode", nn.Linear(2, 2)), ("act", nn.Tanh()))
    assert list(named._sub_layers) == ["encode", "act"] and named["act"] is named[1]
    seq[1] = nn.Tanh()
    assert isinstance(list(seq)[1], nn.Tanh) and list(seq._sub_layers) == ["0", "1", "2"]
    del seq[1]
    assert len(seq) == 2
    assert "Sequential(" in repr(seq) and "Linear(in_features=2" in repr(seq)

    blocks = nn.LayerList([nn.Linear(1, 1)])
    blocks.append(nn.Linear(1, 2)).extend([nn.Linear(1, 3)])
    blocks.insert(0, nn.ReLU())
    assert [type(b).__name__ for b in blocks] == ["ReLU", "Linear", "Linear", "Linear"]
    assert list(blocks._sub_layers) == ["0", "1", "2", "3"]
    del blocks[0]
    assert blocks[0].weight.shape == [1, 1] and len(blocks) == 3
    with pytest.raises(IndexError):
        blocks[3]

    params = nn.ParameterList([minidp.Parameter(np.ones(1)), minidp.Parameter(np.ones(2))])
    params.append(minidp.Parameter(np.ones(3)))
    holder = nn.Layer()
    holder.params = params
    assert [p.shape for p in holder.parameters()] == [[1], [2], [3]]
    assert [name for name, _ in holder.named_parameters()] == ["params.0", "params.1", "params.2"]
