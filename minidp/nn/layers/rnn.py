"""Recurrent layers with Paddle's structure: cells, the RNN/BiRNN loops, SimpleRNN, LSTM and GRU.

A cell's step is made of ordinary differentiable ops (matmul, split, sigmoid, tanh, where), so
backpropagation through time needs nothing from the engine beyond what any model uses. The
loops run a plain LSTMCell or GRUCell through one whole-sequence op instead
(:mod:`minidp.nn.functional.recurrent`: one graph node per layer and direction, the same
math), and fall back to stepping the cell where that op does not apply. Gate
order and parameter names follow Paddle: LSTM gates are (input, forget, cell, output), GRU gates
(reset, update, candidate); a multi-layer network exposes ``weight_ih_l0``, ``bias_hh_l1_reverse``
and so on, and the same parameters also under each cell (``0.cell.weight_ih``).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ...core import backend
from ... import ops
from ...core.tensor import Tensor
from ...core.op_util import wrap
from .. import functional as F
from .. import initializer as init
from ..functional.fusion import can_fuse
from ..functional.recurrent import RecurrentWeights, gru_sequence, lstm_sequence
from ...core.layer import Layer
from .container import LayerList

__all__ = [
    "BiRNN",
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "RNNCellBase",
    "SimpleRNN",
    "SimpleRNNCell",
]

_DIRECTIONS = {"forward": 1, "bidirect": 2, "bidirectional": 2}


class RNNCellBase(Layer):
    """Base of the cells: holds weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden] and their biases,
    all uniform in [-1/sqrt(hidden), 1/sqrt(hidden)] as in Paddle."""

    _gates = 1

    def _create(
        self,
        input_size: int,
        hidden_size: int,
        weight_ih_attr: Any,
        weight_hh_attr: Any,
        bias_ih_attr: Any,
        bias_hh_attr: Any,
    ) -> None:
        if input_size <= 0 or hidden_size <= 0:
            raise ValueError(
                f"{type(self).__name__}: input_size and hidden_size must be positive, got "
                f"{input_size} and {hidden_size}"
            )
        self.input_size, self.hidden_size = input_size, hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        uniform = init.Uniform(-bound, bound)
        rows = self._gates * hidden_size
        self.weight_ih = self.create_parameter([rows, input_size], weight_ih_attr, default_initializer=uniform)
        self.weight_hh = self.create_parameter([rows, hidden_size], weight_hh_attr, default_initializer=uniform)
        self.bias_ih = self.create_parameter([rows], bias_ih_attr, is_bias=True, default_initializer=uniform)
        self.bias_hh = self.create_parameter([rows], bias_hh_attr, is_bias=True, default_initializer=uniform)

    def _project(self, x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        out = ops.matmul(x, weight, transpose_y=True)
        return out if bias is None else out + bias

    def get_initial_states(
        self, batch_ref: Tensor, shape: Any = None, dtype: Any = None, init_value: float = 0.0, batch_dim_idx: int = 0
    ) -> Any:
        """States filled with ``init_value`` for the batch of ``batch_ref`` (its axis ``batch_dim_idx``):
        one tensor per shape in ``shape`` (default :attr:`state_shape`), in ``dtype`` (default
        ``batch_ref``'s)."""
        shape = self.state_shape if shape is None else shape
        xp = backend.get_array_module(batch_ref._data)
        dtype = batch_ref._data.dtype if dtype is None else backend.convert_dtype(dtype)
        batch = batch_ref.shape[batch_dim_idx]

        def make(state: Any) -> Tensor:
            return wrap(xp.full((batch,) + tuple(state), init_value, dtype=dtype))

        return tuple(make(s) for s in shape) if isinstance(shape[0], (tuple, list)) else make(shape)

    @property
    def state_shape(self) -> Any:
        """The shape of one sample's state (a tuple of shapes for cells with several states)."""
        return (self.hidden_size,)

    @property
    def state_dtype(self) -> Any:
        """The dtype of the states: that of the weights."""
        return self.weight_ih.dtype

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(RNNCellBase):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act 'tanh' or 'relu'."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        activation: str = "tanh",
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got {activation!r}")
        self.activation = activation
        self._create(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)

    def forward(self, inputs: Tensor, states: Optional[Tensor] = None) -> tuple:
        h = self.get_initial_states(inputs) if states is None else states
        pre = self._project(inputs, self.weight_ih, self.bias_ih) + self._project(h, self.weight_hh, self.bias_hh)
        h = ops.tanh(pre) if self.activation == "tanh" else ops.relu(pre)
        return h, h


class LSTMCell(RNNCellBase):
    """Long short-term memory; states are (h, c); gates in Paddle's order (i, f, g, o)."""

    _gates = 4

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        proj_size: int = 0,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        if proj_size:
            raise ValueError("LSTMCell: proj_size is not supported; use proj_size=0")
        self._create(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)

    @property
    def state_shape(self) -> Any:
        return (self.hidden_size,), (self.hidden_size,)

    def forward(self, inputs: Tensor, states: Optional[Sequence[Tensor]] = None) -> tuple:
        h, c = self.get_initial_states(inputs) if states is None else states
        gates = self._project(inputs, self.weight_ih, self.bias_ih) + self._project(h, self.weight_hh, self.bias_hh)
        i, f, g, o = ops.split(gates, 4, axis=-1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        return h, (h, c)


class GRUCell(RNNCellBase):
    """Gated recurrent unit in Paddle's form: h' = (h - c) * z + c, the reset gate applied to
    the projected state."""

    _gates = 3

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__()
        self._create(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)

    def forward(self, inputs: Tensor, states: Optional[Tensor] = None) -> tuple:
        h = self.get_initial_states(inputs) if states is None else states
        x_r, x_z, x_c = ops.split(self._project(inputs, self.weight_ih, self.bias_ih), 3, axis=-1)
        h_r, h_z, h_c = ops.split(self._project(h, self.weight_hh, self.bias_hh), 3, axis=-1)
        r, z = ops.sigmoid(x_r + h_r), ops.sigmoid(x_z + h_z)
        c = ops.tanh(x_c + r * h_c)
        h = (h - c) * z + c
        return h, h


def _map_states(fn: Any, states: Any) -> Any:
    return tuple(fn(s) for s in states) if isinstance(states, (tuple, list)) else fn(states)


def _reverse_within_lengths(x: Tensor, lengths: Optional[Any]) -> Tensor:
    """``x`` [batch, time, ...] with each sequence's first ``length`` steps reversed (padding stays)."""
    xp = backend.get_array_module(x._data)
    steps = x.shape[1]
    if lengths is None:
        return x[:, ::-1]
    t = xp.arange(steps)[None, :]
    n = lengths[:, None]
    index = xp.where(t < n, n - 1 - t, t)
    return x[xp.arange(x.shape[0])[:, None], index]


def _run_fused(cell: Layer, x: Tensor, states: Any, lengths: Optional[Any]) -> Optional[tuple]:
    """(outputs, final states) of a plain LSTMCell or GRUCell over the batch-major ``x`` from
    ``states``, by the whole-sequence op; None where the cell must be stepped instead: a
    subclass or a cell with forward hooks (whose forward must run), states not shaped
    [batch, hidden], dtypes the op does not take (see :func:`can_fuse`)."""
    kind = type(cell)
    if kind not in (LSTMCell, GRUCell) or cell._forward_pre_hooks or cell._forward_post_hooks:
        return None
    parts = tuple(states) if kind is LSTMCell and isinstance(states, (tuple, list)) else (states,)
    if len(parts) != (2 if kind is LSTMCell else 1) or not all(isinstance(s, Tensor) for s in parts):
        return None
    xd = x._data
    if xd.ndim != 3 or any(tuple(s._data.shape) != (xd.shape[0], cell.hidden_size) for s in parts):
        return None
    weights = [w for w in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh) if w is not None]
    if not can_fuse(xd, *(s._data for s in parts), *(w._data for w in weights)):
        return None
    alive = None
    if lengths is not None:
        xp = backend.get_array_module(xd)
        alive = (xp.arange(xd.shape[1])[:, None] < lengths[None, :])[:, :, None]
    params = RecurrentWeights(cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    if kind is LSTMCell:
        out, h, c = lstm_sequence(x, *parts, params, alive)
        return out, (h, c)
    out, h = gru_sequence(x, *parts, params, alive)
    return out, h


def _step(cell: Layer, x: Tensor, states: Any, lengths: Optional[Any], **kwargs: Any) -> tuple:
    """Call ``cell`` on each step of the batch-major ``x``; returns the stacked outputs and the
    final states."""
    zero = wrap(backend.get_array_module(x._data).zeros((), dtype=x._data.dtype))
    outputs = []
    for step in range(x.shape[1]):
        out, new_states = cell(x[:, step], states, **kwargs)
        if lengths is not None:
            alive = wrap((step < lengths)[:, None])
            out = ops.where(alive, out, zero)
            new_states = (
                tuple(ops.where(alive, n, s) for n, s in zip(new_states, states))
                if isinstance(new_states, tuple)
                else ops.where(alive, new_states, states)
            )
        outputs.append(out)
        states = new_states
    return ops.stack(outputs, axis=1), states


def _run(
    cell: Layer,
    inputs: Tensor,
    initial_states: Any,
    sequence_length: Optional[Tensor],
    is_reverse: bool,
    time_major: bool,
    **kwargs: Any,
) -> tuple:
    """Run ``cell`` along the time axis; returns the stacked outputs and the final states."""
    x = ops.transpose(inputs, [1, 0] + list(range(2, inputs.ndim))) if time_major else inputs
    lengths = None if sequence_length is None else sequence_length._data.astype("int64")
    if is_reverse:
        x = _reverse_within_lengths(x, lengths)
    states = cell.get_initial_states(x[:, 0]) if initial_states is None else initial_states
    fused = None if kwargs else _run_fused(cell, x, states, lengths)
    out, states = _step(cell, x, states, lengths, **kwargs) if fused is None else fused
    if is_reverse:
        out = _reverse_within_lengths(out, lengths)
    return (ops.transpose(out, [1, 0, 2]) if time_major else out), states


class RNN(Layer):
    """Runs ``cell`` over the time axis; returns (outputs, final states).

    ``sequence_length`` [batch] stops each sequence early: its later outputs are zero and its
    final state is the one at its last step. ``is_reverse`` runs from the end of each sequence.
    """

    def __init__(self, cell: Layer, is_reverse: bool = False, time_major: bool = False) -> None:
        super().__init__()
        self.cell, self.is_reverse, self.time_major = cell, is_reverse, time_major

    def forward(
        self, inputs: Tensor, initial_states: Any = None, sequence_length: Optional[Tensor] = None, **kwargs: Any
    ) -> tuple:
        return _run(self.cell, inputs, initial_states, sequence_length, self.is_reverse, self.time_major, **kwargs)


class BiRNN(Layer):
    """A forward and a backward pass of two cells over the same input; outputs are concatenated
    and the final states come back as (forward states, backward states)."""

    def __init__(self, cell_fw: Layer, cell_bw: Layer, time_major: bool = False) -> None:
        super().__init__()
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, time_major

    def forward(
        self, inputs: Tensor, initial_states: Any = None, sequence_length: Optional[Tensor] = None, **kwargs: Any
    ) -> tuple:
        fw_states, bw_states = (None, None) if initial_states is None else initial_states
        out_fw, state_fw = _run(self.cell_fw, inputs, fw_states, sequence_length, False, self.time_major, **kwargs)
        out_bw, state_bw = _run(self.cell_bw, inputs, bw_states, sequence_length, True, self.time_major, **kwargs)
        return ops.concat([out_fw, out_bw], axis=-1), (state_fw, state_bw)


class _RNNBase(LayerList):
    """A stack of ``num_layers`` (Bi)RNNs; returns (outputs, final states) where each final
    state is [num_layers * num_directions, batch, hidden]."""

    _cell = RNNCellBase

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        direction: str,
        time_major: bool,
        dropout: float,
        weight_ih_attr: Any,
        weight_hh_attr: Any,
        bias_ih_attr: Any,
        bias_hh_attr: Any,
        **cell_options: Any,
    ) -> None:
        super().__init__()
        if direction not in _DIRECTIONS:
            raise ValueError(
                f"{type(self).__name__}: direction must be 'forward', 'bidirect' or 'bidirectional', got {direction!r}"
            )
        if num_layers < 1 or not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be >= 1 and dropout in [0, 1)")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.num_directions = _DIRECTIONS[direction]
        self.time_major, self.dropout = time_major, dropout
        attrs = dict(
            weight_ih_attr=weight_ih_attr,
            weight_hh_attr=weight_hh_attr,
            bias_ih_attr=bias_ih_attr,
            bias_hh_attr=bias_hh_attr,
        )
        flat = []
        for layer in range(num_layers):
            size = input_size if layer == 0 else hidden_size * self.num_directions
            cells = [self._cell(size, hidden_size, **attrs, **cell_options) for _ in range(self.num_directions)]
            if self.num_directions == 1:
                self.append(RNN(cells[0], False, time_major))
            else:
                self.append(BiRNN(cells[0], cells[1], time_major))
            for cell, suffix in zip(cells, ("", "_reverse")):
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    flat.append((f"{kind}_l{layer}{suffix}", getattr(cell, kind)))
        for name, param in flat:
            if param is not None:
                self.add_parameter(name, param)

    def _split_states(self, initial_states: Any) -> list:
        """Per layer, the initial states each (Bi)RNN expects (None for zeros)."""
        if initial_states is None:
            return [None] * self.num_layers

        def layer_slice(layer: int) -> Any:
            def pick(s: Tensor) -> Any:
                rows = [s[layer * self.num_directions + d] for d in range(self.num_directions)]
                return rows[0] if self.num_directions == 1 else rows

            picked = _map_states(pick, initial_states)
            if self.num_directions == 1:
                return picked
            if isinstance(picked, tuple):
                return tuple(tuple(p[d] for p in picked) for d in range(2))
            return tuple(picked)

        return [layer_slice(layer) for layer in range(self.num_layers)]

    def forward(self, inputs: Tensor, initial_states: Any = None, sequence_length: Optional[Tensor] = None) -> tuple:
        finals = []
        out = inputs
        for index, (rnn, states) in enumerate(zip(self, self._split_states(initial_states))):
            if index > 0 and self.dropout:
                out = F.dropout(out, self.dropout, training=self.training)
            out, final = rnn(out, states, sequence_length)
            finals.extend(final if self.num_directions == 2 else [final])
        if isinstance(finals[0], tuple):
            stacked = tuple(ops.stack([f[k] for f in finals], axis=0) for k in range(len(finals[0])))
        else:
            stacked = ops.stack(finals, axis=0)
        return out, stacked

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
            f"direction={'bidirect' if self.num_directions == 2 else 'forward'}"
        )


