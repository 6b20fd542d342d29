"""The whole-sequence LSTM and GRU ops (minidp.nn.functional.recurrent) and the layers' use of them.

The per-step path is the reference: a subclass of the cell is stepped as written, so the same
layer with ``SteppedLSTMCell`` runs the composition of ops that the fused op replaces.
"""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from gradcheck import check_grad
from minidp.nn.functional.recurrent import RecurrentWeights, gru_sequence, lstm_sequence

rng = np.random.default_rng(3)


class SteppedLSTMCell(nn.LSTMCell):
    """An LSTMCell the loops step one op at a time (they fuse only the plain cells)."""


class SteppedGRUCell(nn.GRUCell):
    """A GRUCell the loops step one op at a time."""


def t(array, grad=False):
    tensor = minidp.to_tensor(np.asarray(array))
    tensor.stop_gradient = not grad
    return tensor


def alive(lengths, steps):
    return (np.arange(steps)[:, None] < np.asarray(lengths)[None, :])[:, :, None]


@pytest.mark.parametrize("lengths", [None, [3, 1, 2]])
def test_lstm_sequence_gradients_match_finite_differences(lengths):
    hidden, steps = 2, 3
    mask = None if lengths is None else alive(lengths, steps)
    arrays = [
        rng.normal(size=(3, steps, 2)),
        rng.normal(size=(3, hidden)),
        rng.normal(size=(3, hidden)),
        rng.normal(size=(4 * hidden, 2)),
        rng.normal(size=(4 * hidden, hidden)),
        rng.normal(size=4 * hidden),
        rng.normal(size=4 * hidden),
    ]
    for output in range(3):
        check_grad(lambda x, h, c, *w: lstm_sequence(x, h, c, RecurrentWeights(*w), mask)[output], *arrays)


@pytest.mark.parametrize("lengths", [None, [2, 3, 1]])
def test_gru_sequence_gradients_match_finite_differences(lengths):
    hidden, steps = 2, 3
    mask = None if lengths is None else alive(lengths, steps)
    arrays = [
        rng.normal(size=(3, steps, 2)),
        rng.normal(size=(3, hidden)),
        rng.normal(size=(3 * hidden, 2)),
        rng.normal(size=(3 * hidden, hidden)),
        rng.normal(size=3 * hidden),
        rng.normal(size=3 * hidden),
    ]
    for output in range(2):
        check_grad(lambda x, h, *w: gru_sequence(x, h, RecurrentWeights(*w), mask)[output], *arrays)


def test_sequence_ops_without_biases():
    x, h, c = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    weights = rng.normal(size=(2, 8, 2))
    check_grad(lambda x, h, c, *w: lstm_sequence(x, h, c, RecurrentWeights(*w, None, None))[0], x, h, c, *weights)
    weights = rng.normal(size=(2, 6, 2))
    check_grad(lambda x, h, *w: gru_sequence(x, h, RecurrentWeights(*w, None, None))[0], x, h, *weights)


def stepped_twin(layer, cell_class):
    """A copy of ``layer`` (same weights) whose cells are of ``cell_class``, so they are stepped."""
    twin = type(layer)(
        layer.input_size,
        layer.hidden_size,
        num_layers=layer.num_layers,
        direction="bidirect" if layer.num_directions == 2 else "forward",
        time_major=layer.time_major,
    )
    twin.set_state_dict(layer.state_dict())
    for sublayer in twin.sublayers():
        if isinstance(sublayer, nn.RNNCellBase):
            sublayer.__class__ = cell_class
    return twin


@pytest.mark.parametrize(
    "kind, stepped, options",
    [
        (nn.LSTM, SteppedLSTMCell, {"num_layers": 2, "direction": "bidirect"}),
        (nn.GRU, SteppedGRUCell, {"num_layers": 2, "direction": "bidirect"}),
        (nn.LSTM, SteppedLSTMCell, {"time_major": True}),
    ],
)
def test_fused_layers_match_the_stepped_cells_in_float32(kind, stepped, options):
    layer = kind(3, 4, **options)
    twin = stepped_twin(layer, stepped)
    batch, steps = 3, 5
    x = rng.normal(size=(steps, batch, 3) if layer.time_major else (batch, steps, 3)).astype("float32")
    lengths = t(np.array([5, 2, 4]))
    states = 2 * layer.num_directions
    h0 = rng.normal(size=(states, batch, 4)).astype("float32")
    results = []
    for net in (layer, twin):
        inputs = t(x, True)
        first = (t(h0, True), t(h0 * 0.5, True)) if kind is nn.LSTM else (t(h0, True),)
        out, final = net(inputs, first if kind is nn.LSTM else first[0], sequence_length=lengths)
        h_n = final[0] if kind is nn.LSTM else final
        ((out * out).sum() + (h_n * 2).sum()).backward()
        grads = [inputs.grad] + [s.grad for s in first] + [p.grad for p in net.parameters()]
        results.append([out.numpy(), h_n.numpy()] + [g.numpy() for g in grads])
    for fused, composed in zip(*results):
        np.testing.assert_allclose(fused, composed, rtol=1e-5, atol=1e-6)


def test_the_plain_cells_run_as_one_graph_node():
    lstm = nn.LSTM(3, 4)
    x = t(rng.normal(size=(2, 6, 3)).astype("float32"), True)
    out, (h, c) = lstm(x)
    node = out._node.node
    assert node.parents[0] is x and len(node.parents) == 7  # x, h0, c0, the weights and biases
    assert h._node.parents[0]._node.node is node  # the final h, stacked over layers
    stepped = stepped_twin(lstm, SteppedLSTMCell)
    assert stepped(x)[0]._node.__class__.__name__ == "Node"  # the stack of the stepped outputs


def test_cells_with_hooks_or_other_dtypes_are_stepped():
    gru = nn.GRU(3, 4)
    calls = []
    gru[0].cell.register_forward_post_hook(lambda layer, inputs, outputs: calls.append(1))
    gru(t(rng.normal(size=(2, 5, 3)).astype("float32")))
    assert len(calls) == 5
    half = nn.LSTM(3, 4).to(dtype="float16")
    out, _ = half(t(rng.normal(size=(2, 3, 3)).astype("float16")))
    assert out.dtype == minidp.float16 and out.shape == [2, 3, 4]


def test_under_auto_cast_the_cells_are_stepped_as_before():
    lstm = nn.LSTM(3, 4)
    twin = stepped_twin(lstm, SteppedLSTMCell)
    x = t(rng.normal(size=(2, 3, 3)).astype("float32"))
    with minidp.amp.auto_cast(dtype="bfloat16"):
        out, _ = lstm(x)
        reference, _ = twin(x)
    assert out.dtype == reference.dtype
    np.testing.assert_array_equal(out.numpy(), reference.numpy())
