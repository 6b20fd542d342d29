"""SimpleRNN, LSTM, GRU, their cells and the RNN/BiRNN loops.

Literal values were recorded by hand from PaddlePaddle 3.3.1 (CPU, float32) with the weights
that ``fill`` sets.
"""

import numpy as np
import pytest

import minidp
import minidp.nn as nn
from gradcheck import check_grad, fill_weights, t

rng = np.random.default_rng(0)
X = np.cos(np.arange(30.0) * 0.4).reshape(2, 5, 3).astype("float32")
PADDLE = {
    "LSTM": (
        [
            [-0.215504, 0.02827, -0.050838, -0.610242],
            [-0.001585, 0.112763, -0.190726, -0.299486],
            [0.104481, 0.201381, -0.204374, 0.05829],
            [0, 0, 0, 0],
            [0, 0, 0, 0],
        ],
        [[[0.097085, 0.144968], [0.104481, 0.201381]], [[-0.106929, -0.586643], [-0.050838, -0.610242]]],
    ),
    "GRU": (
        [[-0.321446, -0.32834], [-0.485146, -0.484857], [-0.612162, -0.57525], [0, 0], [0, 0]],
        [[[0.208773, 0.438348], [0.56444, 0.180872]], [[-0.717583, -0.624439], [-0.612162, -0.57525]]],
    ),
    "SimpleRNN": (
        [[0.0, 1.262176], [0.0, 1.094979], [0.865968, 0.485322], [0, 0], [0, 0]],
        [[[0.0, 1.434716], [0.865968, 0.485322]]],
    ),
}
OPTIONS = {"LSTM": {"direction": "bidirect"}, "GRU": {"num_layers": 2}, "SimpleRNN": {"activation": "relu"}}


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def np_gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    x_r, x_z, x_c = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    h_r, h_z, h_c = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
    c = np.tanh(x_c + r * h_c)
    return (h - c) * z + c


@pytest.mark.parametrize("kind", sorted(PADDLE))
def test_rnn_layers_match_paddle_with_sequence_lengths(kind):
    layer = fill_weights(getattr(nn, kind)(3, 2, **OPTIONS[kind]))
    out, state = layer(t(X), sequence_length=t([5, 3]))
    expected_out, expected_h = PADDLE[kind]
    np.testing.assert_allclose(out.numpy()[1], expected_out, atol=2e-6)
    h = state[0] if kind == "LSTM" else state
    np.testing.assert_allclose(h.numpy(), expected_h, atol=2e-6)