class SimpleRNN(_RNNBase):
    """Elman RNN (tanh or relu) over [batch, time, input] inputs (``time_major`` for [time, batch, ...])."""

    _cell = SimpleRNNCell

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        direction: str = "forward",
        time_major: bool = False,
        dropout: float = 0.0,
        activation: str = "tanh",
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            direction,
            time_major,
            dropout,
            weight_ih_attr,
            weight_hh_attr,
            bias_ih_attr,
            bias_hh_attr,
            activation=activation,
        )


class LSTM(_RNNBase):
    """LSTM over [batch, time, input] inputs; final states are (h, c)."""

    _cell = LSTMCell

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        direction: str = "forward",
        time_major: bool = False,
        dropout: float = 0.0,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        proj_size: int = 0,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            direction,
            time_major,
            dropout,
            weight_ih_attr,
            weight_hh_attr,
            bias_ih_attr,
            bias_hh_attr,
            proj_size=proj_size,
        )


class GRU(_RNNBase):
    """GRU over [batch, time, input] inputs."""

    _cell = GRUCell

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        direction: str = "forward",
        time_major: bool = False,
        dropout: float = 0.0,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            direction,
            time_major,
            dropout,
            weight_ih_attr,
            weight_hh_attr,
            bias_ih_attr,
            bias_hh_attr,
        )