def test_parameter_names_and_state_dict_follow_paddle():
    lstm = nn.LSTM(3, 4, num_layers=2, direction="bidirect")
    names = [name for name, _ in lstm.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse"]
    assert len(names) == 16 and lstm.weight_ih_l1.shape == [16, 8] and lstm.weight_hh_l0.shape == [16, 4]
    keys = list(lstm.state_dict())
    assert "0.cell_fw.weight_ih" in keys and "1.cell_bw.bias_hh" in keys and len(keys) == 32
    assert lstm.state_dict()["0.cell_fw.weight_ih"] is lstm.weight_ih_l0
    gru = nn.GRU(3, 4)
    assert list(gru.state_dict())[4:] == ["0.cell.weight_ih", "0.cell.weight_hh", "0.cell.bias_ih", "0.cell.bias_hh"]
    assert gru.weight_ih_l0.shape == [12, 3]
    bound = 1 / np.sqrt(4)
    assert all(np.abs(p.numpy()).max() <= bound for p in gru.parameters())


def test_lstm_cell_and_gru_cell_match_numpy():
    x, h, c = rng.normal(size=(3, 3)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    cell = nn.LSTMCell(3, 4).to(dtype="float64")
    w = [p.numpy() for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
    out, (h1, c1) = cell(t(x), (t(h), t(c)))
    eh, ec = np_lstm_step(x, h, c, *w)
    np.testing.assert_allclose(h1.numpy(), eh, rtol=1e-12)
    np.testing.assert_allclose(c1.numpy(), ec, rtol=1e-12)
    assert out is h1
    gru = nn.GRUCell(3, 4).to(dtype="float64")
    w = [p.numpy() for p in (gru.weight_ih, gru.weight_hh, gru.bias_ih, gru.bias_hh)]
    np.testing.assert_allclose(gru(t(x), t(h))[0].numpy(), np_gru_step(x, h, *w), rtol=1e-12)
    simple = nn.SimpleRNNCell(3, 4).to(dtype="float64")
    expected = np.tanh(x @ simple.weight_ih.numpy().T + simple.bias_ih.numpy() + simple.bias_hh.numpy())
    np.testing.assert_allclose(simple(t(x))[0].numpy(), expected, rtol=1e-12)  # zero initial state
    check_grad(lambda a, b, d: cell(a, (b, d))[1][1], x, h, c)
    check_grad(lambda a, b: gru(a, b)[0], x, h)


def test_unrolled_lstm_matches_numpy_and_gradients():
    layer = nn.LSTM(3, 4).to(dtype="float64")
    x = rng.normal(size=(2, 4, 3))
    w = [p.numpy() for p in layer.parameters()]
    h = c = np.zeros((2, 4))
    outputs = []
    for step in range(4):
        h, c = np_lstm_step(x[:, step], h, c, *w)
        outputs.append(h)
    out, (h_n, c_n) = layer(t(x))
    np.testing.assert_allclose(out.numpy(), np.stack(outputs, 1), rtol=1e-12)
    np.testing.assert_allclose(h_n.numpy(), h[None], rtol=1e-12)
    np.testing.assert_allclose(c_n.numpy(), c[None], rtol=1e-12)
    check_grad(lambda a: layer(a)[0], x)
    check_grad(lambda a, h0, c0: layer(a, (h0, c0))[1][1], x, rng.normal(size=(1, 2, 4)), rng.normal(size=(1, 2, 4)))


def test_bidirectional_gru_time_major_and_reverse_rnn():
    gru = nn.GRU(3, 4, direction="bidirectional", time_major=True).to(dtype="float64")
    x = rng.normal(size=(5, 2, 3))
    out, h = gru(t(x))
    assert out.shape == [5, 2, 8] and h.shape == [2, 2, 4]
    np.testing.assert_allclose(out.numpy()[-1, :, :4], h.numpy()[0], rtol=1e-12)
    np.testing.assert_allclose(out.numpy()[0, :, 4:], h.numpy()[1], rtol=1e-12)
    check_grad(lambda a: gru(a)[0], x[:3])
    cell = nn.SimpleRNNCell(3, 4)
    forward_out, _ = nn.RNN(cell)(t(X[:, ::-1].copy()))
    reverse_out, _ = nn.RNN(cell, is_reverse=True)(t(X))
    np.testing.assert_allclose(reverse_out.numpy(), forward_out.numpy()[:, ::-1], rtol=1e-6)
    both, (fw, bw) = nn.BiRNN(nn.GRUCell(3, 2), nn.GRUCell(3, 2))(t(X))
    assert both.shape == [2, 5, 4] and fw.shape == [2, 2] and bw.shape == [2, 2]


def test_multi_layer_dropout_and_errors():
    minidp.seed(0)
    layer = nn.SimpleRNN(3, 4, num_layers=3, dropout=0.5)
    train_out = layer(t(X))[0].numpy()
    layer.eval()
    np.testing.assert_array_equal(layer(t(X))[0].numpy(), layer(t(X))[0].numpy())
    assert not np.allclose(train_out, layer(t(X))[0].numpy())
    with pytest.raises(ValueError, match="direction"):
        nn.LSTM(3, 4, direction="backward")
    with pytest.raises(ValueError, match="activation"):
        nn.SimpleRNN(3, 4, activation="sigmoid")
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)


def test_cell_initial_states_follow_paddle():
    cell = nn.LSTMCell(3, 4)
    assert isinstance(cell, nn.RNNCellBase) and cell.state_shape == ((4,), (4,))
    h, c = cell.get_initial_states(t(np.ones((5, 3), "float32")))
    assert h.shape == [5, 4] and c.shape == [5, 4] and float(h.abs().sum()) == 0
    filled = nn.GRUCell(3, 2).get_initial_states(
        t(np.ones((7, 6, 3))), shape=[2, 2], dtype="float64", init_value=1.5, batch_dim_idx=1
    )
    assert filled.shape == [6, 2, 2] and filled.dtype == minidp.float64 and float(filled.min()) == 1.5
    assert nn.SimpleRNNCell(3, 2).state_dtype == minidp.float32


def test_initial_states_are_split_per_layer_and_direction():
    layer = nn.LSTM(3, 4, num_layers=2, direction="bidirect").to(dtype="float64")
    x, h0, c0 = rng.normal(size=(2, 5, 3)), rng.normal(size=(4, 2, 4)), rng.normal(size=(4, 2, 4))
    out, (h, c) = layer(t(x), (t(h0), t(c0)))
    first, (fw, bw) = layer[0](t(x), ((t(h0[0]), t(c0[0])), (t(h0[1]), t(c0[1]))))
    second, (fw2, bw2) = layer[1](first, ((t(h0[2]), t(c0[2])), (t(h0[3]), t(c0[3]))))
    np.testing.assert_allclose(out.numpy(), second.numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), np.stack([s[0].numpy() for s in (fw, bw, fw2, bw2)]), rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), np.stack([s[1].numpy() for s in (fw, bw, fw2, bw2)]), rtol=1e-12)
    gru = nn.GRU(3, 2, num_layers=2).to(dtype="float64")
    check_grad(lambda a, b: gru(a, b)[1], x[:, :3], rng.normal(size=(2, 2, 2)))
